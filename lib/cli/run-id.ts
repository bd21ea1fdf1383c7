import * as clock from "./clock"

/** This run's id: every agent and check gets it as FLOW_RUN_ID (lib/run/reaper.ts's module comment). */
export const RUN_ID = `${process.pid}-${clock.systemNow()}`
