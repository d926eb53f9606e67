/**
 * What happens to a task after its trigger: each due task is checked against
 * its campaign's schedule in every zone its contact may be in, and either
 * rescheduled to the next instant open in all of them or started as an
 * interaction; each finished interaction is finalized and the attempt policy
 * then retries the task or completes it.
 * Every change that clients hear about writes its event in the same
 * transaction.
 *
 * Never twice: an attempt is recorded (interaction row, UNIQUE per task and
 * attempt, conditional on this worker's claim) and committed before the
 * provider is asked to start it, and a start whose result is unknown is
 * settled, never repeated.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { ProviderReport } from '../channels/channel.ts'
import type { ChannelRegistry } from '../channels/registry.ts'
import type { AttemptPolicy, Provider, RetryOutcome } from '../domain/campaignSettings.ts'
import { ApiError } from '../domain/errors.ts'
import { newId } from '../domain/ids.ts'
import { nextOpening, scheduleZones } from '../domain/schedule.ts'
import type { Campaign, InteractionOutcome, TaskOutcome } from '../domain/types.ts'
import type { Database, Queryable } from '../store/database.ts'
import { insertEvent } from '../store/events.ts'
import { isSuppressed, suppress, type SuppressionReason } from '../store/suppressions.ts'
import {
  awaitConfirmation,
  claimInteractionsToSettle,
  type FinalizedInteraction,
  finalizeInteraction,
  insertInteraction,
  type InteractionWithConfig,
  markStarted,
  recordProviderMessage,
  recordProviderStatus,
} from '../store/interactions.ts'
import {
  beginAttempt,
  type ClaimedTask,
  claimDueTasks,
  completeTask,
  countRunningInteractions,
  lockTask,
  releaseTask,
  scheduleNextAttempt,
  type TaskForUpdate,
} from '../store/tasks.ts'

/** How long a claim on a due task holds; a dispatch takes milliseconds, a provider call seconds at most. */
const TASK_LEASE_MS = 60_000
/**
 * How long a recorded attempt may stay unconfirmed before it is settled: the
 * provider's timeout and then some. A worker that dies before asking the
 * provider leaves it so, and it is then settled as failed.
 */
const START_SETTLE_MS = 120_000
/** How long past its settle time a provider that cannot tell an interaction's outcome is asked again before it counts as failed. */
const SETTLE_GIVE_UP_MS = 3_600_000
/** How long a worker may take to settle an interaction before another may. */
const SETTLE_LEASE_MS = 60_000
/** A campaign at its max_concurrent looks again after this long, or when one of its interactions ends. */
const CAPACITY_RETRY_MS = 1_000

/** Outcomes that mean the person was reached: the task is done. */
const REACHED: ReadonlySet<InteractionOutcome> = new Set(['completed', 'replied'])

/** The retry delay that applies after each interaction outcome that is not a reach. */
const RETRY_DELAY_FOR: Record<Exclude<InteractionOutcome, 'completed' | 'replied'>, RetryOutcome> = {
  no_answer: 'no_answer',
  busy: 'busy',
  voicemail: 'voicemail',
  failed: 'failed',
  // A message that was delivered or read but not answered is an unanswered call.
  delivered: 'no_answer',
  read: 'no_answer',
  undelivered: 'failed',
}

export interface TaskLifecycleDeps {
  db: Database
  channels: ChannelRegistry
  now: () => number
  log: FastifyBaseLogger
  /**
   * Told after each change that wrote events (so they are delivered at once),
   * among them every interaction that ended (a campaign waiting on
   * max_concurrent has room again).
   */
  onEventsWritten: () => void
}

export interface DispatchSummary {
  claimed: number
  started: number
  rescheduled: number
  completed: number
  failed: number
}

/** What a claimed task's dispatch decided, in the transaction that records an attempt. */
type Step =
  | { kind: 'complete'; outcome: TaskOutcome }
  | { kind: 'release'; dueAt: number }
  | { kind: 'claim lost' }
  | { kind: 'start'; attempt: number }

export class TaskLifecycle {
  readonly #db: Database
  readonly #channels: ChannelRegistry
  readonly #now: () => number
  readonly #onEventsWritten: () => void
  readonly #log: FastifyBaseLogger

  constructor(deps: TaskLifecycleDeps) {
    this.#db = deps.db
    this.#channels = deps.channels
    this.#now = deps.now
    this.#onEventsWritten = deps.onEventsWritten
    this.#log = deps.log
  }

