/**
 * Settlement: interactions end here, however their outcome arrives (a
 * provider's callback, a simulated conversation's end, a settling by
 * timeout). Outcomes are committed together, the way triggers are: one
 * transaction finalizes many interactions, applies the attempt policy to
 * their tasks (complete, or due again), and writes their events and
 * deliveries, so the outbox stays transactional. Whoever submitted an
 * outcome is answered once the commit that holds it has finished: a
 * provider's callback is acknowledged only when its outcome is durable.
 */
import type { ServiceMetrics } from './metrics.ts'
import { stepAfterInteraction } from '../domain/attemptPolicy.ts'
import type { Provider } from '../domain/campaignSettings.ts'
import {
  type CompletedTask,
  type FinalizedInteraction,
  interactionFinalizedEvent,
  type OrganizationEvent,
  type TaskCompletion,
  taskCompletedEvent,
} from '../domain/events.ts'
import type { InteractionOutcome, TaskOutcome } from '../domain/types.ts'
import type { Database, Queryable } from '../store/database.ts'
import type { ClaimedDelivery } from '../store/deliveries.ts'
import { type HandOff, insertEvents, type WrittenDeliveries } from '../store/events.ts'
import { finalizeInteractions, recordProviderMessage } from '../store/interactions.ts'
import { rolledBack } from '../store/rows.ts'
import { suppress, type SuppressionReason } from '../store/suppressions.ts'
import { completeTasks, scheduleNextAttempts, type TaskForUpdate } from '../store/tasks.ts'
import { batchesOf, GroupCommitter } from './groupCommitter.ts'
import type { Wake } from './wake.ts'

/** An interaction's end, as its outcome arrives. */
export interface InteractionEnding {
  interactionId: string
  outcome: InteractionOutcome
  at: number
  durationS?: number
  /** The provider refused the start for good: the task fails rather than spending its attempts. */
  permanent?: boolean
  /** Only if its start is still unconfirmed (a settlement that asked the provider nothing). */
  onlyIfStarting?: boolean
  /** The provider's reference for it, when its start was confirmed only now (an attempt settled as soon as it started). */
  providerRef?: string
  /** The provider's message that says so (a reply): counted once however often it is delivered. */
  message?: { provider: Provider; id: string }
  /**
   * The person opted out (wrote STOP, or the provider says so): the number is
   * suppressed even if the interaction was over already, and its task closes.
   */
  optOut?: { orgId: string; phone: string; reason: SuppressionReason }
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
  readonly #committer: GroupCommitter<InteractionEnding, boolean>
  #deliverer: DeliveryHandOffs | undefined

  constructor(deps: { db: Database; now: () => number; wake: Wake; metrics: ServiceMetrics }) {
    this.#db = deps.db
    this.#now = deps.now
    this.#wake = deps.wake
    this.#metrics = deps.metrics
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
    const ended = new Set<string>()
    const reservation = this.#deliverer?.reserve()
    let handedOver: readonly ClaimedDelivery[] = []
    let settled: Settled
    try {
      settled = await this.#db.transaction((tx) => this.#settle(tx, endings, ended, reservation?.handOff))
      handedOver = settled.written.claimed
    } finally {
      reservation?.settle(handedOver)
    }
    this.#metrics.countCommitted(settled)
    if (ended.size > 0) this.#wake.interactionsEnded(ended)
    if (settled.written.due > 0) this.#wake.deliveries()
    return settled.results
  }

  async #settle(
    tx: Queryable,
    endings: InteractionEnding[],
    endedCampaigns: Set<string>,
    handOff: HandOff | undefined,
  ): Promise<Settled> {
    const now = this.#now()
    const results = endings.map(() => false)
    // Messages and opt-outs are rare and each needs its own statement; the interactions go together.
    const live: number[] = []
    const seen = new Set<string>()
    for (const [index, ending] of endings.entries()) {
      if (ending.message !== undefined && !(await recordProviderMessage(tx, ending.message.provider, ending.message.id, now))) continue
      if (ending.optOut !== undefined) await suppress(tx, ending.optOut.orgId, ending.optOut.phone, ending.optOut.reason, now)
      // Two outcomes of one interaction in one batch: the first submitted counts, as if committed first.
      if (seen.has(ending.interactionId)) continue
      seen.add(ending.interactionId)
      live.push(index)
    }
    const finalized = await finalizeInteractions(
      tx,
      live.map((index) => {
        const ending = endings[index]!
        return {
          id: ending.interactionId,
          outcome: ending.outcome,
          endedAt: ending.at,
          durationS: ending.durationS ?? null,
          onlyIfStarting: ending.onlyIfStarting ?? false,
          providerRef: ending.providerRef ?? null,
        }
      }),
    )
    const byId = new Map(finalized.map((each) => [each.interaction.id, each]))
    const events: OrganizationEvent[] = []
    const interactions: FinalizedInteraction[] = []
    const completions: { task: TaskForUpdate; outcome: TaskOutcome }[] = []
    const retries: { taskId: string; dueAt: number }[] = []
    for (const index of live) {
      const ending = endings[index]!
      const ended = byId.get(ending.interactionId)
      if (ended === undefined) continue
      const { interaction, task } = ended
      results[index] = true
      endedCampaigns.add(interaction.campaignId)
      interactions.push(interaction)
      events.push({ orgId: interaction.orgId, event: interactionFinalizedEvent(interaction, now) })
      // Cancelled (or otherwise completed) while the interaction ran: nothing follows. A cancellation
      // that commits from now on is seen by the conditional updates that complete or reschedule the task.
      if (task === null || task.status === 'completed') continue
      const step = stepAfterInteraction(
        {
          outcome: interaction.outcome,
          endedAt: Date.parse(interaction.endedAt),
          permanent: ending.permanent === true,
          optedOut: ending.optOut !== undefined,
        },
        { schedule: task.campaign.schedule, timezones: task.timezones, expiresAt: task.expiresAt, attempts: task.attempts, policy: task.campaign.attempts },
        now,
      )
      if (step.kind === 'complete') {
        completions.push({ task, outcome: step.outcome })
        task.status = 'completed'
      } else {
        retries.push({ taskId: task.id, dueAt: step.dueAt })
        task.status = 'pending'
      }
    }
    const tasks = await completeAndReport(tx, completions, now, events)
    await scheduleNextAttempts(tx, retries, now)
    return { results, tasks, interactions, written: await insertEvents(tx, events, handOff) }
  }
}

/** What one commit of outcomes did: each outcome's result, the tasks it completed and interactions it finalized, the deliveries it wrote. */
interface Settled {
  results: boolean[]
  tasks: TaskCompletion[]
  interactions: FinalizedInteraction[]
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
    completions.map(({ task, outcome }) => ({ taskId: task.id, outcome })),
    now,
  )
  const done = completions.filter(({ task }) => completed.has(task.id))
  for (const { task, outcome } of done) events.push({ orgId: task.orgId, event: taskCompletedEvent(task, outcome, now) })
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
