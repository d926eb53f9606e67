/**
 * Settlement: interactions end here, however their outcome arrives (a
 * provider's callback, a simulated conversation's end, a settling by
 * timeout, a result that ends the wait for it). Outcomes are committed
 * together, the way triggers are: one transaction finalizes many
 * interactions, applies the attempt policy to their tasks (complete, or due
 * again) with what their conversations' results say, and writes their events
 * and deliveries, so the outbox stays transactional. Whoever submitted an
 * outcome is answered once the commit that holds it has finished: a
 * provider's callback is acknowledged only when its outcome is durable.
 *
 * An interaction whose conversation took place, of a campaign that waits for
 * results (results.wait_s), with no result yet, is not finalized but ended:
 * it is reported, and its task moved on, when its result comes or its wait is
 * over, whichever is first.
 */
import type { ServiceMetrics } from './metrics.ts'
import { conversationTookPlace, type FallbackPlan, stepAfterInteraction } from '../domain/attemptPolicy.ts'
import { stepAfterCallBack } from '../domain/callbacks.ts'
import type { Provider, Schedule } from '../domain/campaignSettings.ts'
import type { ConversationResult, TranscriptTurn } from '../domain/conversationResult.ts'
import {
  type CompletedTask,
  type FinalizedInteraction,
  interactionFinalizedEvent,
  interactionMessageReceivedEvent,
  type OrganizationEvent,
  type MessageMedia,
  type ReceivedMessage,
  type TaskCompletion,
  taskCompletedEvent,
} from '../domain/events.ts'
import { attemptsOfEarlierSteps } from '../domain/fallback.ts'
import { windowClosesAt } from '../domain/messagingWindow.ts'
import type { InteractionOutcome, TaskOutcome } from '../domain/types.ts'
import { findFallbackSchedules } from '../store/campaigns.ts'
import type { Database, Queryable } from '../store/database.ts'
import type { ClaimedDelivery } from '../store/deliveries.ts'
import { type HandOff, insertEvents, type WrittenDeliveries } from '../store/events.ts'
import { releaseCallbackHolds } from '../store/inboundCalls.ts'
import { finalizeInteractions, keepWindowsOpen, recordProviderMessage } from '../store/interactions.ts'
import { rolledBack } from '../store/rows.ts'
import { suppress, type SuppressionReason } from '../store/suppressions.ts'
import { completeTasks, type FallBack, fallBackTasks, type Retry, scheduleNextAttempts, type TaskForUpdate } from '../store/tasks.ts'
import { batchesOf, GroupCommitter } from './groupCommitter.ts'
import type { LearnedRetry, LearnedTiming } from './learnedTiming.ts'
import type { Wake } from './wake.ts'

/**
 * An interaction's end, as its outcome arrives. `closesWait`: an interaction
 * that ended for its result waits no more (its result came, its wait is
 * over, the person wrote STOP); with no outcome, it is only that.
 */
export type InteractionEnding = EndingDetails & ({ outcome: InteractionOutcome; closesWait?: boolean } | { outcome?: undefined; closesWait: true })

interface EndingDetails {
  interactionId: string
  at: number
  durationS?: number
  /** The provider refused the start for good: the task fails rather than spending its attempts. */
  permanent?: boolean
  /** The provider says the number is not on its channel at all (WhatsApp's 131026): a fallback step for it goes on at once. */
  notOnChannel?: boolean
  /** Only if its start is still unconfirmed (a settlement that asked the provider nothing). */
  onlyIfStarting?: boolean
  /** The provider's reference for it, when its start was confirmed only now (an attempt settled as soon as it started). */
  providerRef?: string
  /** The provider's message that says so (a reply): counted once however often it is delivered, and reported (interaction.message_received) as it lands. */
  message?: { provider: Provider; id: string; text: string | undefined; media?: MessageMedia[] }
  /**
   * The person opted out (wrote STOP, or the provider says so): the number is
   * suppressed even if the interaction was over already, and its task closes.
   */
  optOut?: { orgId: string; phone: string; reason: SuppressionReason }
  /** A result its conversation reported with the end (a simulated one's, or a client's that ends the wait for it). */
  result?: ConversationResult
  /** What the person wrote with it (a reply), added to the interaction's transcript; to one that waits for its result, it waits on. */
  turns?: TranscriptTurn[]
}

