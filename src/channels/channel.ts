/**
 * The channel port: one interface for every way of reaching a person, one
 * folder per provider behind it. An adapter translates; it never touches the
 * store. The dispatcher decides when to start an attempt and records it
 * before calling `start`, so an adapter is asked to start each attempt at
 * most once (an attempt the provider defers is withdrawn, and what follows
 * is a new one, of a new interaction id). Agent platforms give their agents
 * the attempt's variables made by `agentVariables`
 * (src/domain/agentVariables.ts), and their results through
 * `providerResult` (src/validation/conversationResult.ts).
 */
import type { TObject } from '@sinclair/typebox'
import type { Provider } from '../domain/campaignSettings.ts'
import type { ReportedResult } from '../domain/conversationResult.ts'
import type { SenderPace } from '../domain/pacing.ts'
import type { Channel as ChannelName, ExternalId, InteractionOutcome, JsonObject, LeftOut } from '../domain/types.ts'
import type { SessionMessageContent } from './sessionMessages.ts'

export type { InteractionOutcome, VoiceOutcome, WhatsAppOutcome } from '../domain/types.ts'

/** One outbound attempt, as the dispatcher asks a channel to start it. */
export interface OutboundAttempt {
  interactionId: string
  taskId: string
  /** 1 for the first attempt of the task. */
  attempt: number
  /** E.164. */
  to: string
  testMode: boolean
  /** The task's context (campaign default merged with the trigger's). */
  context: JsonObject
  /** The contact's BCP 47 language, when the trigger gave one. */
  language: string | undefined
  /** The contact's first name, when the trigger gave one. */
  firstName: string | undefined
  /** The contact's last name, when the trigger gave one. */
  lastName: string | undefined
  /** The trigger's external ids (the client's own names for the person: candidate, application...), in the trigger's order. */
  ids: ExternalId[]
  /** The campaign's provider_config, as its adapter's `configSchema` accepted it. */
  config: JsonObject
}

export type StartResult =
  /**
   * The provider accepted the attempt; its reports will name it by
   * `providerRef`. `leftOut`: what of the task an agent platform was not
   * given as its agent's variables (domain/agentVariables.ts), recorded as the
   * interaction's handoff (mode `variables`) with the start.
   */
  | { kind: 'started'; providerRef: string; leftOut?: LeftOut[] }
  /**
   * The provider certainly did not start it. `permanent`: retrying cannot
   * help (a number it cannot reach, a template it does not know), so the task
   * fails rather than spending its attempts.
   */
  | {
      kind: 'refused'
      permanent: boolean
      reason: string
      /** The provider says the number is not on its channel at all (WhatsApp's 131026): a campaign's fallback step for it goes on at once. */
      notOnChannel?: boolean
      /** The provider says the person has opted out of its messages (Twilio's 21610, after a STOP): the number is suppressed. */
      optedOut?: boolean
      /** A session message the provider says the person's window no longer allows (WhatsApp's 131047). */
      windowClosed?: boolean
    }
  /**
   * The provider certainly did not start it, for a reason of its own that
   * passes within moments: its throttling (an HTTP 429, a rate-limit error
   * code) or a momentary outage it reports as such. The attempt is withdrawn
   * as though it had never been made (it uses up none of the task's
   * attempts) and the task is due again after `retryAfterMs` (the provider's
   * Retry-After where it sends one: src/channels/retryAfter.ts), bounded by
   * the dispatcher. Only for a start the provider surely turned away: when
   * that is unknown, throw.
   */
  | { kind: 'deferred'; retryAfterMs: number; reason: string }

/** What a provider has said about an interaction so far. */
export interface InteractionProgress {
  providerRef: string | null
  /** The adapter's own last status word for it (for WhatsApp: sent, delivered, read). */
  providerStatus: string | null
  attempt: number
  config: JsonObject
  /** When the attempt started (epoch ms). */
  startedAt: number
  /** The number dialled, E.164. */
  to: string
}

/**
 * A provider's report about an interaction it knows by `providerRef`.
 *
 * A `result` an adapter hands over (here or from `settle`) is what
 * `providerResult` (src/validation/conversationResult.ts) made of the
 * provider's analysis: validated as a client's POST
 * /api/v2/interactions/{id}/result is, with what exceeds its bounds cut or
 * left out; the service records it as it is.
 */
