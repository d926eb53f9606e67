/**
 * A conversation's result as a conversation reports it: the body of
 * POST /api/v2/interactions/{id}/result, and a simulated conversation's
 * `result` (the simulator's provider_config). Every field is optional, but a
 * result says something; each has a bound (domain/conversationResult.ts), and
 * one answer lists every problem.
 */
import { type Static, Type } from '@sinclair/typebox'
import { RESULT_FIELDS, RESULT_LIMITS, TRANSCRIPT_ROLES } from '../domain/conversationResult.ts'
import { httpsUrl, instant, OneOf } from './fields.ts'
import { type ModelProblem, refineModel } from './model.ts'
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
  if (result.data !== undefined && jsonBytes(result.data) > RESULT_LIMITS.dataBytes) {
    problems.push({ path: ['data'], message: `data must be at most ${RESULT_LIMITS.dataBytes / 1024} KiB as JSON` })
  }
  if (result.transcript !== undefined && jsonBytes(result.transcript) > RESULT_LIMITS.transcriptBytes) {
    problems.push({ path: ['transcript'], message: `transcript must be at most ${RESULT_LIMITS.transcriptBytes / 1024} KiB as JSON` })
  }
  return problems
}

export const ConversationResultInput = component('ConversationResultReport', refineModel(ResultFields, resultProblems))
export type ConversationResultInput = Static<typeof ConversationResultInput>

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8')
}

