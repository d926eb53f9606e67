/**
 * The events clients hear about, exactly as they are sent: the webhook body
 * and the events API's items. Built here from what the lifecycle knows, so
 * that the contract lives in one place and in the types.
 */
import { DateTime } from 'luxon'
import { type Channel, type Direction, type ExternalId, type InteractionOutcome, type SentEventType, type TaskOutcome, TEST_EVENT_TYPE } from './types.ts'
import type { Provider } from './campaignSettings.ts'
import type { ConversationResult } from './conversationResult.ts'
import type { RecordedDecision } from './contactability.ts'
import { newId } from './ids.ts'
import { interactionDurationS } from './interactionDuration.ts'
import { stepsOfCompletedTask, type TaskStep } from './fallback.ts'

/** An event exactly as it is sent: the webhook body. */
export interface OutboxEvent {
  id: string
  type: SentEventType
  timestamp: string
  data: Record<string, unknown>
}

/** An event with the organization it belongs to, as the outbox stores it. */
export interface OrganizationEvent {
  orgId: string
  event: OutboxEvent
}

/** What a task.completed event reports of its task. */
export interface CompletedTask {
  id: string
  orgId: string
  triggerId: string
  attempts: number
  testMode: boolean
  ids: ExternalId[]
  campaign: { id: string; routingKey: string; channel: Channel }
  /** The steps it left for a fallback step, oldest first; null (or absent) when it never fell back. */
  steps?: TaskStep[] | null
}

/** A task completed, with the outcome it completed with and the result of the interaction that completed it (none for a cancel, an expiry). */
export interface TaskCompletion {
  task: CompletedTask
  outcome: TaskOutcome
  result?: ConversationResult | null
  /** The decision that blocked it, for a task completed not_permitted (task.completed carries each task's last decision: completeTasks). */
  decision?: RecordedDecision
}

export function taskCompletedEvent(
  task: CompletedTask,
  outcome: TaskOutcome,
  now: number,
  result: ConversationResult | null = null,
  decision: RecordedDecision | null = null,
): OutboxEvent {
  const at = new Date(now).toISOString()
  const steps = stepsOfCompletedTask(task, outcome)
  return {
    id: newId('event', now),
    type: 'task.completed',
    timestamp: at,
    data: {
      task_id: task.id,
      trigger_id: task.triggerId,
      campaign: task.campaign.routingKey,
      channel: task.campaign.channel,
      status: 'completed',
      outcome,
      attempts: task.attempts,
      test_mode: task.testMode,
      ids: task.ids,
      completed_at: at,
      result,
      // Only for a task that fell back: every other task.completed stays as it was.
      ...(steps === undefined ? {} : { steps }),
      // Its last decision: why it was called (the one that allowed its last attempt), or why not (the block, the deferral it expired under).
      decision,
    },
  }
}

/** What an interaction.finalized event reports, read as the interaction is finalized. */
export interface FinalizedInteraction {
  id: string
  orgId: string
  campaignId: string
  /** The person's phone. */
  toPhone: string
  taskId: string | null
  triggerId: string | null
  routingKey: string
  channel: Channel
  /** Not in the event; counted by it (services/metrics.ts). */
  provider: Provider
  direction: Direction
  attempt: number | null
  outcome: InteractionOutcome
  testMode: boolean
  startedAt: string
  endedAt: string
  durationS: number | null
  ids: ExternalId[] | null
  /** Its conversation's result; null when none came. */
  result: ConversationResult | null
  /** The zone its task's schedule is read in first (the campaign's, or the person's first candidate): its local time; null without a task. */
  localZone: string | null
}

/** An interaction as the events about it name it. */
type ReportedInteraction = Pick<FinalizedInteraction, 'id' | 'taskId' | 'triggerId' | 'routingKey' | 'channel' | 'direction' | 'attempt' | 'outcome' | 'testMode' | 'ids'>

