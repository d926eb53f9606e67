/**
 * Terminology
 * - organization: a client company. Owns API keys, campaigns and everything
 *   its triggers create. Never named in a client request: the key says which.
 * - API key: an organization's credential, with scopes. Stored as a hash only.
 * - operator: the people who run the service, authenticated by the operator
 *   token on /admin/v1. Organization keys are never accepted there.
 * - campaign: what a routing key resolves to, one per channel. A routing key
 *   may name a voice campaign and a WhatsApp campaign at once. A paused
 *   campaign still accepts triggers but starts no attempt until resumed.
 * - contact: a person an organization has triggered outreach to, kept in its
 *   contact directory and found again by the external ids it was triggered
 *   with. A trigger with `contact` creates or updates it; one without may
 *   reach it through an id of a source whose contact is optional.
 * - trigger: one accepted POST /api/v2/triggers. Immutable once recorded.
 * - task: the outreach work a trigger creates; lives until it completes,
 *   with an outcome.
 * - candidate zones: the time zones a task's contact may be in. An attempt
 *   starts only at an instant inside the campaign's window in every one.
 * - interaction: one attempt to converse, a call or a WhatsApp conversation.
 *   A task has one per attempt; an inbound one may answer no task.
 * - conversation: what runs during an interaction (the client's voice app,
 *   an agent, a WhatsApp exchange). It reads its context (the task's ids,
 *   contact and merged context) by the interaction, and reports a result
 *   (domain/conversationResult.ts) that travels on the events with the
 *   client's ids and decides the task's next step.
 * - event: what the service reports to the client (task.completed,
 *   interaction.finalized, interaction.result_added,
 *   interaction.message_received), written in the
 *   transaction of the change.
 * - webhook endpoint: a URL of an organization that receives its events,
 *   signed with the endpoint's secret (Standard Webhooks).
 * - delivery: one event sent to one endpoint, retried until it succeeds or
 *   gives up; each attempt is logged.
 *
 * Timestamps are ISO 8601 strings in UTC with `Z`. JSON documents that are
 * recorded as the client sent them (ids, contact, context) keep the field
 * names of the API.
 */

import type { AttemptPolicy, FallbackSettings, PacingSettings, Provider, ResultSettings, Schedule } from './campaignSettings.ts'
import type { TaskStep } from './fallback.ts'
import type { ConversationResult } from './conversationResult.ts'
import type { ContactCap } from './contactCap.ts'
import type { ComplianceSettings } from './consent.ts'
import type { RecordedDecision } from './contactability.ts'

export const CHANNELS = ['voice', 'whatsapp', 'sms'] as const
export type Channel = (typeof CHANNELS)[number]
export const isChannel = (value: unknown): value is Channel => (CHANNELS as readonly unknown[]).includes(value)

export const SCOPES = [
  'triggers:write',
  'triggers:read',
  'webhooks:manage',
  'suppressions:manage',
  'campaigns:manage',
  'contacts:erase',
  'conversations:read',
  'conversations:write',
  'messages:send',
  'consents:manage',
] as const
export type Scope = (typeof SCOPES)[number]
export const DEFAULT_KEY_SCOPES: readonly Scope[] = ['triggers:write', 'triggers:read']

export type JsonObject = { [key: string]: unknown }

/**
 * What told a contact's candidate zones: the trigger's contact.timezone, the
 * zone on file for the person, the phone number's area, its country, or the
 * campaign's fallback (numbers of no country).
 */
export const ZONE_SOURCES = ['sent', 'on_file', 'phone', 'country', 'fallback'] as const
export type ZoneSource = (typeof ZONE_SOURCES)[number]

/** The zones a contact may be in, and what told them. */
export interface CandidateZones {
  zones: string[]
  source: ZoneSource
}

export interface Organization {
  id: string
  name: string
  createdAt: string
  /** Its own rate limit, as the operator set it: each figure null for the service's default. */
  rateLimit: { perSecond: number | null; burst: number | null }
  /** Days the personal data of its completed tasks is kept; null for the default (DEFAULT_RETENTION_DAYS). */
  retentionDays: number | null
  /** Its cap on attempts to one number across its campaigns; each figure null for no such rule (both: no cap). */
  contactCap: ContactCap
  /** Days after its task completed that a person's call back still lands on it (services/inboundCalls.ts); 0: open tasks only. */
  callbackWindowDays: number
}

export interface ApiKey {
  id: string
  orgId: string
  name: string
  /** Public part of the key, safe to show and log; identifies the key's row. */
  prefix: string
  scopes: Scope[]
  createdAt: string
  revokedAt: string | null
}