/** Most outcomes in one commit: a batch of settled interactions fits in one. */
const MAX_BATCH = 512

/**
 * The deliverer of this process, which takes the deliveries a settlement
 * writes to the endpoints it holds as they commit, claimed by the writing
 * transaction itself: without it, each batch's deliveries were claimed
 * again by a claim round of their own, about a tenth of PostgreSQL's time
 * per trigger end to end.
 */
export interface DeliveryHandOffs {
  /** A hand-off for the endpoints held now, which stay held until it is settled; undefined when there is none. */
  reserve(): Reservation | undefined
}

export interface Reservation {
  handOff: HandOff
  /** Once the transaction has ended: what it committed claimed by the hand-off (none if it did not commit) goes to the queues. */
  settle(claimed: readonly ClaimedDelivery[]): void
}

export class Settlement {
  readonly #db: Database
  readonly #now: () => number
  readonly #wake: Wake
  readonly #metrics: ServiceMetrics
  readonly #timing: LearnedTiming
  readonly #committer: GroupCommitter<InteractionEnding, boolean>
  #deliverer: DeliveryHandOffs | undefined

  constructor(deps: { db: Database; now: () => number; wake: Wake; metrics: ServiceMetrics; timing: LearnedTiming }) {
    this.#db = deps.db
    this.#now = deps.now
    this.#wake = deps.wake
    this.#metrics = deps.metrics
    this.#timing = deps.timing
    // A batch that the server rolled back (a deadlock with another process, say) is tried again item by item;
    // one whose outcome is unknown (a lost connection) is not.
    this.#committer = new GroupCommitter((endings) => {
      deps.metrics.groupCommits.observe({ committer: 'interaction_endings' }, endings.length)
      return this.#commit(endings)
    }, batchesOf(deps.db.concurrency, MAX_BATCH, rolledBack))
  }

  /**
   * Ends an interaction with its outcome and moves its task on. False when
   * it changed nothing: the interaction was over already (a repeated report),
   * or the message had been counted.
   */
  end(ending: InteractionEnding): Promise<boolean> {
    return this.#committer.submit(ending)
  }

  /** Resolves once every outcome submitted so far has been answered. */
  drained(): Promise<void> {
    return this.#committer.drained()
  }

  /** From now on the deliveries written to the endpoints this process's deliverer holds go straight to it. */
  handDeliveriesTo(deliverer: DeliveryHandOffs): void {
    this.#deliverer = deliverer
  }

  async #commit(endings: InteractionEnding[]): Promise<boolean[]> {
    const reservation = this.#deliverer?.reserve()
    let handedOver: readonly ClaimedDelivery[] = []
    let settled: Settled
    try {
      settled = await this.#db.transaction((tx) => settleEndings(tx, endings, this.#now(), this.#timing, reservation?.handOff))
      handedOver = settled.written.claimed
    } finally {
      reservation?.settle(handedOver)
    }
    this.committed(settled)
    return settled.results
  }

  /** What times the retries of campaigns of learned timing: for settlements made in a transaction of another's ({@link settleEndings}). */
  get timing(): LearnedTiming {
    return this.#timing
  }

  /** Once a transaction that settled endings ({@link settleEndings}) has committed: what it did is counted, and the workers woken for it. */
  committed(settled: Settled): void {
    this.#metrics.countCommitted(settled)
    if (settled.endedCampaigns.size > 0) this.#wake.interactionsEnded(settled.endedCampaigns)
    if (settled.written.due > 0) this.#wake.deliveries()
  }
}

