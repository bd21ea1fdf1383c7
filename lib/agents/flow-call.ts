// How an agent is told to end its turn through flow (finish its task or step, or block it): one wording for the
// task's prompt and every follow-up (a fix, a budget's or a usage limit's resume), as a command or as flow's MCP tool.
import { toolCall } from "../cli/hint"

/** A call to flow that ends an agent's turn: finishing its task or its step, or blocking its task (with a reason to give, as a placeholder). */
export type FlowCall = { done: string } | { stepDone: string } | { block: string; reason?: string }

/**
 * How an agent is told to make `call`, in every prompt flow sends it (the task's and each follow-up's): the
 * command, between `quote`s, or for an agent with flow's MCP server (`tools`) the tool with its arguments.
 * The verb before it: callVerb.
 */
export function flowCall(call: FlowCall, tools = false, quote = "`"): string {
  if ("done" in call) return tools ? toolCall("flow_done", { task_id: call.done }) : `${quote}flow done ${call.done}${quote}`
  if ("stepDone" in call) return tools ? toolCall("flow_step_done", { step_id: call.stepDone }) : `${quote}flow step done ${call.stepDone}${quote}`
  if (tools) return toolCall("flow_block", { task_id: call.block, ...(call.reason ? { reason: call.reason } : {}) })
  return `${quote}flow block ${call.block}${call.reason ? ` "${call.reason}"` : ""}${quote}`
}

/** "run" a command, "call" a tool. */
export const callVerb = (tools = false): string => (tools ? "call" : "run")