export interface Campaign {
  id: string
  orgId: string
  routingKey: string
  channel: Channel
  name: string
  /** Default task context; a trigger's context is merged over it. */
  context: JsonObject
  schedule: Schedule
  attempts: AttemptPolicy
  provider: Provider
  /** Provider settings; credentials are only named (environment variables), never held. */
  providerConfig: JsonObject
  /** Most interactions of the campaign running at once; null for no limit. */
  maxConcurrent: number | null
  /** How long an interaction's report waits for its conversation's result. */
  results: ResultSettings
  /** Its own pace for its sender, over its provider's. */
  pacing: PacingSettings
  /** The step its tasks go on to when its own ends without a reach, on another channel; null for none. */
  fallback: FallbackSettings | null
  /** Its purpose, subject, voice and the consent it requires, as set (domain/consent.ts complianceOf applies the defaults). */
  compliance: ComplianceSettings
  /** When it was paused: no attempt starts while it is. Null while it runs. */
  pausedAt: string | null
  createdAt: string
  updatedAt: string
}

/** One of the client's own ids for the contact; `source` and `type` are lowercased. */
export interface ExternalId {
  source: string
  type: string
  value: string
}

export interface Contact {
  first_name?: string
  last_name?: string
  /** Canonical E.164. */
  phone: string
  email?: string
  /** Canonical BCP 47 tag. */
  language?: string
  /** IANA zone, when the client knows it better than the phone number tells. */
  timezone?: string
}

export const TASK_STATUSES = ['pending', 'in_progress', 'completed'] as const
export type TaskStatus = (typeof TASK_STATUSES)[number]

/** What a trigger records of its request, normalized. */
export interface TriggerContent {
  requestId: string
  ids: ExternalId[]
  /** Null when the trigger left it out, to reach a contact on file. */
  contact: Contact | null
  context: JsonObject
  testMode: boolean
  createdAt: string
  /** The earliest instant of its first attempt, as the client sent it; null when it sent none. */
  notBefore: string | null
  /** When outreach is no longer wanted, as the client sent it; null when it sent none. */
  expiresAt: string | null
}

/** not_permitted: the decision before its attempt blocked it (no consent on file, a registry): nothing was sent. */
export const TASK_OUTCOMES = ['reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out', 'not_permitted'] as const
export type TaskOutcome = (typeof TASK_OUTCOMES)[number]

/**
 * How an interaction ended, by its channel. `voicemail`: a machine answered
 * and nothing was left on it; `voicemail_left`: the campaign's message was
 * left on it after the beep (a Twilio campaign's voicemail policy
 * `leave_message`).
 */
export const INTERACTION_OUTCOMES = {
  voice: ['completed', 'no_answer', 'busy', 'voicemail', 'voicemail_left', 'failed'],
  whatsapp: ['replied', 'read', 'delivered', 'undelivered', 'failed'],
  // `sent`: the carrier took the text and told nothing more (many send no delivery receipt).
  sms: ['replied', 'delivered', 'sent', 'undelivered', 'failed'],
} as const
export type VoiceOutcome = (typeof INTERACTION_OUTCOMES.voice)[number]
export type WhatsAppOutcome = (typeof INTERACTION_OUTCOMES.whatsapp)[number]
export type SmsOutcome = (typeof INTERACTION_OUTCOMES.sms)[number]
export type InteractionOutcome = VoiceOutcome | WhatsAppOutcome | SmsOutcome

export type Direction = 'outbound' | 'inbound'

/**
 * starting: recorded, the provider not yet (or not certainly) asked; active:
 * the provider has it; ended: over, waiting for its conversation's result
 * (the campaign's results.wait_s) before it is reported; finalized: over and
 * reported.
 */
export const INTERACTION_STATUSES = ['starting', 'active', 'ended', 'finalized'] as const
export type InteractionStatus = (typeof INTERACTION_STATUSES)[number]

/** A value of a task's that was not passed on to a conversation (a stream's parameters, an agent's variables), and why. */
export interface LeftOut {
  key: string
  reason: string
}

/**
 * How an interaction was handed to its conversation, and what of its task was
 * left out: a Twilio call when answered (`redirect` to the app's TwiML, or
 * `stream` to an agent's WebSocket with the context as parameters); an agent
 * platform's call when started (`variables`: the task as the agent's
 * variables, domain/agentVariables.ts); a Twilio call whose voicemail
 * greeting ended, taken from its conversation to leave the campaign's
 * message (`voicemail`).
 */
export interface Handoff {
  mode: 'redirect' | 'stream' | 'variables' | 'voicemail'
  at: string
  /** What of the task was not passed, each with why (names only, never values). */
  left_out: LeftOut[]
}

export interface Interaction {
  id: string
  taskId: string | null
  channel: Channel
  provider: Provider
  direction: Direction
  attempt: number | null
  status: InteractionStatus
  outcome: InteractionOutcome | null
  testMode: boolean
  startedAt: string
  endedAt: string | null
  durationS: number | null
  /** The provider's own reference (a call SID, a message id), once the provider has it. */
  providerRef: string | null
  /** Its conversation's result; undefined where it was not read (task lists). */
  result?: ConversationResult | null
  handoff: Handoff | null
  /** The decision that allowed it; undefined where it was not read (task lists), null before decisions were kept and for an inbound one. */
  decision?: RecordedDecision | null
}