/**
 * Ends interactions in the caller's transaction: finalizes them (or has them
 * wait for their results), applies the attempt policy to their tasks with
 * what their results say, and writes their events (with their deliveries,
 * claimed by `handOff` where it holds the endpoint). The caller commits, and
 * then counts and wakes from what this answers.
 */
export async function settleEndings(
  tx: Queryable,
  endings: readonly InteractionEnding[],
  now: number,
  timing: LearnedTiming,
  handOff?: HandOff,
): Promise<Settled> {
  const results = endings.map(() => false)
  // Messages and opt-outs are rare and each needs its own statement; the interactions go together.
  const live: number[] = []
  const first = new Map<string, number>()
  const turns = new Map<number, TranscriptTurn[]>()
  const messages: { interactionId: string; message: ReceivedMessage }[] = []
  for (const [index, ending] of endings.entries()) {
    if (ending.message !== undefined) {
      if (!(await recordProviderMessage(tx, ending.message.provider, ending.message.id, ending.interactionId, now))) continue
      messages.push({ interactionId: ending.interactionId, message: { id: ending.message.id, text: ending.message.text ?? null, media: ending.message.media ?? [], at: ending.at } })
    }
    if (ending.optOut !== undefined) await suppress(tx, ending.optOut.orgId, ending.optOut.phone, ending.optOut.reason, now)
    // Two outcomes of one interaction in one batch: the first submitted counts, as if committed first, but
    // for the settling sweep's guess at a start never confirmed, which gives way to the provider's own word
    // (a report may now confirm the start in the statement that ends it); what the person wrote with either is kept.
    const earlier = first.get(ending.interactionId)
    if (earlier !== undefined) {
      const merged = [...(turns.get(earlier) ?? []), ...(ending.turns ?? [])]
      if (endings[earlier]!.onlyIfStarting === true && ending.onlyIfStarting !== true) {
        live[live.indexOf(earlier)] = index
        first.set(ending.interactionId, index)
        turns.delete(earlier)
        if (merged.length > 0) turns.set(index, merged)
      } else if (ending.turns !== undefined) turns.set(earlier, merged)
      continue
    }
    first.set(ending.interactionId, index)
    if (ending.turns !== undefined) turns.set(index, [...ending.turns])
    live.push(index)
  }
  const finalized = await finalizeInteractions(
    tx,
    live.map((index) => {
      const ending = endings[index]!
      return {
        id: ending.interactionId,
        outcome: ending.outcome ?? null,
        endedAt: ending.at,
        durationS: ending.durationS ?? null,
        onlyIfStarting: ending.onlyIfStarting ?? false,
        providerRef: ending.providerRef ?? null,
        result: ending.result ?? null,
        turns: turns.get(index) ?? null,
        // A person who opted out is not waited for.
        mayWaitForResult: ending.outcome !== undefined && conversationTookPlace(ending.outcome) && ending.optOut === undefined,
        closesWait: ending.closesWait === true,
      }
    }),
    now,
  )
  const byId = new Map(finalized.map((each) => [each.interaction.id, each]))
  const fallbacks = await fallbackSchedulesOf(tx, finalized)
  // The person's messages first, each as it landed, then what they ended.
  const events: OrganizationEvent[] = await messagesReceived(tx, messages, byId, now)
  const interactions: FinalizedInteraction[] = []
  const endedCampaigns = new Set<string>()
  const completions: TaskCompletion[] = []
  const retries: Retry[] = []
  const learned: LearnedRetry[] = []
  const moves: FallBack[] = []
  const releases: { taskId: string; dueAt: number | null }[] = []
  for (const index of live) {
    const ending = endings[index]!
    const ended = byId.get(ending.interactionId)
    if (ended === undefined) continue
    const { interaction, task } = ended
    results[index] = true
    endedCampaigns.add(interaction.campaignId)
    // It waits for its result: reported, and its task moved on, when the wait ends.
    if (ended.status === 'ended') continue
    interactions.push(interaction)
    events.push({ orgId: interaction.orgId, event: interactionFinalizedEvent(interaction, now) })
    const { result } = interaction
    const resultOptsOut = result?.opt_out === true
    // The person said so in the conversation: suppressed as a STOP is, even if its task is over.
    if (resultOptsOut && interaction.toPhone !== '') await suppress(tx, interaction.orgId, interaction.toPhone, 'conversation', now)
    // Cancelled (or otherwise completed) while the interaction ran: nothing follows. A cancellation
    // that commits from now on is seen by the conditional updates that complete or reschedule the task.
    if (task === null || task.status === 'completed') continue
    // The person called back as this attempt was placed: it was given back (numbered no attempt), and the call back has the task.
    if (interaction.direction === 'outbound' && interaction.attempt === null) continue
    const earlierAttempts = attemptsOfEarlierSteps(task.steps)
    const step = stepAfterInteraction(
      {
        outcome: interaction.outcome,
        endedAt: Date.parse(interaction.endedAt),
        permanent: ending.permanent === true,
        optedOut: ending.optOut !== undefined || resultOptsOut,
        callbackAt: result?.callback_at == null ? null : Date.parse(result.callback_at),
        startedAt: Date.parse(interaction.startedAt),
        notOnChannel: ending.notOnChannel === true,
      },
      {
        schedule: task.campaign.schedule,
        timezones: task.timezones,
        expiresAt: task.expiresAt,
        // Each step's attempts count under its own campaign's policy.
        attempts: task.attempts - earlierAttempts,
        policy: task.campaign.attempts,
        fallback: fallbackPlanOf(task, fallbacks),
      },
      now,
    )
    if (interaction.direction === 'inbound') {
      const callBack = stepAfterCallBack(step, conversationTookPlace(interaction.outcome))
      if (callBack.kind === 'complete') {
        completions.push({ task, outcome: callBack.outcome, result })
        task.status = 'completed'
      } else releases.push({ taskId: task.id, dueAt: callBack.dueAt })
    } else if (step.kind === 'complete') {
      completions.push({ task, outcome: step.outcome, result })
      task.status = 'completed'
    } else if (step.kind === 'fall_back') {
      const { campaign } = task
      moves.push({
        taskId: task.id,
        fromCampaignId: campaign.id,
        toCampaignId: step.campaignId,
        dueAt: step.dueAt,
        step: { campaign_id: campaign.id, campaign: campaign.routingKey, channel: campaign.channel, outcome: step.condition, attempts: task.attempts - earlierAttempts },
      })
      task.status = 'pending'
    } else {
      retries.push({ taskId: task.id, dueAt: step.dueAt })
      // A time the person asked for is kept as it is.
      if (task.campaign.attempts.timing === 'learned' && !step.callback) {
        const { campaign } = task
        learned.push({
          taskId: task.id,
          orgId: task.orgId,
          campaign: { routingKey: campaign.routingKey, channel: campaign.channel, schedule: campaign.schedule },
          timezones: task.timezones,
          expiresAt: task.expiresAt,
          dueAt: step.dueAt,
          phone: interaction.toPhone,
          attempt: task.attempts + 1,
        })
      }
      task.status = 'pending'
    }
  }
  const timed = await timing.retime(tx, learned, now)
  for (const retry of retries) Object.assign(retry, timed.get(retry.taskId))
  const tasks = await completeAndReport(tx, completions, now, events)
  await scheduleNextAttempts(tx, retries, now)
  await fallBackTasks(tx, moves, now)
  await releaseCallbackHolds(tx, releases, now)
  return { results, tasks, interactions, endedCampaigns, written: await insertEvents(tx, events, handOff) }
}

