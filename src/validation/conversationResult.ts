/**
 * A conversation's result as a conversation reports it: the body of
 * POST /api/v2/interactions/{id}/result, and a simulated conversation's
 * `result` (the simulator's provider_config). Every field is optional, but a
 * result says something; each has a bound (domain/conversationResult.ts), and
 * one answer lists every problem.
 */
import { type Static, Type } from '@sinclair/typebox'
import { RESULT_FIELDS, RESULT_LIMITS, type ReportedResult, TRANSCRIPT_ROLES } from '../domain/conversationResult.ts'
import { httpsUrl, instant, OneOf } from './fields.ts'
import { type ModelProblem, refineModel, validate } from './model.ts'
import { component } from '../http/openapi.ts'

const TranscriptTurnInput = Type.Object(
  {
    role: OneOf(TRANSCRIPT_ROLES),
    text: Type.String({ minLength: 1, maxLength: RESULT_LIMITS.turnLength }),
    at: Type.Optional(instant('at', 'When it was said.')),
  },
  { additionalProperties: false },
)

const ResultFields = Type.Object(
    {
      disposition: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: RESULT_LIMITS.dispositionLength,
          pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]*$',
          description: 'A short code of your choosing: letters, digits, `_`, `-`, `.` and `:`.',
          examples: ['interested'],
        }),
      ),
      summary: Type.Optional(Type.String({ minLength: 1, maxLength: RESULT_LIMITS.summaryLength })),
      data: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          maxProperties: RESULT_LIMITS.dataKeys,
          description: `Fields the conversation extracted: at most ${RESULT_LIMITS.dataKeys} keys, ${RESULT_LIMITS.dataBytes / 1024} KiB as JSON.`,
          examples: [{ interested: true, available_from: '2026-12-07' }],
        }),
      ),
      transcript: Type.Optional(
        Type.Array(TranscriptTurnInput, {
          maxItems: RESULT_LIMITS.transcriptTurns,
          description: `The conversation turn by turn: at most ${RESULT_LIMITS.transcriptTurns} turns, ${RESULT_LIMITS.transcriptBytes / 1024} KiB as JSON.`,
        }),
      ),
      transcript_url: Type.Optional(httpsUrl('transcript_url', RESULT_LIMITS.urlLength, 'Where the whole transcript is kept.')),
      recording_url: Type.Optional(httpsUrl('recording_url', RESULT_LIMITS.urlLength, 'Where the recording is kept.')),
      callback_at: Type.Optional(
        instant('callback_at', "When the person asked to be called again: the task's next attempt is due then, in the campaign's window."),
      ),
      opt_out: Type.Optional(Type.Boolean({ description: 'The person asked not to be contacted again: the number is suppressed and the task completes opted_out.' })),
    },
    { additionalProperties: false },
)

/** What the fields' own schemas cannot say: a result carries something, and its free-form parts fit their bounds. */
function resultProblems(result: Partial<Static<typeof ResultFields>>): ModelProblem[] {
  const problems: ModelProblem[] = []
  if (RESULT_FIELDS.every((field) => result[field] === undefined)) {
    problems.push({ path: [], message: `a result carries at least one of ${RESULT_FIELDS.join(', ')}` })
  }
  if (result.data !== undefined && !jsonFits(result.data, RESULT_LIMITS.dataBytes)) {
    problems.push({ path: ['data'], message: `data must be at most ${RESULT_LIMITS.dataBytes / 1024} KiB as JSON` })
  }
  if (result.transcript !== undefined && !jsonFits(result.transcript, RESULT_LIMITS.transcriptBytes)) {
    problems.push({ path: ['transcript'], message: `transcript must be at most ${RESULT_LIMITS.transcriptBytes / 1024} KiB as JSON` })
  }
  return problems
}

export const ConversationResultInput = component('ConversationResultReport', refineModel(ResultFields, resultProblems))
export type ConversationResultInput = Static<typeof ConversationResultInput>

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8')
}

/**
 * Whether `value` (parsed JSON) is at most `limit` bytes as JSON in UTF-8.
 * Most results are far under their bounds, and a bound on the size proves it
 * without writing the JSON: a string's UTF-16 unit is at most 6 bytes
 * (`\u001f`), a number at most 24 characters. JSON.stringify of a 20-turn
 * transcript took 10 µs on this machine, twice a result; the bound, under 1.
 * Only when the bound passes the limit is the JSON written and measured.
 */
