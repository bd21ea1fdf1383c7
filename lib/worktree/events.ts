// What preparing and tearing down a worktree tells the run as it goes: lib/run/events.ts's stream carries
// these among the run's (as it does lib/landing's LandingEvent), so this layer knows nothing of the run.

/** A command flow.yaml runs in a task's worktree (docs/RUN.md, "Preparing worktrees"). */
export type Hook = "setup" | "teardown"

export type WorktreeEvent =
  /** a worktree's setup (before its agent; agent set) or teardown (before its removal) from flow.yaml starts */
  | { type: "hook-start"; taskId: string; agent?: string; hook: Hook; command: string }
  | { type: "hook-output"; taskId: string; agent?: string; hook: Hook; line: string }
  | { type: "hook-end"; taskId: string; agent?: string; hook: Hook; command: string; ok: boolean; code: number; seconds: number; timedOut: boolean }
  /** what was prepared in the task's worktree before its agent starts: files copied (and refused, with why), its ports */
  | { type: "prepared"; taskId: string; agent?: string; copied: string[]; refused: string[]; ports: number[] }

export type WorktreeEvents = { emit(event: WorktreeEvent): void }