/**
 * An interaction.message_received for each message that landed on an
 * interaction this transaction ended, with the window it keeps open there.
 */
export async function messagesReceived(
  tx: Queryable,
  messages: readonly { interactionId: string; message: ReceivedMessage }[],
  ended: ReadonlyMap<string, { interaction: FinalizedInteraction }>,
  now: number,
): Promise<OrganizationEvent[]> {
  const landed = messages.flatMap((each) => {
    const interaction = ended.get(each.interactionId)?.interaction
    return interaction === undefined ? [] : [{ ...each, interaction }]
  })
  const windows = await keepWindowsOpen(
    tx,
    landed.flatMap(({ interaction, message }) => {
      const closesAt = windowClosesAt(interaction.channel, message.at, null)
      return closesAt === null ? [] : [{ id: interaction.id, closesAt }]
    }),
  )
  return landed.map(({ interaction, message }) => ({
    orgId: interaction.orgId,
    event: interactionMessageReceivedEvent(interaction, message, windows.get(interaction.id) ?? null, now),
  }))
}

/**
 * The schedules of the campaigns that the tasks of these interactions may
 * fall back to, by campaign id: read only for tasks whose campaign names a
 * fallback step and that have not taken one yet, so that it costs nothing
 * without one, and one statement per commit with some.
 */