export type ProviderReport =
  /** Not over yet; `status` is kept as the interaction's provider status. */
  | { kind: 'progress'; providerRef: string; status: string; at: number }
  /**
   * Over, with its outcome; `durationS` for calls. `optedOut`: the provider
   * says the person refuses such messages (the number is then suppressed).
   * `permanent`: the provider says the number cannot be reached at all (an
   * invalid destination): the task fails rather than spending its attempts.
   * `result`: the conversation's result, when the provider reports it with
   * the end (kept only when the conversation took place).
   */
  | {
      kind: 'final'
      providerRef: string
      outcome: InteractionOutcome
      at: number
      durationS?: number
      optedOut?: boolean
      permanent?: boolean
      /** The provider says the number is not on its channel at all (WhatsApp's 131026 in a failed status). */
      notOnChannel?: boolean
      result?: ReportedResult
    }
  /**
   * The conversation's result, reported after its end (an agent platform's
   * analysis, arriving after its call-ended message): it ends the
   * interaction's wait for its result (campaigns' results.wait_s). Before the
   * end it is kept for it; for an interaction already finalized, it changes
   * nothing.
   */
  | { kind: 'result'; providerRef: string; result: ReportedResult; at: number }

/** An interaction's end as a provider tells it when asked (`settle`). */
export interface SettledInteraction {
  outcome: InteractionOutcome
  /** The conversation's result, when the provider has one (kept only when the conversation took place). */
  result?: ReportedResult
  /** For calls: how long it lasted, in seconds. */
  durationS?: number
  /** The number cannot be reached at all, as a final report's `permanent`. */
  permanent?: boolean
  /** The provider says the person opted out of its messages, as a final report's `optedOut`: the number is suppressed. */
  optedOut?: boolean
}

export interface Channel {
  readonly provider: Provider
  readonly channel: ChannelName
  /** A campaign's provider_config (channels/providerConfig.ts): checked by the API's one validator, and read through it. */
  readonly configSchema: TObject
  /**
   * Starts one attempt. Resolves `refused` or `deferred` only when the
   * provider certainly did not start it (`deferred` when it says to come back
   * shortly: the attempt is then withdrawn and made again later); throws when
   * that is unknown (a timeout, a lost connection, a 5xx), and the attempt is
   * then settled, never blindly repeated.
   */
  start(attempt: OutboundAttempt): Promise<StartResult>
  /**
   * Whom the provider meters a campaign's starts by (for a valid config) and
   * at what rate by default, as the provider documents it; undefined when it
   * states no rate (concurrency limits are the campaign's max_concurrent).
   * The dispatcher starts no more than that across every worker
   * (domain/pacing.ts); a campaign's `pacing` overrides the rate.
   */
  senderPace(config: JsonObject): SenderPace | undefined
  /**
   * Sends a message in a conversation the person keeps open (WhatsApp's
   * session messages, docs/messaging.md), answered as `start` is; absent on
   * a channel that has none.
   */
  sendSessionMessage?(config: JsonObject, to: string, content: SessionMessageContent): Promise<StartResult>
  /**
   * How long after starting an attempt without a final report it is settled
   * (the reply window of a message, the longest a call may last).
   */
  settleAfterMs(config: JsonObject): number
  /**
   * True where the settle time is when the attempt's outcome is decided
   * (the simulator's), not a deadline for a report or a reply that may come:
   * a fallback's no-reply wait does not move it.
   */
  readonly decidesOutcomeAtSettleTime?: true
  /**
   * The end of an interaction that has had no final report by its settle
   * time, or whose start was never confirmed (`providerRef` null): asked of
   * the provider where it can tell (a platform's GET of a call, with its
   * transcript and analysis as `result`), otherwise inferred from the last
   * status. Its result only where the provider has one: the simulator's is
   * the one its campaign sets; where the conversation's own app reports it
   * (POST /api/v2/interactions/{id}/result), none. Throws when the provider
   * cannot be asked now: it is asked again later.
   */
  settle(progress: InteractionProgress): Promise<SettledInteraction>
}
