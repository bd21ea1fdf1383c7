// A graph written onto a tasks.yaml text (`flow export`, `flow unshare`, `flow validate` of a shared project):
// the text the graph was imported from (or last generated as) keeps its comments, key order, quoting and
// blank lines where its tasks are still there. In order of preference:
//   1. the text itself, byte for byte, when it already reads as the graph;
//   2. the text with tasks.yaml's minimal edits (lib/store/task-edit.ts, as any flow command writes), when the
//      graph differs from it only in values and appended notes: what a run's progress is;
//   3. the text's YAML Document with the graph laid over it (tasks matched by id, so a task's comments travel
//      with it; tasks added since are written in block style, those removed go with their comments);
//   4. the graph rendered afresh, should the Document not read back as the graph.
// Every way is read back and compared with the graph before it is returned.
import { type Document, isMap, isScalar, isSeq, type Node, parseDocument, stringify } from "yaml"
import { indexTasks, type Task, type TaskFile } from "../model/task-index"
import { inFormOf } from "./line-ending"
import { TasksEditor } from "./task-edit"

/** The graph as tasks.yaml text, written onto `base` (module comment); without a base, rendered afresh. */
export function textOnto(base: string | undefined, data: TaskFile): string {
  if (base !== undefined) {
    const old = parseOrUndefined(base)
    if (old !== undefined && Bun.deepEquals(old, data, true)) return base
    const edited = old === undefined ? undefined : editOnto(base, old as TaskFile, data)
    if (edited !== undefined) return edited
    const laid = layOnto(base, data)
    if (laid !== undefined) return laid
  }
  const fresh = stringify(data, { lineWidth: 0 })
  return base === undefined ? fresh : inFormOf(base, fresh)
}

function parseOrUndefined(text: string): unknown {
  try {
    return Bun.YAML.parse(text)
  } catch {
    return undefined
  }
}

type Rec = Record<string, unknown>

const isScalarValue = (v: unknown): v is string | number | boolean => typeof v === "string" || typeof v === "number" || typeof v === "boolean"

/** Way 2: the same tasks in the same places, changed only in values and appended list items. */
function editOnto(base: string, old: TaskFile, data: TaskFile): string | undefined {
  for (const key of new Set([...Object.keys(old), ...Object.keys(data)])) {
    if (key !== "tasks" && !Bun.deepEquals((old as Rec)[key], (data as Rec)[key], true)) return undefined
  }
  const from = indexTasks(old)
  const to = indexTasks(data)
  if (from.size !== to.size) return undefined
  const editor = new TasksEditor(base, structuredClone(old))
  try {
    for (const [id, entry] of to) {
      const before = from.get(id)
      if (!before || before.order !== entry.order || before.parent?.id !== entry.parent?.id) return undefined
      if (!editRecord(editor, { taskId: id }, before.task as Rec, entry.task as Rec, ["subtasks", "steps"])) return undefined
      const [a, b] = [before.task.steps, entry.task.steps]
      if (a === undefined && b === undefined) continue
      if (a === undefined || b === undefined || a.length !== b.length || a.some((s, i) => s.id !== b[i].id)) return undefined
      for (let i = 0; i < b.length; i++) {
        if (!editRecord(editor, { taskId: id, stepId: b[i].id }, a[i] as Rec, b[i] as Rec, [])) return undefined
      }
    }
    const text = editor.result()
    return Bun.deepEquals(parseOrUndefined(text), data, true) ? text : undefined
  } catch {
    return undefined // an edit the text editor cannot make: the Document way can
  }
}

/** One record's differences as editor calls; false when one is more than a value or an appended item. */
function editRecord(editor: TasksEditor, target: { taskId: string; stepId?: string }, a: Rec, b: Rec, skip: string[]): boolean {
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (skip.includes(key) || Bun.deepEquals(a[key], b[key], true)) continue
    const [was, now] = [a[key], b[key]]
    if (now === undefined) editor.set(target, key, undefined)
    else if (isScalarValue(now) && (was === undefined || isScalarValue(was))) editor.set(target, key, now)
    else if (Array.isArray(now) && now.every((v) => typeof v === "string") && (was === undefined || isPrefix(was, now))) {
      for (const item of now.slice(Array.isArray(was) ? was.length : 0)) editor.append(target, key, item)
    } else return false
  }
  return true
}

function isPrefix(was: unknown, now: unknown[]): boolean {
  return Array.isArray(was) && was.length < now.length && was.every((v, i) => v === now[i])
}

/** Way 3: the graph laid over the text's Document. */
function layOnto(base: string, data: TaskFile): string | undefined {
  const doc = parseDocument(base)
  if (doc.errors.length > 0 || !isMap(doc.contents)) return undefined
  doc.contents = lay(doc, doc.contents, data) as typeof doc.contents
  const text = inFormOf(base, doc.toString({ lineWidth: 0, flowCollectionPadding: false }))
  return Bun.deepEquals(parseOrUndefined(text), data, true) ? text : undefined
}

/** `node` changed to hold `value`, reusing every node (and so every comment) that still fits. */
function lay(doc: Document, node: unknown, value: unknown): Node {
  const n = node as Node
  if (n && typeof (n as { toJSON?: unknown }).toJSON === "function" && Bun.deepEquals(n.toJSON(), value, true)) return n
  if (isMap(node) && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const record = value as Rec
    node.items = node.items.filter((p) => isScalar(p.key) && String(p.key.value) in record)
    for (const [k, v] of Object.entries(record)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === k)
      if (pair) pair.value = lay(doc, pair.value, v)
      else node.items.push(doc.createPair(k, v))
    }
    return node
  }
  if (isSeq(node) && Array.isArray(value)) {
    if (value.length > 0 && value.every((v) => v !== null && typeof v === "object" && typeof (v as Task).id === "string")) {
      // Tasks, subtasks and steps are matched by id, so each keeps its own comments wherever it moved.
      const byId = new Map<unknown, unknown>()
      for (const item of node.items) if (isMap(item)) byId.set(item.get("id"), item)
      node.items = value.map((v) => {
        const old = byId.get((v as Task).id)
        return old ? lay(doc, old, v) : doc.createNode(v)
      })
      return node
    }
    node.items = value.map((v, i) => (i < node.items.length ? lay(doc, node.items[i], v) : doc.createNode(v)))
    return node
  }
  if (isScalar(node) && isScalarValue(value)) {
    node.value = value
    return node
  }
  return doc.createNode(value) as Node
}
