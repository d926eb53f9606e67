/**
 * What providers and clients tell about a task while it lives: a provider's
 * report on an interaction (progress, or its end), a message from a person
 * that answers no running interaction, and a client's cancel (of one task,
 * or of every task of a person by the client's own ids). Interactions
 * end through the settlement, in group commits; every change that clients
 * hear about writes its event in the same transaction.
 */
import type { ProviderReport } from '../channels/channel.ts'
import type { ChannelRegistry } from '../channels/registry.ts'
import type { Provider } from '../domain/campaignSettings.ts'
import { conversationTookPlace } from '../domain/attemptPolicy.ts'
import { contactTurn, type ConversationResult, recordedResult, type TranscriptTurn } from '../domain/conversationResult.ts'
import { ApiError, ValidationFailed, valueError } from '../domain/errors.ts'
import { interactionFinalizedEvent, type MessageMedia, type OrganizationEvent } from '../domain/events.ts'
import { newId } from '../domain/ids.ts'
import type { Campaign, Channel, ExternalId } from '../domain/types.ts'
import { findCampaignsByRoutingKey } from '../store/campaigns.ts'
import type { Database } from '../store/database.ts'
import { insertEvents } from '../store/events.ts'
import {
  finalizeInteractions,
  insertInteraction,
  type InteractionWithConfig,
  keepResultForEnd,
  recordProviderMessage,
  recordProviderStatus,
  recordStarts,
} from '../store/interactions.ts'
import { suppress, type SuppressionReason } from '../store/suppressions.ts'
import { lockOpenTasksByExternalIds, lockTasks } from '../store/tasks.ts'
import type { ServiceMetrics } from './metrics.ts'
import { completeAllAs, completeAndReport, messagesReceived, type Settlement } from './settlement.ts'
import type { Wake } from './wake.ts'

export class TaskLifecycle {
  readonly #db: Database
  readonly #channels: ChannelRegistry
  readonly #settlement: Settlement
  readonly #wake: Wake
  readonly #now: () => number
  readonly #metrics: ServiceMetrics

  constructor(deps: { db: Database; channels: ChannelRegistry; settlement: Settlement; wake: Wake; now: () => number; metrics: ServiceMetrics }) {
    this.#db = deps.db
    this.#channels = deps.channels
    this.#settlement = deps.settlement
    this.#wake = deps.wake
    this.#now = deps.now
    this.#metrics = deps.metrics
  }

