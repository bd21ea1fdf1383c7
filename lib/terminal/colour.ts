// Colour only where a person reads a terminal: ctx.color is false when stdout is not a TTY or NO_COLOR is set.
import { createColors } from "picocolors"
import type { Ctx } from "../cli/context"
import type { TaskStatus } from "../model/schema"

export type Colours = ReturnType<typeof createColors>

export function colours(ctx: Pick<Ctx, "color">): Colours {
  return createColors(ctx.color)
}

/** The colour of each status wherever a status is painted in the terminal. */
export const STATUS_COLOUR = {
  todo: "dim",
  ready_for_agent: "cyan",
  assigned: "blue",
  in_progress: "yellow",
  done: "green",
  blocked: "red",
} as const satisfies Record<TaskStatus, keyof Colours>
