// Status values as plain data: the schema (lib/model/schema.ts) builds its enums from these lists, and the read
// path, which must not load arktype, uses them directly. Order is the nominal flow of SPEC section 3.1.
export const TASK_STATUSES = ["todo", "ready_for_agent", "assigned", "in_progress", "done", "blocked"] as const
export const STEP_STATUSES = ["pending", "in_progress", "done"] as const