  /**
   * A provider's report on an interaction, verified by the caller. Progress is
   * kept as the provider's status; a final report ends it, with the
   * conversation's result if it carries one and the conversation took place;
   * a result reported after the end ends the interaction's wait for it (one
   * reported before the end is kept for it). A report for an interaction
   * whose start was never confirmed (the worker died, or the answer was lost)
   * confirms it: the provider has it after all. One for an interaction
   * already over (finalized) changes nothing, but an opt-out it carries.
   */
  async report(interaction: InteractionWithConfig, report: ProviderReport): Promise<void> {
    // A final report confirms the start in the statement that ends it (the interaction takes its reference there):
    // a platform that reports as soon as the call is created (Vapi's end-of-call-report, end to end) finds it starting.
    const confirmsStart = interaction.status === 'starting'
    if (confirmsStart && report.kind !== 'final') {
      const channel = this.#channels.get(interaction.provider, interaction.channel)
      const settleAt = this.#now() + channel.settleAfterMs(interaction.providerConfig)
      await recordStarts(this.#db, [{ id: interaction.id, providerRef: report.providerRef, settleAt }])
    }
    if (report.kind === 'progress') await recordProviderStatus(this.#db, interaction.id, report.status)
    else if (report.kind === 'final') {
      const optOut = report.optedOut ? { orgId: interaction.orgId, phone: interaction.toPhone, reason: 'provider' as const } : undefined
      const result = report.result !== undefined && conversationTookPlace(report.outcome) ? recordedResult(report.result, this.#now()) : undefined
      await this.#settlement.end({
        interactionId: interaction.id,
        outcome: report.outcome,
        at: report.at,
        durationS: report.durationS,
        permanent: report.permanent,
        notOnChannel: report.notOnChannel,
        optOut,
        result,
        providerRef: confirmsStart ? report.providerRef : undefined,
      })
    } else await this.#reportResult(interaction, recordedResult(report.result, this.#now()), report.at)
  }

  /**
   * A result a provider reports on its own: it ends the wait of an interaction
   * that ended for it; one not ended yet keeps it for its end (unless it ends
   * meanwhile: then it is the end of its wait); a finalized one is left as it is.
   */
  async #reportResult(interaction: InteractionWithConfig, result: ConversationResult, at: number): Promise<void> {
    if (interaction.status === 'finalized') return
    if (interaction.status !== 'ended' && (await keepResultForEnd(this.#db, interaction.id, result))) return
    await this.#settlement.end({ interactionId: interaction.id, closesWait: true, at, result })
  }

  /**
   * A message a person sent to the number of `senders`, landed where it
   * answers: on `answered`, the conversation it replies to, while it runs
   * (added to its transcript: one that waits for its result waits on,
   * unless the message asks to stop); else as an inbound interaction of
   * that conversation's campaign and task (of the first sender and no task
   * when it answers none). `optOut`: why it suppresses the number, when it
   * asks to stop.
   */
  async landMessage(senders: readonly Campaign[], answered: InteractionWithConfig | undefined, message: PersonMessage, optOut: SuppressionReason | undefined): Promise<void> {
    const campaign = senders.find((candidate) => candidate.id === answered?.campaignId) ?? senders[0]!
    if (answered === undefined || answered.status === 'finalized') return this.recordInbound(campaign, message, answered?.taskId ?? null, optOut)
    await this.#settlement.end({
      interactionId: answered.id,
      outcome: 'replied',
      at: message.at,
      message: { provider: message.provider, id: message.id, text: message.text, media: message.media },
      turns: turnsOf(message) ?? undefined,
      optOut: optOut === undefined ? undefined : { orgId: campaign.orgId, phone: message.from, reason: optOut },
      closesWait: optOut !== undefined,
    })
  }

  /**
   * A message from a person that answers no running interaction: recorded as
   * a finalized inbound interaction of the campaign whose number it reached,
   * with the task it answers when there is one (a reply after its message's
   * conversation was settled: the person is reached after all), and
   * reported. The provider's message id makes a repeated delivery a no-op.
   * `optOut`: why the message suppresses the number, when it asks to stop.
   */
  async recordInbound(campaign: Campaign, message: PersonMessage, taskId: string | null, optOut: SuppressionReason | undefined): Promise<void> {
    const now = this.#now()
    const interactionId = newId('interaction', now)
    const committed = await this.#db.transaction(async (tx) => {
      if (!(await recordProviderMessage(tx, message.provider, message.id, interactionId, now))) return undefined
      const task = taskId === null ? undefined : (await lockTasks(tx, [taskId])).get(taskId)
      await insertInteraction(tx, {
        id: interactionId,
        orgId: campaign.orgId,
        taskId: task?.id ?? null,
        campaignId: campaign.id,
        channel: campaign.channel,
        provider: campaign.provider,
        providerConfig: campaign.providerConfig,
        direction: 'inbound',
        attempt: null,
        toPhone: message.from,
        testMode: task?.testMode ?? false,
        settleAt: null,
        startedBy: null,
        startedAt: message.at,
      })
      const [finalized] = await finalizeInteractions(
        tx,
        [
          {
            id: interactionId,
            outcome: 'replied',
            endedAt: message.at,
            durationS: 0,
            onlyIfStarting: false,
            providerRef: null,
            result: null,
            turns: turnsOf(message),
            mayWaitForResult: false,
            closesWait: false,
          },
        ],
        now,
      )
      const { interaction } = finalized!
      const received = { interactionId, message: { id: message.id, text: message.text ?? null, media: message.media ?? [], at: message.at } }
      const events: OrganizationEvent[] = [
        ...(await messagesReceived(tx, [received], new Map([[interactionId, finalized!]]), now)),
        { orgId: campaign.orgId, event: interactionFinalizedEvent(interaction, now) },
      ]
      if (optOut !== undefined) await suppress(tx, campaign.orgId, message.from, optOut, now)
      const open = task !== undefined && task.status !== 'completed'
      const tasks = open ? await completeAndReport(tx, [{ task, outcome: optOut !== undefined ? 'opted_out' : 'reached' }], now, events) : []
      await insertEvents(tx, events)
      return { tasks, interactions: [interaction] }
    })
    if (committed === undefined) return
    this.#metrics.countCommitted(committed)
    this.#wake.deliveries()
  }

  /**
   * Cancels a task that has not completed: no further attempt starts. An
   * interaction already running finishes and is reported, but moves the task
   * no further.
   */
  async cancel(orgId: string, taskId: string): Promise<void> {
    const cancelled = await this.#db.transaction(async (tx) => {
      const task = (await lockTasks(tx, [taskId], orgId)).get(taskId)
      if (task === undefined) throw new ApiError('not_found', `No task ${taskId} exists.`)
      if (task.status === 'completed') throw new ApiError('conflict', `Task ${taskId} has already completed; it cannot be cancelled.`)
      return completeAllAs(tx, [task], 'cancelled', this.#now())
    })
    this.#metrics.countCommitted({ tasks: cancelled })
    this.#wake.deliveries()
  }

  /**
   * Cancels every task of the organization not yet completed that one of
   * these external ids names (only those of the routing key's campaigns, if
   * one is given), as {@link cancel} does each: the person has withdrawn.
   * Returns the tasks cancelled, in id order.
   */
  async cancelByExternalIds(orgId: string, externalIds: readonly ExternalId[], routingKey?: string): Promise<CancelledTask[]> {
    const now = this.#now()
    const { cancelled, completed } = await this.#db.transaction(async (tx) => {
      if (routingKey !== undefined && (await findCampaignsByRoutingKey(tx, orgId, routingKey)).length === 0) {
        throw new ValidationFailed([valueError(['body', 'campaign'], routingKey, `no campaign has the routing key '${routingKey}'`)])
      }
      const tasks = await lockOpenTasksByExternalIds(tx, orgId, externalIds, routingKey)
      return { cancelled: tasks, completed: await completeAllAs(tx, tasks, 'cancelled', now) }
    })
    this.#metrics.countCommitted({ tasks: completed })
    if (cancelled.length > 0) this.#wake.deliveries()
    const completedAt = new Date(now).toISOString()
    return cancelled.map((task) => ({ id: task.id, triggerId: task.triggerId, campaign: task.campaign, ids: task.ids, completedAt }))
  }
}

/** A message a person sent, as its provider delivered it. */
export interface PersonMessage {
  provider: Provider
  /** The provider's id of it: it is counted once however often it is delivered. */
  id: string
  /** E.164. */
  from: string
  at: number
  /** What they wrote (a text, or the label of a button they pressed), when it is text. */
  text: string | undefined
  /** What it carried besides text, as the provider's references. */
  media?: MessageMedia[]
}

/**
 * A message as the conversation's transcript holds it: its text, or, for a
 * file without a caption, what it was (`[image]`), so that it is in the
 * conversation's story, and lands on one that waits for its result, as text does.
 */
export function turnsOf(message: PersonMessage): TranscriptTurn[] | null {
  const files = (message.media ?? []).map((file) => `[${file.type}]`).join(' ')
  const said = message.text ?? (files === '' ? undefined : files)
  return said === undefined ? null : [contactTurn(said, message.at)]
}

/** A task cancelled by its external ids, as the client is told of it. */
export interface CancelledTask {
  id: string
  triggerId: string
  campaign: { routingKey: string; channel: Channel }
  ids: ExternalId[]
  completedAt: string
}
