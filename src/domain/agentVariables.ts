/**
 * What a voice agent platform receives of an attempt as the variables its
 * agent's prompt and tools read (Vapi's variableValues, Retell's
 * retell_llm_dynamic_variables, ElevenLabs' dynamic_variables): one flat
 * object of names and values, which every platform accepts, built the same
 * way for all of them so that a prompt written for one reads the same names
 * on another. Each adapter passes the bounds its platform publishes.
 */
import type { ExternalId, JsonObject, LeftOut } from './types.ts'

/** The attempt as the variables are made of it (an OutboundAttempt is one). */
export interface AgentAttempt {
  interactionId: string
  /** Null for a call the person made that answers no task. */
  taskId: string | null
  /** Null for a call the person made: no attempt of the task's. */
  attempt: number | null
  /** Given only for a call the person made (docs/callbacks.md). */
  direction?: 'inbound'
  firstName: string | undefined
  language: string | undefined
  ids: readonly ExternalId[]
  context: JsonObject
}

/** What a platform accepts; every bound is optional (none: unbounded). */
export interface AgentVariableOptions {
  /** Every value as text: numbers in their JSON form, booleans as "true" or "false" (Retell takes strings only). */
  stringsOnly?: boolean
  /** Most variables. */
  maxVariables?: number
  /** Longest value, in characters (code points) of its text: a number's or boolean's JSON form. */
  maxValueLength?: number
  /** Most bytes of all the variables together, as one JSON object in UTF-8 (`JSON.stringify(variables)`). */
  maxTotalBytes?: number
}

export type AgentVariableValue = string | number | boolean

export interface AgentVariables {
  variables: Record<string, AgentVariableValue>
  /** Everything of the attempt that is not among the variables, each with why, in the order met. */
  leftOut: LeftOut[]
}

/**
 * The variables an agent platform receives for an attempt, built by these
 * rules, in this order:
 *
 * 1. The service's own: `interaction_id`, `task_id`, `attempt` (a number),
 *    or for a call the person made `task_id` (when it landed on one) and
 *    `direction` ("inbound"), then `first_name` and `language` when the
 *    trigger gave them.
 * 2. Each external id of the trigger as its type => its value, in the
 *    trigger's order (an id {source: "ats", type: "candidate_id", value:
 *    "C-17"} gives candidate_id: "C-17"); when two ids share a type, the
 *    first wins and the others are left out.
 * 3. The task's context (the campaign's default merged with the trigger's),
 *    in its order: strings, numbers and booleans as they are; nested objects
 *    flattened, their keys joined with "_" ({job: {title: "Nurse"}} gives
 *    job_title: "Nurse", at any depth); arrays as their JSON text
 *    ({shifts: ["night", "day"]} gives shifts: '["night","day"]'); null
 *    left out, and so is an empty object.
 *
 * A name already taken by an earlier variable (the service's own, an id, an
 * earlier context value or flattened key) is left out: what comes first
 * wins. Then the platform's bounds, to each variable in the same order: with
 * `stringsOnly`, every value becomes its text; a value longer than
 * `maxValueLength` is left out (never cut: a cut value would say something
 * else); once there are `maxVariables`, the rest are left out; a variable
 * that would take the whole past `maxTotalBytes` is left out, and later,
 * smaller ones may still fit. Everything left out is listed with its name
 * (for an id, its type) and the reason.
 */
export function agentVariables(attempt: AgentAttempt, options: AgentVariableOptions = {}): AgentVariables {
  const variables: Record<string, AgentVariableValue> = {}
  const leftOut: LeftOut[] = []
  let count = 0
  // Of JSON.stringify(variables): its braces, and each variable's "name":value with a comma before all but the first.
  let bytes = 2
  const add = (key: string, raw: AgentVariableValue): void => {
    const reason = refusal(key, raw)
    if (reason !== undefined) leftOut.push({ key, reason })
  }
  const refusal = (key: string, raw: AgentVariableValue): string | undefined => {
    if (Object.hasOwn(variables, key)) return 'the name of an earlier variable'
    const value = options.stringsOnly === true && typeof raw !== 'string' ? JSON.stringify(raw) : raw
    // Each bound measured only where the platform has it: a start for a platform with none (Vapi) measures nothing.
    if (options.maxValueLength !== undefined && [...(typeof value === 'string' ? value : JSON.stringify(value))].length > options.maxValueLength) {
      return `longer than ${options.maxValueLength} characters`
    }
    if (options.maxVariables !== undefined && count >= options.maxVariables) return `more than ${options.maxVariables} variables`
    if (options.maxTotalBytes !== undefined) {
      const size = (count === 0 ? 0 : 1) + Buffer.byteLength(`${JSON.stringify(key)}:${JSON.stringify(value)}`, 'utf8')
      if (bytes + size > options.maxTotalBytes) return `the variables would pass ${options.maxTotalBytes} bytes`
      bytes += size
    }
    variables[key] = value
    count += 1
    return undefined
  }

  add('interaction_id', attempt.interactionId)
  if (attempt.taskId !== null) add('task_id', attempt.taskId)
  if (attempt.attempt !== null) add('attempt', attempt.attempt)
  if (attempt.direction !== undefined) add('direction', attempt.direction)
  if (attempt.firstName !== undefined) add('first_name', attempt.firstName)
  if (attempt.language !== undefined) add('language', attempt.language)
  const types = new Set<string>()
  for (const id of attempt.ids) {
    if (types.has(id.type)) leftOut.push({ key: id.type, reason: 'another external id of the same type came first' })
    else add(id.type, id.value)
    types.add(id.type)
  }
  const flatten = (prefix: string, object: JsonObject): void => {
    const entries = Object.entries(object)
    if (entries.length === 0 && prefix !== '') leftOut.push({ key: prefix.slice(0, -1), reason: 'an empty object' })
    for (const [name, value] of entries) {
      const key = prefix + name
      if (isObject(value)) flatten(`${key}_`, value)
      else if (value === null) leftOut.push({ key, reason: 'null' })
      else if (Array.isArray(value)) add(key, JSON.stringify(value))
      else if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) add(key, value)
      // A context is parsed JSON, so this is only a guard for the type.
      else leftOut.push({ key, reason: 'not a JSON value' })
    }
  }
  flatten('', attempt.context)
  return { variables, leftOut }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