async function fallbackSchedulesOf(tx: Queryable, finalized: readonly { task: TaskForUpdate | null }[]): Promise<Map<string, Schedule>> {
  const wanted = new Map<string, { orgId: string; campaignId: string }>()
  for (const { task } of finalized) {
    const fallback = task?.campaign.fallback
    if (task == null || fallback == null || task.steps !== null || task.status === 'completed') continue
    wanted.set(fallback.campaign_id, { orgId: task.orgId, campaignId: fallback.campaign_id })
  }
  return findFallbackSchedules(tx, [...wanted.values()])
}

/** The fallback step the task may still take, or null: none named, taken already (a task falls back once), or its campaign gone. */
function fallbackPlanOf(task: TaskForUpdate, schedules: ReadonlyMap<string, Schedule>): FallbackPlan | null {
  const fallback = task.campaign.fallback
  if (fallback === null || task.steps !== null) return null
  const schedule = schedules.get(fallback.campaign_id)
  if (schedule === undefined) return null
  return { campaignId: fallback.campaign_id, when: fallback.when, noReplyMinutes: fallback.no_reply_minutes ?? 0, schedule }
}

/** What one commit of outcomes did: whether each outcome changed anything, the tasks it completed and interactions it finalized, the campaigns whose interactions ended, the deliveries it wrote. */
export interface Settled {
  results: boolean[]
  tasks: TaskCompletion[]
  interactions: FinalizedInteraction[]
  endedCampaigns: Set<string>
  written: WrittenDeliveries
}

/**
 * Completes tasks (those not completed already) and adds each one's
 * task.completed event to `events`, to be written with the rest of the
 * transaction's; returns those it completed.
 */
export async function completeAndReport(
  tx: Queryable,
  completions: readonly TaskCompletion[],
  now: number,
  events: OrganizationEvent[],
): Promise<TaskCompletion[]> {
  const completed = await completeTasks(
    tx,
    completions.map(({ task, outcome, decision }) => ({ taskId: task.id, outcome, decision })),
    now,
  )
  const done = completions.filter(({ task }) => completed.has(task.id))
  for (const { task, outcome, result } of done) events.push({ orgId: task.orgId, event: taskCompletedEvent(task, outcome, now, result ?? null, completed.get(task.id) ?? null) })
  return done
}

/**
 * Completes tasks the transaction holds, all with one outcome (a client's
 * cancel, an expiry), and writes their task.completed events; returns those
 * it completed.
 */
export async function completeAllAs(tx: Queryable, tasks: readonly CompletedTask[], outcome: TaskOutcome, now: number): Promise<TaskCompletion[]> {
  const events: OrganizationEvent[] = []
  const completed = await completeAndReport(tx, tasks.map((task) => ({ task, outcome })), now, events)
  await insertEvents(tx, events)
  return completed
}
