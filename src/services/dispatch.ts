/**
 * Dispatch, the worker side of a task's life: due tasks are taken in
 * batches, in a transaction that locks them, decides each in memory (its
 * window in every zone its contact may be in, its expiry, the suppression
 * list, the decision of the law and consent (services/lawChecks.ts), its
 * organization's cap, its campaign's max_concurrent, its sender's pace) and records every attempt of the
 * batch in one statement before it commits; only then are the providers
 * asked, concurrently. What they answer is recorded in batches too.
 * Interactions that have had no final word by their settle time are settled
 * here, in batches, through the settlement, and so are those whose wait for
 * their conversation's result has run out; so is an attempt whose settle
 * time has come by the time its start is confirmed, there and then.
 *
 * Never twice: an attempt is recorded (interaction row, UNIQUE per task and
 * attempt, on a task this transaction holds) and committed before the
 * provider is asked to start it, and a start whose result is unknown is
 * settled, never repeated. A start the provider deferred (it certainly did
 * not start it) is withdrawn in one statement, as though never made, and its
 * task is due again shortly, the attempt not spent.
 */
import type { ServiceMetrics } from './metrics.ts'
import { type Link, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import type { Channel, InteractionProgress, SettledInteraction } from '../channels/channel.ts'
import type { ChannelRegistry } from '../channels/registry.ts'
import { conversationTookPlace, stepWhenDue } from '../domain/attemptPolicy.ts'
import { type ConversationResult, recordedResult } from '../domain/conversationResult.ts'
import type { OrganizationEvent, TaskCompletion } from '../domain/events.ts'
import { noReplyDeadline } from '../domain/fallback.ts'
import { newId } from '../domain/ids.ts'
import type { Handoff, InteractionOutcome, JsonObject, TaskOutcome } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { insertEvents } from '../store/events.ts'
import { claimInteractionsToSettle, type InteractionWithConfig, recordStarts } from '../store/interactions.ts'
import { rolledBack } from '../store/rows.ts'
import {
  type AttemptToBegin,
  beginAttempts,
  type DueTask,
  lockCampaignsCountingRunning,
  lockDueTasks,
  lockExpiredTasksOfPausedCampaigns,
  type Postponement,
  postponeTasks,
  withdrawAttempts,
} from '../store/tasks.ts'
import { forgetNumberAttempt } from '../store/numberAttempts.ts'
import { forgetLawAttempt } from '../store/lawAttempts.ts'
import { NumberCaps } from './numberCaps.ts'
import { LawChecks } from './lawChecks.ts'
import type { CallingLaw } from './callingLaw.ts'
import { recordedDecision } from '../domain/contactability.ts'
import { batchesOf, GroupCommitter } from './groupCommitter.ts'
import { SenderPacer } from './senderPacer.ts'
import { completeAllAs, completeAndReport, type Settlement } from './settlement.ts'
import type { Wake } from './wake.ts'
import { tracing } from '../tracing.ts'

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
export const CAPACITY_RETRY_MS = 1_000
/**
 * Bounds of the wait after a deferred start. At least a second: a provider
 * that says "now" (Retry-After: 0) would otherwise have the attempt recorded
 * and withdrawn in a tight loop, two writes each time. At most five minutes:
 * throttling and momentary outages clear within seconds to a minute (Twilio
 * and Meta meter per second), and a longer Retry-After, or a date misread,
 * must not park a task for hours; a provider still throttling defers again.
 */
export const DEFERRED_MIN_MS = 1_000
export const DEFERRED_MAX_MS = 300_000

export interface DispatchedBatch {
  /** Due tasks taken: started, postponed or completed. */
  taken: number
  started: number
  /** Campaigns found at their max_concurrent: their tasks wait for a place. */
  full: Set<string>
  /** Resolves when every provider of the batch has answered and its answer is recorded. */
  starts: Promise<void>
}

/** A provider's answer to a start, as recorded. */
interface StartAnswer {
  id: string
  /** null: the result is unknown (the provider may have it). */
  providerRef: string | null
  settleAt: number
  /** How an agent platform was handed the task, and what of it was left out. */
  handoff?: Handoff
}

export class Dispatch {
  readonly #db: Database
  readonly #channels: ChannelRegistry
  readonly #settlement: Settlement
  readonly #wake: Wake
  readonly #now: () => number
  readonly #log: FastifyBaseLogger
  readonly #metrics: ServiceMetrics
  readonly #phoneHashKey: Buffer
  readonly #law: CallingLaw
  readonly #answers: GroupCommitter<StartAnswer, undefined>
  readonly #withdrawals: GroupCommitter<{ interactionId: string; dueAt: number }, boolean>

  constructor(deps: {
    db: Database
    channels: ChannelRegistry
    settlement: Settlement
    wake: Wake
    now: () => number
    log: FastifyBaseLogger
    metrics: ServiceMetrics
    /** Suppressions of erased numbers are found by their digest with it. */
    phoneHashKey: Buffer
    /** The calling-law profiles and registries in force, for the decision before each attempt. */
    law: CallingLaw
  }) {
    this.#law = deps.law
    this.#metrics = deps.metrics
    this.#phoneHashKey = deps.phoneHashKey
    this.#db = deps.db
    this.#channels = deps.channels
    this.#settlement = deps.settlement
    this.#wake = deps.wake
    this.#now = deps.now
    this.#log = deps.log
    this.#answers = new GroupCommitter(
      async (answers) => {
        await recordStarts(this.#db, answers)
        return answers.map(() => undefined)
      },
      batchesOf(deps.db.concurrency, 1024, rolledBack),
    )
    this.#withdrawals = new GroupCommitter(
      async (withdrawals) => {
        const withdrawn = await withdrawAttempts(this.#db, withdrawals, this.#now())
        return withdrawals.map((withdrawal) => withdrawn.has(withdrawal.interactionId))
      },
      batchesOf(deps.db.concurrency, 1024, rolledBack),
    )
  }

  /**
   * Takes up to `limit` due tasks (none of the campaigns in `skipCampaigns`)
   * each one step further: completed, postponed until its next opening or a
   * place in its campaign, or started (recorded as started by `worker`).
   */
  async dispatchDue(worker: string, limit: number, skipCampaigns: readonly string[]): Promise<DispatchedBatch> {
    const full = new Set<string>()
    const startTime = tracing.enabled ? Date.now() : 0
    // Read before the transaction: on the embedded database a read outside it would wait for it to end.
    const law = await this.#law.current(this.#db)
    const { taken, begun, now, completed, due } = await this.#db.transaction(async (tx) => {
      const due = await lockDueTasks(tx, this.#phoneHashKey, this.#now(), limit, skipCampaigns)
      if (due.length === 0) return { taken: 0, begun: [], now: 0, completed: [], due }
      const limited = [...new Set(due.filter((task) => task.campaign.maxConcurrent !== null).map((task) => task.campaign.id))]
      const running = await lockCampaignsCountingRunning(tx, limited)
      const capped = await NumberCaps.lock(tx, this.#phoneHashKey, due, this.#now())
      const checks = await LawChecks.lock(tx, this.#phoneHashKey, law, due, this.#now())
      const pacer = await SenderPacer.lock(tx, this.#channels, due)
      // Decided at the moment the attempts are recorded: a wait for the
      // campaigns' locks must not carry a call past the end of a window.
      const now = this.#now()
      const completions: TaskCompletion[] = []
      const postponements: Postponement[] = []
      const attempts: (AttemptToBegin & { task: DueTask })[] = []
      for (const task of due) {
        const step = stepWhenDue({ schedule: task.campaign.schedule, timezones: task.timezones, expiresAt: task.expiresAt, suppressed: task.suppressed }, now)
        let heldUntil: number | undefined
        if (step.kind === 'complete') {
          completions.push({ task, outcome: step.outcome })
          continue
        }
        if (step.kind === 'wait') {
          postponements.push({ taskId: task.id, dueAt: step.until })
          continue
        }
        const decision = checks.decide(task, now)
        const recorded = recordedDecision(decision, now)
        // The hour learned timing chose is part of why the attempt is placed now.
        if (decision.decision === 'allowed' && task.timingReason !== null) recorded.reasons = [task.timingReason, ...recorded.reasons]
        if (decision.decision === 'blocked') {
          completions.push({ task, outcome: 'not_permitted', decision: recorded })
        } else if (decision.decision === 'deferred') {
          // Due again when the law allows, or at its expiry, where the step above completes it on time.
          postponements.push({ taskId: task.id, dueAt: Math.min(decision.notBefore ?? task.expiresAt, task.expiresAt), heldBy: 'law', decision: recorded })
        } else if ((heldUntil = capped.heldUntil(task, now)) !== undefined) {
          // Due again when the cap allows, or at its expiry, where the step above completes it on time.
          postponements.push({ taskId: task.id, dueAt: Math.min(heldUntil, task.expiresAt), heldBy: 'contact_cap' })
        } else if ((heldUntil = pacer?.heldUntil(task, now)) !== undefined) {
          postponements.push({ taskId: task.id, dueAt: Math.min(heldUntil, task.expiresAt), heldBy: 'sender' })
        } else if (!takePlace(running, task)) {
          full.add(task.campaign.id)
          postponements.push({ taskId: task.id, dueAt: now + CAPACITY_RETRY_MS })
        } else {
          capped.take(task)
          checks.take(task, now)
          pacer?.take(task, now)
          attempts.push({ taskId: task.id, interactionId: newId('interaction', now), phone: task.contact.phone, decision: recorded, task })
        }
      }
      const begunAttempts = await beginAttempts(tx, this.#phoneHashKey, worker, attempts, now, now + START_SETTLE_MS)
      await capped.record(tx, attempts.filter(({ task }) => begunAttempts.has(task.id)).map(({ task }) => task), now)
      await checks.record(tx, attempts.map(({ task }) => task), new Set(begunAttempts.keys()), now)
      // Not begun: the number was suppressed since the tasks were read. Closed as opted out.
      for (const { task } of attempts) if (!begunAttempts.has(task.id)) completions.push({ task, outcome: 'opted_out' })
      await postponeTasks(tx, postponements, now)
      await pacer?.save(tx)
      const events: OrganizationEvent[] = []
      const completed = await completeAndReport(tx, completions, now, events)
      await insertEvents(tx, events)
      const begun = attempts.filter(({ task }) => begunAttempts.has(task.id)).map((attempt) => ({ ...attempt, attempt: begunAttempts.get(attempt.task.id)! }))
      this.#log.debug(
        { taken: due.length, started: begun.length, postponed: postponements.length, completed: completions.length, campaigns_full: full.size },
        'dispatched a batch of due tasks',
      )
      return { taken: due.length, begun, now, completed, due }
    })
    this.#metrics.countCommitted({ tasks: completed })
    if (completed.length > 0) this.#wake.deliveries()
    const batchLinks = tracing.enabled && taken > 0 ? [dispatchBatchLink(due, { startTime, started: begun.length, completed: completed.length })] : []
    const starts = Promise.all(begun.map((attempt) => this.#start(attempt.task, attempt.interactionId, attempt.attempt, now, batchLinks))).then(() => {})
    return { taken, started: begun.length, full, starts }
  }

  /** Asks the provider to start a recorded attempt; never throws. */
  async #start(task: DueTask, interactionId: string, attempt: number, startedAt: number, batchLinks: Link[]): Promise<void> {
    const channel = this.#channels.get(task.campaign.provider, task.campaign.channel)
    const config = task.campaign.providerConfig
    // A span of the trigger's trace, linked to the batch that recorded the attempt.
    const span = tracing.enabled
      ? tracing.start(
          'provider call',
          {
            kind: SpanKind.CLIENT,
            links: batchLinks,
            attributes: {
              'cts.task_id': task.id,
              'cts.trigger_id': task.triggerId,
              'cts.interaction_id': interactionId,
              'cts.attempt': attempt,
              'cts.provider': task.campaign.provider,
              'cts.channel': task.campaign.channel,
            },
          },
          task.traceParent,
        )
      : undefined
    try {
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
          firstName: task.contact.first_name,
          lastName: task.contact.last_name,
          ids: task.ids,
          config,
        })
      } catch (error) {
        // The provider may have started it: its own report can still confirm it; if none comes
        // by the time the attempt would be over, it is settled as failed. Never started again.
        this.#log.warn({ err: error, interaction: interactionId }, 'start uncertain; waiting for the provider to report')
        span?.setAttribute('cts.start', 'uncertain').setStatus({ code: SpanStatusCode.ERROR }).end()
        this.#metrics.providerErrors.inc({ provider: task.campaign.provider, kind: 'uncertain' })
        this.#countStarted(task, startedAt)
        await this.#answers.submit({ id: interactionId, providerRef: null, settleAt: this.#now() + channel.settleAfterMs(config) })
        return
      }
      span?.setAttribute('cts.start', result.kind).end()
      if (result.kind === 'deferred') {
        await this.#withdraw(task, interactionId, startedAt, result.retryAfterMs, result.reason)
        return
      }
      this.#countStarted(task, startedAt)
      if (result.kind === 'refused') {
        this.#log.warn({ interaction: interactionId, reason: result.reason, permanent: result.permanent }, 'start refused by the provider')
        this.#metrics.providerErrors.inc({ provider: task.campaign.provider, kind: 'refused' })
        const optOut = result.optedOut ? { orgId: task.orgId, phone: task.contact.phone, reason: 'provider' as const } : undefined
        await this.#settlement.end({ interactionId, outcome: 'failed', at: this.#now(), durationS: 0, permanent: result.permanent, notOnChannel: result.notOnChannel, optOut })
        return
      }
      // A message whose campaign's fallback step waits N open minutes for a reply is over then, not at the end of its reply
      // window; unless its settle time is when its outcome is decided (the simulator's), with no reply to wait for.
      const noReplyAt = channel.decidesOutcomeAtSettleTime
        ? null
        : noReplyDeadline(task.campaign.fallback, { ...task.campaign, timezones: task.timezones, expiresAt: task.expiresAt }, startedAt)
      const settleAt = noReplyAt ?? startedAt + channel.settleAfterMs(config)
      if (settleAt <= this.#now() && (await this.#settledAtOnce(channel, interactionId, { providerRef: result.providerRef, providerStatus: null, attempt, config, startedAt, to: task.contact.phone }, task.orgId))) return
      const handoff: Handoff | undefined =
        result.leftOut === undefined ? undefined : { mode: 'variables', at: new Date(this.#now()).toISOString(), left_out: result.leftOut }
      await this.#answers.submit({ id: interactionId, providerRef: result.providerRef, settleAt, handoff })
    } catch (error) {
      // Recording the answer failed: the attempt stays as recorded and is settled at its settle time.
      this.#log.error({ err: error, interaction: interactionId }, 'the answer to a start could not be recorded; it is settled later')
    }
  }

  /**
   * An attempt the dispatcher made, counted with how long its task had been
   * due; counted once the provider has answered, since a deferred one is
   * withdrawn as though never made (its task, due again, is counted when it
   * starts, with the wait since its new due time).
   */
  #countStarted(task: DueTask, startedAt: number): void {
    this.#metrics.attemptsStarted.observe({ channel: task.campaign.channel }, Math.max(0, startedAt - task.dueAt) / 1000)
  }

  /**
   * Withdraws an attempt whose start the provider deferred: its task is due
   * again after the provider's delay (bounded), with the attempt not spent.
   * A provider's report that confirmed it meanwhile keeps it (nothing is
   * withdrawn); if the withdrawal cannot be recorded, the attempt stays as
   * recorded and is settled as failed at its settle time, as a start that
   * never answered would be.
   */
  async #withdraw(task: DueTask, interactionId: string, startedAt: number, retryAfterMs: number, reason: string): Promise<void> {
    const delayMs = Math.min(DEFERRED_MAX_MS, Math.max(DEFERRED_MIN_MS, Number.isFinite(retryAfterMs) ? retryAfterMs : DEFERRED_MIN_MS))
    this.#metrics.providerErrors.inc({ provider: task.campaign.provider, kind: 'deferred' })
    const withdrawn = await this.#withdrawals.submit({ interactionId, dueAt: this.#now() + delayMs })
    // Never started, so not counted against its number's cap. Should this fail, the number's cap counts one call
    // too many for a day: fewer calls, never more.
    if (withdrawn && task.contactCap !== null) {
      await forgetNumberAttempt(this.#db, this.#phoneHashKey, { orgId: task.orgId, phone: task.contact.phone }, startedAt).catch((error: unknown) =>
        this.#log.warn({ err: error, interaction: interactionId }, "a withdrawn attempt could not be taken off its number's cap"),
      )
    }
    // Nor against a law's cap per number, should one have counted it (the same: fewer calls, never more, if this fails).
    if (withdrawn) {
      await forgetLawAttempt(this.#db, this.#phoneHashKey, { orgId: task.orgId, phone: task.contact.phone }, startedAt).catch((error: unknown) =>
        this.#log.warn({ err: error, interaction: interactionId }, "a withdrawn attempt could not be taken off its number's count under the law's caps"),
      )
    }
    this.#log.info({ interaction: interactionId, task: task.id, reason, retry_after_ms: delayMs, withdrawn }, 'start deferred by the provider; the attempt is made again later')
    // Its task is due at a new time: the dispatch loop looks again when it sleeps until then.
    if (withdrawn) this.#wake.tasks()
  }

  /**
   * Settles an attempt that is due to be settled as soon as its start is
   * confirmed (a simulated call of no duration), as its settle time would:
   * recording the start and claiming the interaction back to settle it would
   * be two writes of its row for nothing. False when the provider cannot tell
   * now: the start is then recorded, and the attempt settled later.
   */
  async #settledAtOnce(channel: Channel, interactionId: string, progress: InteractionProgress & { providerRef: string }, orgId: string): Promise<boolean> {
    const { providerRef } = progress
    const person = { orgId, phone: progress.to }
    let settled: SettledInteraction
    try {
      settled = await channel.settle(progress)
    } catch {
      return false
    }
    const { outcome, durationS, permanent } = settled
    const optOut = settled.optedOut ? { ...person, reason: 'provider' as const } : undefined
    await this.#settlement.end({ interactionId, outcome, at: this.#now(), durationS, permanent, providerRef, result: this.#reportedResult(settled), optOut })
    return true
  }

  /** The result a provider tells with the end of a conversation that took place, recorded now; undefined when it tells none. */
  #reportedResult(settled: SettledInteraction): ConversationResult | undefined {
    return settled.result !== undefined && conversationTookPlace(settled.outcome) ? recordedResult(settled.result, this.#now()) : undefined
  }

  /**
   * Completes as expired up to `limit` tasks of paused campaigns whose expiry
   * has come, with their events, as the dispatcher would have had their
   * campaigns run; returns how many.
   */
  async expirePaused(limit: number): Promise<number> {
    const now = this.#now()
    const expired = await this.#db.transaction(async (tx) => completeAllAs(tx, await lockExpiredTasksOfPausedCampaigns(tx, now, limit), 'expired', now))
    this.#metrics.countCommitted({ tasks: expired })
    if (expired.length > 0) this.#wake.deliveries()
    return expired.length
  }

  /** Settles up to `limit` interactions that had no final word by their settle time. */
  async settleDue(limit: number): Promise<number> {
    const due = await claimInteractionsToSettle(this.#db, this.#now(), SETTLE_LEASE_MS, limit)
    if (due.length > 0) this.#log.debug({ interactions: due.length }, 'settling interactions past their settle time')
    await Promise.all(due.map((interaction) => this.#settle(interaction)))
    return due.length
  }

  async #settle(interaction: InteractionWithConfig): Promise<void> {
    // Its outcome is written: its wait for its result is over, and it is reported without one.
    if (interaction.status === 'ended') return this.#endWait(interaction)
    const channel = this.#channels.get(interaction.provider, interaction.channel)
    const confirmed = interaction.status !== 'starting'
    const progress = {
      // A start never confirmed has no reference to ask about.
      providerRef: confirmed ? interaction.providerRef : null,
      providerStatus: interaction.providerStatus,
      attempt: interaction.attempt ?? 1,
      config: interaction.providerConfig,
      startedAt: interaction.startedAt,
      to: interaction.toPhone,
    }
    let settled: SettledInteraction
    try {
      settled = await channel.settle(progress)
    } catch (error) {
      // The provider cannot tell now: asked again when this claim runs out, for a while, then failed.
      const giveUpAt = interaction.startedAt + channel.settleAfterMs(interaction.providerConfig) + SETTLE_GIVE_UP_MS
      if (this.#now() < giveUpAt) {
        this.#log.warn({ err: error, interaction: interaction.id }, 'settling failed; asking again later')
        return
      }
      settled = { outcome: 'failed' }
    }
    try {
      // A provider's report may have confirmed the start meanwhile: then the provider has it, and its word will come.
      await this.#settlement.end({
        interactionId: interaction.id,
        outcome: settled.outcome,
        at: this.#now(),
        durationS: confirmed ? settled.durationS : 0,
        permanent: confirmed && settled.permanent,
        optOut: confirmed && settled.optedOut ? { orgId: interaction.orgId, phone: interaction.toPhone, reason: 'provider' } : undefined,
        onlyIfStarting: !confirmed,
        result: confirmed ? this.#reportedResult(settled) : undefined,
      })
    } catch (error) {
      this.#log.error({ err: error, interaction: interaction.id }, 'settling could not be recorded; settled again when its claim runs out')
    }
  }

  async #endWait(interaction: InteractionWithConfig): Promise<void> {
    try {
      await this.#settlement.end({ interactionId: interaction.id, closesWait: true, at: this.#now() })
    } catch (error) {
      this.#log.error({ err: error, interaction: interaction.id }, 'the end of a wait for a result could not be recorded; settled again when its claim runs out')
    }
  }
}

/**
 * A dispatch batch's span, of a trace of its own, linked to each task's
 * trigger; ended at once, since it covers the transaction just committed.
 * The link to it that each provider call carries.
 */
function dispatchBatchLink(due: readonly DueTask[], batch: { startTime: number; started: number; completed: number }): Link {
  const span = tracing.start('dispatch batch', {
    startTime: batch.startTime,
    attributes: { 'cts.tasks': due.length, 'cts.started': batch.started, 'cts.completed': batch.completed },
    links: tracing.links(due.map((task) => ({ traceParent: task.traceParent, attributes: { 'cts.task_id': task.id } }))),
  })
  span.end()
  return { context: span.spanContext() }
}

/** Whether the task's campaign has a place for one more interaction, taking it if so. */
function takePlace(running: Map<string, number>, task: DueTask): boolean {
  const limit = task.campaign.maxConcurrent
  if (limit === null) return true
  const now = running.get(task.campaign.id) ?? 0
  if (now >= limit) return false
  running.set(task.campaign.id, now + 1)
  return true
}
