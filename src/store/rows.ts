/** Conversions shared by the store modules; both database drivers return these shapes. */
import type { Provider } from '../domain/campaignSettings.ts'
import { type ConversationResult, interactionResult, type TranscriptTurn } from '../domain/conversationResult.ts'
import type { RecordedDecision } from '../domain/contactability.ts'
import type { Channel, Direction, Handoff, Interaction, InteractionOutcome, InteractionStatus } from '../domain/types.ts'

/** `timestamptz` arrives as a Date from both drivers. */
export function iso(value: Date): string {
  return value.toISOString()
}

export function isoOrNull(value: Date | null): string | null {
  return value === null ? null : value.toISOString()
}

/**
 * SQLSTATE of an error the database server reported, from either driver
 * (both give it a severity); undefined for any other error, such as a lost
 * connection, whose Node.js code (EPIPE) could pass for a SQLSTATE.
 */
export function sqlState(error: unknown): string | undefined {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown }
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * Whether a failed statement or transaction is known to have been rolled
 * back: the server reported an error. Without a SQLSTATE, or with a
 * connection exception (class 08), the outcome is unknown.
 */
export function rolledBack(error: unknown): boolean {
  const state = sqlState(error)
  return state !== undefined && !state.startsWith('08')
}

const INTERACTION_FIELDS = [
  'id', 'org_id', 'task_id', 'campaign_id', 'channel', 'provider', 'direction', 'attempt', 'status', 'test_mode', 'provider_ref',
  'outcome', 'started_at', 'ended_at', 'duration_s', 'handoff',
]

/**
 * The columns of an {@link InteractionRow}, of the table's alias `from`: with
 * its result and replies where one interaction or task is read, not a list of
 * tasks (a result may hold a long transcript).
 */
export function interactionColumns(from: string, { results }: { results: boolean }): string {
  return [...INTERACTION_FIELDS, ...(results ? ['result', 'replies', 'decision'] : [])].map((column) => `${from}.${column}`).join(', ')
}

export interface InteractionRow {
  id: string
  org_id: string
  task_id: string | null
  campaign_id: string
  channel: Channel
  provider: Provider
  direction: Direction
  attempt: number | null
  status: InteractionStatus
  test_mode: boolean
  provider_ref: string | null
  outcome: InteractionOutcome | null
  started_at: Date
  ended_at: Date | null
  duration_s: number | null
  handoff: Handoff | null
  /** Read where results are (see {@link interactionColumns}). */
  result?: ConversationResult | null
  replies?: TranscriptTurn[] | null
  /** Read where results are: the decision that allowed it (null before decisions were kept, and for an inbound one). */
  decision?: RecordedDecision | null
}

export const toInteraction = (row: InteractionRow): Interaction => ({
  id: row.id,
  taskId: row.task_id,
  channel: row.channel,
  provider: row.provider,
  direction: row.direction,
  attempt: row.attempt,
  status: row.status,
  outcome: row.outcome,
  testMode: row.test_mode,
  startedAt: iso(row.started_at),
  endedAt: isoOrNull(row.ended_at),
  durationS: row.duration_s,
  providerRef: row.provider_ref,
  ...(row.result === undefined ? {} : { result: interactionResult(row.result, row.replies ?? null) }),
  ...(row.decision === undefined ? {} : { decision: row.decision }),
  handoff: row.handoff,
})