  /** Claims up to `limit` due tasks for `worker` and takes each one step further. */
  async dispatchDue(worker: string, limit: number): Promise<DispatchSummary> {
    const now = this.#now()
    const claimed = await claimDueTasks(this.#db, worker, now, now + TASK_LEASE_MS, limit)
    const summary: DispatchSummary = { claimed: claimed.length, started: 0, rescheduled: 0, completed: 0, failed: 0 }
    // Every dispatch runs to its end, whatever another's fate: none is left running unwatched.
    const results = await Promise.allSettled(claimed.map((task) => this.#dispatch(worker, task)))
    results.forEach((result, index) => {
      if (result.status === 'fulfilled') summary[result.value]++
      else {
        summary.failed++
        this.#log.error({ err: result.reason, task: claimed[index]!.id }, 'dispatch failed; the task is due again when its claim runs out')
      }
    })
    return summary
  }

  async #dispatch(worker: string, task: ClaimedTask): Promise<'started' | 'rescheduled' | 'completed'> {
    const zones = scheduleZones(task.campaign.schedule, task.timezones)
    const interactionId = newId('interaction', this.#now())
    const step = await this.#db.transaction(async (tx): Promise<Step> => {
      // Decided at the moment the attempt is recorded, not when the task was
      // claimed: a wait for the pool or the campaign's lock must not carry a
      // call past the end of a window.
      const now = this.#now()
      // The person asked not to be contacted (as the claim found): the task closes at once, whatever the hour.
      if (task.suppressed) return { kind: 'complete', outcome: 'opted_out' }
      if (now >= task.expiresAt) return { kind: 'complete', outcome: 'expired' }
      // The trigger was accepted with zones; only a later change of the schedule can leave none.
      if (zones.length === 0) return { kind: 'complete', outcome: 'failed' }
      // No attempt can start before the task expires: it stays pending until then, so it expires on time.
      const opening = nextOpening(task.campaign.schedule, zones, now, task.expiresAt)
      if (opening === null) return { kind: 'release', dueAt: task.expiresAt }
      if (opening > now) return { kind: 'release', dueAt: opening }
      const limit = task.campaign.maxConcurrent
      if (limit !== null && (await countRunningInteractions(tx, task.campaign.id)) >= limit) {
        return { kind: 'release', dueAt: now + CAPACITY_RETRY_MS }
      }
      const attempt = await beginAttempt(tx, task.id, worker, now)
      if (attempt === undefined) return { kind: 'claim lost' }
      await insertInteraction(tx, {
        id: interactionId,
        orgId: task.orgId,
        taskId: task.id,
        campaignId: task.campaign.id,
        channel: task.campaign.channel,
        provider: task.campaign.provider,
        providerConfig: task.campaign.providerConfig,
        direction: 'outbound',
        attempt,
        toPhone: task.contact.phone,
        testMode: task.testMode,
        settleAt: now + START_SETTLE_MS,
        startedBy: worker,
        startedAt: now,
      })
      return { kind: 'start', attempt }
    })
    switch (step.kind) {
      case 'complete':
        await this.#completeClaimed(task, step.outcome)
        return 'completed'
      case 'release':
        await releaseTask(this.#db, task.id, worker, step.dueAt, this.#now())
        return 'rescheduled'
      case 'claim lost':
        return 'rescheduled'
      case 'start':
        await this.#start(task, interactionId, step.attempt)
        return 'started'
    }
  }

  async #start(task: ClaimedTask, interactionId: string, attempt: number): Promise<void> {
    const channel = this.#channels.get(task.campaign.provider, task.campaign.channel)
    const config = task.campaign.providerConfig
    // Suppressed since the attempt was recorded (a STOP in another conversation, the API): it is not made.
    if (await isSuppressed(this.#db, task.orgId, task.contact.phone)) {
      const optOut = { orgId: task.orgId, phone: task.contact.phone, reason: 'manual' as const }
      await this.finalize(interactionId, 'failed', { at: this.#now(), durationS: 0, optOut })
      return
    }
    let result
    try {
      result = await channel.start({
        interactionId,
        taskId: task.id,
        attempt,
        to: task.contact.phone,
        testMode: task.testMode,
        context: task.context,
        language: task.contact.language,
        config,
      })
    } catch (error) {
      // The provider may have started it: its own report can still confirm it; if none comes
      // by the time the attempt would be over, it is settled as failed. Never started again.
      this.#log.warn({ err: error, interaction: interactionId }, 'start uncertain; waiting for the provider to report')
      await awaitConfirmation(this.#db, interactionId, this.#now() + channel.settleAfterMs(config))
      return
    }
    if (result.kind === 'refused') {
      this.#log.warn({ interaction: interactionId, reason: result.reason, permanent: result.permanent }, 'start refused by the provider')
      await this.finalize(interactionId, 'failed', { at: this.#now(), durationS: 0, permanent: result.permanent })
      return
    }
    await markStarted(this.#db, interactionId, result.providerRef, this.#now() + channel.settleAfterMs(config))
  }

  async #completeClaimed(task: ClaimedTask, outcome: TaskOutcome): Promise<void> {
    await this.#db.transaction(async (tx) => {
      const locked = await lockTask(tx, task.id)
      if (locked !== undefined && locked.status === 'pending') await this.#complete(tx, locked, outcome)
    })
    this.#onEventsWritten()
  }

  /** Settles up to `limit` interactions that had no final word by their settle time. */
  async settleDue(limit: number): Promise<number> {
    const due = await claimInteractionsToSettle(this.#db, this.#now(), SETTLE_LEASE_MS, limit)
    await Promise.all(due.map((interaction) => this.#settle(interaction)))
    return due.length
  }

  async #settle(interaction: InteractionWithConfig): Promise<void> {
    const channel = this.#channels.get(interaction.provider, interaction.channel)
    const confirmed = interaction.status !== 'starting'
    const progress = {
      // A start never confirmed has no reference to ask about.
      providerRef: confirmed ? interaction.providerRef : null,
      providerStatus: interaction.providerStatus,
      attempt: interaction.attempt ?? 1,
      config: interaction.providerConfig,
    }
    let outcome: InteractionOutcome
    try {
      outcome = await channel.settle(progress)
    } catch (error) {
      // The provider cannot tell now: asked again when this claim runs out, for a while, then failed.
      const giveUpAt = interaction.startedAt + channel.settleAfterMs(interaction.providerConfig) + SETTLE_GIVE_UP_MS
      if (this.#now() < giveUpAt) {
        this.#log.warn({ err: error, interaction: interaction.id }, 'settling failed; asking again later')
        return
      }
      outcome = 'failed'
    }
    // A provider's report may have confirmed the start meanwhile: then the provider has it, and its word will come.
    await this.finalize(interaction.id, outcome, { at: this.#now(), durationS: confirmed ? undefined : 0, onlyIfStarting: !confirmed })
  }

  /**
   * A provider's report on an interaction, verified by the caller. Progress is
   * kept as the provider's status; a final report finalizes. A report for an
   * interaction whose start was never confirmed (the worker died, or the
   * answer was lost) confirms it: the provider has it after all. One for an
   * interaction already over changes nothing, but an opt-out it carries.
   */
  async report(interaction: InteractionWithConfig, report: ProviderReport): Promise<void> {
    if (interaction.status === 'starting') {
      const channel = this.#channels.get(interaction.provider, interaction.channel)
      const startedAt = this.#now()
      await markStarted(this.#db, interaction.id, report.providerRef, startedAt + channel.settleAfterMs(interaction.providerConfig))
    }
    if (report.kind === 'progress') await recordProviderStatus(this.#db, interaction.id, report.status)
    else {
      const optOut = report.optedOut ? { orgId: interaction.orgId, phone: interaction.toPhone, reason: 'provider' as const } : undefined
      await this.finalize(interaction.id, report.outcome, { at: report.at, durationS: report.durationS, optOut })
    }
  }

  /**
   * A message from a person that answers no running interaction: recorded as
   * a finalized inbound interaction of the campaign whose number it reached,
   * with the task it answers when there is one (a reply after its message's
   * conversation was settled: the person is reached after all), and
   * reported. The provider's message id makes a repeated delivery a no-op.
   */
  async recordInbound(
    campaign: Campaign,
    message: { provider: Provider; id: string; from: string; at: number },
    taskId: string | null,
    optOut: boolean,
  ): Promise<void> {
    const now = this.#now()
    const interactionId = newId('interaction', now)
    await this.#db.transaction(async (tx) => {
      if (!(await recordProviderMessage(tx, message.provider, message.id, now))) return
      const task = taskId === null ? undefined : await lockTask(tx, taskId)
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
      const interaction = (await finalizeInteraction(tx, interactionId, 'replied', message.at, 0))!
      await insertEvent(tx, campaign.orgId, interactionFinalizedEvent(interaction, now))
      if (optOut) await suppress(tx, campaign.orgId, message.from, 'reply', now)
      if (task !== undefined && task.status !== 'completed') await this.#complete(tx, task, optOut ? 'opted_out' : 'reached')
    })
    this.#onEventsWritten()
  }

  /**
   * Ends an interaction with its outcome, reports it, and moves its task on:
   * done when reached, failed on a permanent refusal, unreachable when
   * attempts run out, otherwise due again at the later of the retry delay
   * and the next opening (completing as expired if that is too late). A
   * repeated report of an interaction already over changes nothing.
   */
  async finalize(
    interactionId: string,
    outcome: InteractionOutcome,
    options: {
      at: number
      durationS?: number
      permanent?: boolean
      /** Only if the start is still unconfirmed (a settlement that asked the provider nothing). */
      onlyIfStarting?: boolean
      /** The provider's message that says so (a reply): counted once however often it is delivered. */
      message?: { provider: Provider; id: string }
      /**
       * The person opted out (wrote STOP, or the provider says so): the number
       * is suppressed even if the interaction was over already, and its task closes.
       */
      optOut?: { orgId: string; phone: string; reason: SuppressionReason }
    },
  ): Promise<boolean> {
    const finalized = await this.#db.transaction(async (tx) => {
      if (options.message !== undefined && !(await recordProviderMessage(tx, options.message.provider, options.message.id, this.#now()))) {
        return false
      }
      const { at, durationS, onlyIfStarting, optOut } = options
      if (optOut !== undefined) await suppress(tx, optOut.orgId, optOut.phone, optOut.reason, this.#now())
      const interaction = await finalizeInteraction(tx, interactionId, outcome, at, durationS ?? null, onlyIfStarting)
      if (interaction === undefined) return false
      await insertEvent(tx, interaction.orgId, interactionFinalizedEvent(interaction, this.#now()))
      if (interaction.taskId !== null) await this.#afterInteraction(tx, interaction, options.permanent === true, optOut !== undefined)
      return true
    })
    if (finalized) this.#onEventsWritten()
    return finalized
  }

  async #afterInteraction(tx: Queryable, interaction: FinalizedInteraction, permanent: boolean, optedOut: boolean): Promise<void> {
    const task = await lockTask(tx, interaction.taskId!)
    // Cancelled (or otherwise completed) while the interaction ran: nothing follows.
    if (task === undefined || task.status === 'completed') return
    const now = this.#now()
    const policy: AttemptPolicy = task.campaign.attempts
    if (optedOut) return this.#complete(tx, task, 'opted_out')
    if (REACHED.has(interaction.outcome)) return this.#complete(tx, task, 'reached')
    if (permanent) return this.#complete(tx, task, 'failed')
    if (task.attempts >= policy.max) return this.#complete(tx, task, 'unreachable')
    const delayS = policy.retry_delays_s[RETRY_DELAY_FOR[interaction.outcome as keyof typeof RETRY_DELAY_FOR]]
    const earliest = Date.parse(interaction.endedAt) + delayS * 1000
    const zones = scheduleZones(task.campaign.schedule, task.timezones)
    const opening = zones.length === 0 ? null : nextOpening(task.campaign.schedule, zones, earliest, task.expiresAt)
    if (opening === null) {
      // No attempt can start before the task expires: it stays pending until then, so it expires on time.
      await scheduleNextAttempt(tx, task.id, Math.max(task.expiresAt, now), now)
      return
    }
    await scheduleNextAttempt(tx, task.id, opening, now)
  }

  async #complete(tx: Queryable, task: TaskForUpdate, outcome: TaskOutcome): Promise<void> {
    const now = this.#now()
    if (!(await completeTask(tx, task.id, outcome, now))) return
    await insertEvent(tx, task.orgId, {
      id: newId('event', now),
      type: 'task.completed',
      timestamp: new Date(now).toISOString(),
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
        completed_at: new Date(now).toISOString(),
      },
    })
  }

  /**
   * Cancels a task that has not completed: no further attempt starts. An
   * interaction already running finishes and is reported, but moves the task
   * no further.
   */
  async cancel(orgId: string, taskId: string): Promise<void> {
    await this.#db.transaction(async (tx) => {
      const task = await lockTask(tx, taskId, orgId)
      if (task === undefined) throw new ApiError('not_found', `No task ${taskId} exists.`)
      if (task.status === 'completed') throw new ApiError('conflict', `Task ${taskId} has already completed; it cannot be cancelled.`)
      await this.#complete(tx, task, 'cancelled')
    })
    this.#onEventsWritten()
  }
}

function interactionFinalizedEvent(interaction: FinalizedInteraction, now: number) {
  const startedAt = Date.parse(interaction.startedAt)
  return {
    id: newId('event', now),
    type: 'interaction.finalized' as const,
    timestamp: new Date(now).toISOString(),
    data: {
      interaction_id: interaction.id,
      task_id: interaction.taskId,
      trigger_id: interaction.triggerId,
      campaign: interaction.routingKey,
      channel: interaction.channel,
      direction: interaction.direction,
      attempt: interaction.attempt,
      outcome: interaction.outcome,
      started_at: interaction.startedAt,
      ended_at: interaction.endedAt,
      duration_s: interaction.durationS ?? Math.round((Date.parse(interaction.endedAt) - startedAt) / 1000),
      test_mode: interaction.testMode,
      ...(interaction.taskId !== null ? { ids: interaction.ids ?? [] } : {}),
    },
  }
}