function jsonFits(value: unknown, limit: number): boolean {
  let bound = 0
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next === 'string') bound += 2 + 6 * next.length
    else if (typeof next === 'number') bound += 24
    else if (typeof next === 'boolean' || next === null || next === undefined) bound += 5
    else if (Array.isArray(next)) {
      bound += 1 + next.length
      for (const item of next) pending.push(item)
    } else if (typeof next === 'object' && Object.getPrototypeOf(next) === Object.prototype) {
      bound += 2
      for (const key in next) {
        // Its key quoted, a colon, and a comma.
        bound += 4 + 6 * key.length
        pending.push((next as Record<string, unknown>)[key])
      }
    } else return jsonBytes(value) <= limit
    if (bound > limit) return jsonBytes(value) <= limit
  }
  return true
}


/**
 * A result a provider reported (an agent platform's analysis and
 * transcript), made into one the service keeps: checked by the very schema
 * of a client's POST /api/v2/interactions/{id}/result. A client that sends
 * too much is told what to fix; a provider cannot be, and a whole result is
 * worth more than its excess, so rather than losing it:
 * - text longer than its bound (disposition, summary, a turn's text) is cut
 *   at the bound, in characters;
 * - a transcript of more turns or more bytes than RESULT_LIMITS allows keeps
 *   its first turns that fit (the start of a conversation says who was
 *   reached and why), and `data` its first keys that fit;
 * - whatever is still not valid (a disposition outside its pattern, a URL that
 *   is not https or too long, an unreadable instant, an empty text, a turn
 *   with another role) is left out: the field, or for a transcript the turn;
 * - fields a result does not have are ignored.
 * Undefined when nothing is left (a result says something). Instants come
 * back in UTC, as a client's do.
 */
export function providerResult(reported: unknown): ReportedResult | undefined {
  if (typeof reported !== 'object' || reported === null || Array.isArray(reported)) return undefined
  const given = reported as Record<string, unknown>
  const candidate: Record<string, unknown> = {}
  for (const field of RESULT_FIELDS) if (given[field] !== undefined && given[field] !== null) candidate[field] = given[field]
  for (const field of ['disposition', 'summary'] as const) {
    if (typeof candidate[field] === 'string') candidate[field] = cut(candidate[field], field === 'disposition' ? RESULT_LIMITS.dispositionLength : RESULT_LIMITS.summaryLength)
  }
  if (Array.isArray(candidate.transcript)) {
    const turns = candidate.transcript
      .slice(0, RESULT_LIMITS.transcriptTurns)
      .map((turn) => (isRecord(turn) && typeof turn.text === 'string' ? { ...turn, text: cut(turn.text, RESULT_LIMITS.turnLength) } : turn))
    if (!jsonFits(turns, RESULT_LIMITS.transcriptBytes)) turns.length = fittingPrefix(turns.map((turn) => jsonBytes(turn)), RESULT_LIMITS.transcriptBytes)
    if (turns.length > 0) candidate.transcript = turns
    else delete candidate.transcript
  }
  if (isRecord(candidate.data)) {
    const entries = Object.entries(candidate.data).slice(0, RESULT_LIMITS.dataKeys)
    if (!jsonFits(candidate.data, RESULT_LIMITS.dataBytes)) {
      // An entry as JSON: its key, a colon and its value.
      entries.length = fittingPrefix(entries.map(([key, value]) => jsonBytes(key) + 1 + jsonBytes(value)), RESULT_LIMITS.dataBytes)
    }
    candidate.data = Object.fromEntries(entries)
  }
  // Each round leaves out at least one field or turn, so this ends.
  for (;;) {
    const { value, errors } = validate<ConversationResultInput>(ConversationResultInput, candidate, [])
    if (errors.length === 0) return value
    const badTurns = new Set<number>()
    for (const { loc } of errors) {
      const [field, index] = loc
      if (typeof field !== 'string') return undefined
      if (field === 'transcript' && typeof index === 'number') badTurns.add(index)
      else delete candidate[field]
    }
    if (badTurns.size > 0 && Array.isArray(candidate.transcript)) candidate.transcript = candidate.transcript.filter((_, index) => !badTurns.has(index))
    if (Array.isArray(candidate.transcript) && candidate.transcript.length === 0) delete candidate.transcript
  }
}

/**
 * How many of the first members, whose JSON sizes are `sizes`, fit in
 * `budget` bytes as one JSON array or object: its brackets, the members and a
 * comma between each two. Each member measured once: a transcript of 500
 * turns cut by stringifying what is left after each turn dropped took
 * quadratic time.
 */
function fittingPrefix(sizes: readonly number[], budget: number): number {
  let bytes = 2
  for (const [index, size] of sizes.entries()) {
    bytes += size + (index > 0 ? 1 : 0)
    if (bytes > budget) return index
  }
  return sizes.length
}

/** `text` at most `max` characters (code points, as the schema counts them). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text
  const characters = Array.from(text)
  return characters.length <= max ? text : characters.slice(0, max).join('')
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