/** What every event about an interaction says of it: which it is, of which task, trigger and campaign, how it ended, and the client's ids when it has a task. */
function aboutInteraction(interaction: ReportedInteraction) {
  return {
    interaction_id: interaction.id,
    task_id: interaction.taskId,
    trigger_id: interaction.triggerId,
    campaign: interaction.routingKey,
    channel: interaction.channel,
    direction: interaction.direction,
    attempt: interaction.attempt,
    outcome: interaction.outcome,
    test_mode: interaction.testMode,
    ...(interaction.taskId !== null ? { ids: interaction.ids ?? [] } : {}),
  }
}

export function interactionFinalizedEvent(interaction: FinalizedInteraction, now: number): OutboxEvent {
  return {
    id: newId('event', now),
    type: 'interaction.finalized',
    timestamp: new Date(now).toISOString(),
    data: {
      ...aboutInteraction(interaction),
      started_at: interaction.startedAt,
      ...localStart(interaction),
      ended_at: interaction.endedAt,
      duration_s: interactionDurationS(interaction),
      result: interaction.result,
    },
  }
}

/** Its start in the person's local time, as the hour of the day its reach is counted under (domain/reachCounts.ts). */
function localStart(interaction: Pick<FinalizedInteraction, 'startedAt' | 'localZone'>) {
  const zone = interaction.localZone
  return {
    timezone: zone,
    started_at_local: zone === null ? null : DateTime.fromISO(interaction.startedAt, { zone }).toISO({ includeOffset: true }),
  }
}

/**
 * The result of an interaction whose interaction.finalized was written
 * without one (it came after the campaign's results.wait_s): the
 * interaction as that event named it, and the result. An interaction reports
 * at most one result, on one of the two events.
 */
export function interactionResultAddedEvent(interaction: ReportedInteraction & { result: ConversationResult }, now: number): OutboxEvent {
  return {
    id: newId('event', now),
    type: 'interaction.result_added',
    timestamp: new Date(now).toISOString(),
    data: { ...aboutInteraction(interaction), result: interaction.result },
  }
}

/** A message the person sent, as interaction.message_received reports it. */
export interface ReceivedMessage {
  /** The provider's id of it (WhatsApp's wamid): the same message delivered twice is reported once. */
  id: string
  /** What they wrote (a text, or the label of a button or list row they chose); null for a message without text. */
  text: string | null
  /** What it carried besides text (an image, a document...), each by the provider's reference to fetch it by. */
  media: MessageMedia[]
  at: number
}

/**
 * A file a person sent, as a reference the client fetches it by from the
 * provider with the campaign's credentials (the service keeps no copy):
 * WhatsApp's media id (Graph API GET /{media-id}), or Twilio's MediaUrl.
 */
export interface MessageMedia {
  /** image, video, audio, document or sticker (WhatsApp's types); a Twilio MMS file's by its content type. */
  type: string
  ref: string
  mime_type: string | null
}

/**
 * A message from the person, on the interaction it landed on, as it lands:
 * the conversation's other side (the client's agent, a person) hears of it
 * with the task's ids, and of the window it opened (domain/messagingWindow.ts:
 * until when any message, not only a template, may be sent; null on a
 * channel without one).
 */
export function interactionMessageReceivedEvent(interaction: ReportedInteraction, message: ReceivedMessage, windowClosesAt: number | null, now: number): OutboxEvent {
  return {
    id: newId('event', now),
    type: 'interaction.message_received',
    timestamp: new Date(now).toISOString(),
    data: {
      ...aboutInteraction(interaction),
      message: { id: message.id, text: message.text, media: message.media, received_at: new Date(message.at).toISOString() },
      window_closes_at: windowClosesAt === null ? null : new Date(windowClosesAt).toISOString(),
    },
  }
}

/** A webhook.test event, for one endpoint: signed and sent as any other, so that a receiver's handling and its check of signatures can be tried. */
export function webhookTestEvent(endpointId: string, now: number): OutboxEvent {
  return {
    id: newId('event', now),
    type: TEST_EVENT_TYPE,
    timestamp: new Date(now).toISOString(),
    data: { endpoint_id: endpointId, message: 'A test event, sent on request. It reports nothing about any task; answer it with a 2xx.' },
  }
}
