/**
 * A conversation's result: what the person said, as the conversation that
 * ran during an interaction (the client's voice app, an agent, a WhatsApp
 * exchange) reports it. It is personal data: stored on its interaction,
 * carried on the interaction's events with the client's ids, erased with the
 * person and swept by retention. A callback time and an opt-out in it decide
 * the task's next step (domain/attemptPolicy.ts).
 *
 * Field names are those of the API: the result is stored and sent as it is
 * written here.
 */
import { isDeepStrictEqual } from 'node:util'
import type { JsonObject } from './types.ts'

export const TRANSCRIPT_ROLES = ['agent', 'contact'] as const
export type TranscriptRole = (typeof TRANSCRIPT_ROLES)[number]

/** One turn of a conversation: who spoke (or wrote), what, and when if known. */
export interface TranscriptTurn {
  role: TranscriptRole
  text: string
  /** UTC, ISO 8601 with Z. */
  at?: string
}

/** A result as the service records it and sends it on events: every field present, null when not reported. */
export interface ConversationResult {
  /** A short code of the client's choosing (interested, wrong_person...). */
  disposition: string | null
  summary: string | null
  /** Fields the conversation extracted. */
  data: JsonObject | null
  transcript: TranscriptTurn[] | null
  transcript_url: string | null
  recording_url: string | null
  /** When the person asked to be called again (UTC, ISO 8601 with Z). */
  callback_at: string | null
  /** The person asked not to be contacted again. */
  opt_out: boolean
  /** When the service recorded it. */
  received_at: string
}

/** What a conversation reports: the result's fields, any of them (validated and normalized: instants in UTC). */
export type ReportedResult = Partial<Omit<ConversationResult, 'received_at' | 'opt_out'>> & { opt_out?: boolean }

/** The fields a result may carry, in the order they are documented. */
export const RESULT_FIELDS = ['disposition', 'summary', 'data', 'transcript', 'transcript_url', 'recording_url', 'callback_at', 'opt_out'] as const

/**
 * Bounds of a result, so that no conversation can make its task's events a
 * burden to store or to send: a transcript of an hour's call is about 60 kB.
 */
export const RESULT_LIMITS = {
  dispositionLength: 64,
  summaryLength: 10_000,
  dataKeys: 50,
  /** Of `data` as JSON, in UTF-8. */
  dataBytes: 64 * 1024,
  transcriptTurns: 2_000,
  turnLength: 10_000,
  /** Of `transcript` as JSON, in UTF-8. */
  transcriptBytes: 256 * 1024,
  urlLength: 2_048,
} as const

/** The result as recorded at `now`: every field there, null where it was not reported. */
export function recordedResult(reported: ReportedResult, now: number): ConversationResult {
  return {
    disposition: reported.disposition ?? null,
    summary: reported.summary ?? null,
    data: reported.data ?? null,
    transcript: reported.transcript ?? null,
    transcript_url: reported.transcript_url ?? null,
    recording_url: reported.recording_url ?? null,
    callback_at: reported.callback_at ?? null,
    opt_out: reported.opt_out ?? false,
    received_at: new Date(now).toISOString(),
  }
}

/**
 * The result an interaction carries: the one its conversation reported,
 * whose transcript is, when it sent none, what the person wrote (a WhatsApp
 * exchange's replies, recorded by the service as they came); null when
 * neither exists.
 */
export function interactionResult(reported: ConversationResult | null, replies: readonly TranscriptTurn[] | null): ConversationResult | null {
  if (replies === null || replies.length === 0) return reported
  // Received when the last message was.
  if (reported === null) return { ...recordedResult({}, Date.parse(replies.at(-1)!.at!)), transcript: [...replies] }
  return reported.transcript === null && reported.transcript_url === null ? { ...reported, transcript: [...replies] } : reported
}

/** Whether two results say the same (a client sending one again), whenever each was received; the order of an object's keys is not kept by the store. */
export function sameResult(a: ConversationResult, b: ConversationResult): boolean {
  return isDeepStrictEqual({ ...a, received_at: null }, { ...b, received_at: null })
}

/**
 * The fields erasure and retention remove from a result: the free text, what
 * was extracted and where recordings are. The disposition, a callback time and
 * an opt-out are the client's classification and the task's own history: they
 * stay, as a task's outcome does.
 */
export const ERASED_RESULT_FIELDS = ['summary', 'data', 'transcript', 'transcript_url', 'recording_url'] as const

/** A person's message as a transcript turn. */
export function contactTurn(text: string, at: number): TranscriptTurn {
  return { role: 'contact', text, at: new Date(at).toISOString() }
}
