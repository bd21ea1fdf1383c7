// The task store: the one seam every command that reads or changes the task graph goes through, whichever
// backend holds it (docs/ARCHITECTURE.md, "The store seam"): tasks.yaml (lib/store/file/, the default) or a
// PostgreSQL database shared by many machines (lib/store/postgres/, docs/FLEET.md). Callers get a store from
// `openStore` (lib/store/open.ts) and never ask which one they hold. A change is one `mutate` call, atomic in every backend (a
// file write under the lock; one SQL transaction), so "mark done and promote the dependents" is never half
// applied anywhere. The status rules (transitions.ts) are written once, against `TaskEdits`.
import { FlowError } from "../cli/errors"
import type { Indexed, Task, TaskFile } from "../model/task-index"

export type Scalar = string | number | boolean

/**
 * A shared store's database that cannot be reached (its message names it, without the password). A run waits
 * it out (its outcomes held, written when it answers again); a command fails with it (exit 1).
 */
export class StoreUnreachable extends FlowError {}

/** A task, or one of its steps. */
export type EditTarget = { taskId: string; stepId?: string }

/** The edits one change makes to the graph; every backend gives the same behaviour and the same errors. */
export interface TaskEdits {
  /** The task with this id (a subtask too), as the change has left it so far. */
  task(id: string): Task | undefined
  /** Every task by id, in file order. */
  readonly tasks: Map<string, Indexed>
  /** Sets `key` of a task (or of one of its steps) to a scalar; `undefined` removes the key. */
  set(target: EditTarget, key: string, value: Scalar | undefined): void
  /** Appends a string to the list under `key` (creating it). */
  append(target: EditTarget, key: string, value: string): void
}

/**
 * A run's hold on a task (docs/FLEET.md, "Claims and fencing"): a write that carries it is refused once the
 * task's current attempt or claimant differ: the task was taken over. A person's command carries none.
 */
export type Fence = { taskId: string; attempt: number; run: string }

/**
 * A run's claim of a task on a shared graph (docs/FLEET.md, "Claims, leases, fencing"): its fence, and whether
 * the claim still holds now (asked just before anything of the task leaves the machine: a push of its merge).
 */
export type Claim = Fence & { holds(): Promise<boolean> }

/** A run of this machine proved dead, and the tasks whose claims it held (given back). */
export type DeadRun = { run: string; pid: number; tasks: string[] }

/**
 * How runs that share a graph divide its tasks without a coordinator (docs/FLEET.md, "Claims, leases,
 * fencing"). Only a shared store has them: in files one run holds a project (.flow/run.lock).
 */
export interface Claims {
  /**
   * Claims the first of `candidates` (in their order) that no live claim holds, whose status may start or
   * resume and whose dependencies are done, for `leaseMs`: its fence, or undefined when none could be taken.
   */
  claim(candidates: readonly string[], who: { run: string; agent: string }, leaseMs: number): Promise<Fence | undefined>
  /**
   * Renews `claims` for another `leaseMs`, each only while the task's row still names its attempt and run: the
   * ids of the tasks renewed. A claim left out is one this run lost (another run took the task over, or it was
   * given back), judged by the row alone, never by what else the run claimed meanwhile.
   */
  renew(claims: readonly Fence[], leaseMs: number): Promise<Set<string>>
  /** Whether `fence` is still the task's live claim, on the database's clock. */
  holds(fence: Fence): Promise<boolean>
  /** Gives the task back, in whatever status it is: any run may take it at once. Nothing when the claim moved on. */
  release(fence: Fence): Promise<void>
  /**
   * Gives back at once, before their lease ends, the claims of this machine's runs (other than `run`) that are
   * proved dead here: their process is gone (docs/FLEET.md, "Claims, leases, fencing"). Each such run that held
   * any, with its pid and the tasks given back.
   */
  freeDead(run: string): Promise<DeadRun[]>
  /** How many tasks other runs hold by a live claim now (a run with nothing to take waits while any do). */
  othersLive(run: string): Promise<number>
  /** Calls `wake` whenever a process changes the graph (LISTEN); resolves to its stop. */
  listen(wake: () => void): Promise<() => Promise<void>>
}

/** The graph as read, and a version that changes on every write. */
export type Loaded = { data: TaskFile; version: string }

/** The graph with its text in the file format: tasks.yaml's bytes, or the shared graph as `flow export` writes it. */
export type Current = Loaded & { text: string }

export interface TaskStore {
  /** Where the graph lives, for messages: tasks.yaml's path, or the database's URL without its password and the project. */
  readonly where: string
  /** True for a graph many machines share (no file event says it changed: readers that follow it poll). */
  readonly shared: boolean
  /** How runs divide the tasks of a shared graph; undefined in files. */
  readonly claims?: Claims
  /** Whether there is a graph yet (tasks.yaml exists; a shared project always has one). */
  exists(): Promise<boolean>
  /** The whole graph, checked; a missing or invalid one is a FlowError (exit 3). */
  read(): Promise<Loaded>
  /**
   * The only way the graph changes: `edit` runs on the current graph and its edits are stored atomically;
   * nothing is stored when it throws or changes nothing. `command` names the writer in lock messages.
   */
  mutate<T>(command: string, edit: (edits: TaskEdits) => T, fence?: Fence | readonly Fence[]): Promise<T>
  /**
   * Replaces the graph as a whole (`flow generate`): `build` gets the current graph (undefined when there is
   * none) and returns the new tasks.yaml text, already validated, or no text to leave the graph as it is.
   */
  replace<T>(command: string, build: (current: Current | undefined) => Promise<{ text?: string; result: T }>): Promise<T>
  /** The graph in the file format, unchecked (what `flow validate` checks and `flow export` writes). */
  text(): Promise<string>
  /** Records that `text` passed `flow validate` (the file store's validation cache; the shared store needs none). */
  validated(text: string): void
  /** `where` as a command prints it: a path relative to `cwd`. */
  shown(cwd: string): string
}