/** What a conversation learns of the interaction it runs in: whom it serves and why. */
export interface InteractionContext {
  interaction: Interaction & { result: ConversationResult | null }
  orgId: string
  routingKey: string
  triggerId: string | null
  /** The trigger's ids; none for an interaction that answers no task. */
  ids: ExternalId[]
  /** Whom it reaches: the task's contact with the number reached (the tester's, in test mode); null once erased. */
  contact: { first_name?: string; last_name?: string; language?: string; phone: string } | null
  /** The task's context: the campaign's default merged with the trigger's. */
  context: JsonObject
  /** The contact's candidate zones. */
  timezones: string[]
  /** While it waits for its result (status `ended`): until when. */
  resultDueBy: string | null
  /** When the WhatsApp window the person's latest message opened closes (domain/messagingWindow.ts); null before they have written, and on other channels. */
  windowClosesAt: string | null
  /** The session messages sent to the person on it, oldest first (none on a channel without them). */
  messages: SessionMessage[]
}

/** What became of a session message: handed to the provider (`sending`, no answer yet), its statuses, or `unknown` (no answer: whether it was sent is not known). */
export const SESSION_MESSAGE_STATUSES = ['sending', 'accepted', 'sent', 'delivered', 'read', 'failed', 'unknown'] as const
export type SessionMessageStatus = (typeof SESSION_MESSAGE_STATUSES)[number]

/** A message the client sent the person within their window (POST /api/v2/interactions/{id}/messages). */
export interface SessionMessage {
  id: string
  interactionId: string
  status: SessionMessageStatus
  /** What was sent (channels/sessionMessages.ts); null once the person is erased. */
  content: JsonObject | null
  providerMessageId: string | null
  /** Why it failed, or why its fate is unknown. */
  error: string | null
  createdAt: string
  statusAt: string
}

export interface Task {
  id: string
  orgId: string
  triggerId: string
  campaign: { id: string; routingKey: string; channel: Channel }
  status: TaskStatus
  outcome: TaskOutcome | null
  attempts: number
  /** When the next attempt is due; null once completed or while one runs. */
  nextAttemptAt: string | null
  /** Whom it reaches, as known when its trigger was accepted (the tester, in test mode). */
  contact: Contact
  /** The contact's candidate zones: an attempt starts only inside the campaign's window in every one. */
  timezones: string[]
  /** What told them; null when nothing did and the campaign keeps a zone of its own. */
  timezoneSource: ZoneSource | null
  testMode: boolean
  ids: ExternalId[]
  createdAt: string
  expiresAt: string
  completedAt: string | null
  /** It waits for its paused campaign: no attempt of it starts until the campaign is resumed. */
  campaignPaused: boolean
  /** Pending and held by something other than its window: what, and until when (its next attempt's due time). */
  waiting?: { for: TaskHold; until: string }
  /** The steps it left for a fallback step, oldest first; null when it never fell back. */
  steps: TaskStep[] | null
  /** Its last decision that did not start an attempt: the deferral that holds it, or the block that completed it not_permitted; null otherwise. */
  decision: RecordedDecision | null
  interactions: Interaction[]
}

/**
 * What may hold a pending task past its window's opening (tasks.held_by):
 * its sender's pace, its organization's cap on attempts to one number,
 * its provider, which turned its start away for now (a throttle of its own,
 * or a moment's outage) without spending the attempt, or the law of the
 * number's jurisdictions (calling hours, holidays, a cap per number: the
 * task's decision says which, domain/contactability.ts), or the person's own
 * call back, running (store/inboundCalls.ts).
 */
export const TASK_HOLDS = ['sender', 'contact_cap', 'provider', 'law', 'callback'] as const
export type TaskHold = (typeof TASK_HOLDS)[number]

export interface Trigger extends TriggerContent {
  id: string
  orgId: string
  campaign: { id: string; routingKey: string; channel: Channel }
  task: { id: string; status: TaskStatus }
}

export const EVENT_TYPES = ['task.completed', 'interaction.finalized', 'interaction.result_added', 'interaction.message_received'] as const
export type EventType = (typeof EVENT_TYPES)[number]
/** An event sent to one endpoint on request, to test that it receives: it reports nothing, and no endpoint subscribes to it. */
export const TEST_EVENT_TYPE = 'webhook.test'
/** Every type an event sent may have. */
export type SentEventType = EventType | typeof TEST_EVENT_TYPE

export interface WebhookEndpoint {
  id: string
  orgId: string
  url: string
  events: EventType[]
  enabled: boolean
  /** Why the service disabled it (a 410 from the receiver); null otherwise. */
  disabledReason: string | null
  /** How many webhooks may be in flight to it at once (1 to 50). */
  maxInFlight: number
  createdAt: string
  updatedAt: string
}

/** A system an organization's external ids come from, and what a trigger citing it must carry. */
export interface Source {
  orgId: string
  /** Lowercased. */
  name: string
  /** The id types it allows, lowercased. */
  idTypes: string[]
  /** optional: `contact` may be left out when one of the trigger's ids of this source names a contact on file. */
  contact: 'required' | 'optional'
  /** Context keys a trigger citing it must send. */
  requiredContext: string[]
  createdAt: string
  updatedAt: string
}
