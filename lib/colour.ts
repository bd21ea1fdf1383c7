// Colour only where a person reads a terminal: ctx.color is false when stdout is not a TTY or NO_COLOR is set.
import { createColors } from "picocolors"
import type { Ctx } from "./context"

export type Colours = ReturnType<typeof createColors>

export function colours(ctx: Pick<Ctx, "color">): Colours {
  return createColors(ctx.color)
}
