/**
 * Conversations: what runs during an interaction (the client's voice app, an
 * agent, a WhatsApp exchange) learns here whom it serves and why, and
 * reports its result, which decides the task's next step in the transaction
 * that records it.
 *
 * A result is written on its interaction, in the order a settlement locks
 * (the interaction, then its task), so that one that races the provider's
 * last status is never lost:
 * - while the interaction runs, it is kept (a new one replaces it), and
 *   reported when the interaction ends;
 * - while the interaction waits for it (results.wait_s), it ends the wait: the
 *   interaction is finalized and reported with it, and its task moved on;
 * - once the interaction was reported without one, it is reported on an
 *   interaction.result_added event, and still closes a task that is open if
 *   it opts out, or moves a task that waits for its next attempt to a callback;
 * - once one was reported, another is refused (409); the same one again is
 *   answered as the first was, so that a client's retry is safe;
 * - once the person was erased, none is kept (409).
 */
import { stepAfterLateResult } from '../domain/attemptPolicy.ts'
import { attemptsOfEarlierSteps } from '../domain/fallback.ts'
import { type ConversationResult, recordedResult, type ReportedResult, sameResult } from '../domain/conversationResult.ts'
import { ApiError } from '../domain/errors.ts'
import { interactionResultAddedEvent, type OrganizationEvent, type TaskCompletion } from '../domain/events.ts'
import { isId } from '../domain/ids.ts'
import type { Handoff, InteractionContext } from '../domain/types.ts'
import type { Database, Queryable } from '../store/database.ts'
import { insertEvents } from '../store/events.ts'
import { resumeCallbackHoldAt } from '../store/inboundCalls.ts'
import { findInteractionContext, lockInteractionForResult, recordHandoff, writeResult } from '../store/interactions.ts'
import { suppress } from '../store/suppressions.ts'
import { lockTasks, postponeTasks } from '../store/tasks.ts'
import type { ServiceMetrics } from './metrics.ts'
import { completeAndReport, type Settled, type Settlement, settleEndings } from './settlement.ts'
import type { Wake } from './wake.ts'

/** What recording a result did, once committed. */
type Recorded =
  | { kind: 'kept' | 'same' }
  | { kind: 'settled'; settled: Settled }
  | { kind: 'late'; tasks: TaskCompletion[]; rescheduled: boolean }

export class Conversations {
  readonly #db: Database
  readonly #now: () => number
  readonly #settlement: Settlement
  readonly #wake: Wake
  readonly #metrics: ServiceMetrics

  constructor(deps: { db: Database; now: () => number; settlement: Settlement; wake: Wake; metrics: ServiceMetrics }) {
    this.#db = deps.db
    this.#now = deps.now
    this.#settlement = deps.settlement
    this.#wake = deps.wake
    this.#metrics = deps.metrics
  }

  /** The organization's interaction with its context and result; 404 for one it does not have. */
  async context(orgId: string, interactionId: string): Promise<InteractionContext> {
    const context = isId('interaction', interactionId) ? await findInteractionContext(this.#db, interactionId, orgId) : undefined
    if (context === undefined) throw notFound(interactionId)
    return context
  }

  /** An interaction's context for its provider's call, which the caller has verified is about it. */
  contextForProvider(interactionId: string): Promise<InteractionContext | undefined> {
    return findInteractionContext(this.#db, interactionId)
  }

  /** How an answered call was handed to its conversation, and what of its context was left out. */
  recordHandoff(interactionId: string, handoff: Handoff): Promise<void> {
    return recordHandoff(this.#db, interactionId, handoff)
  }

  /** Records the result of the organization's interaction (see the header); answers the interaction as it now is. */
  async recordResult(orgId: string, interactionId: string, reported: ReportedResult): Promise<InteractionContext> {
    if (!isId('interaction', interactionId)) throw notFound(interactionId)
    const now = this.#now()
    const result = recordedResult(reported, now)
    const recorded = await this.#db.transaction(async (tx): Promise<Recorded> => {
      const held = await lockInteractionForResult(tx, orgId, interactionId)
      if (held === undefined) throw notFound(interactionId)
      if (held.erased) throw new ApiError('conflict', `The person of interaction ${interactionId} was erased: nothing more is kept of them.`)
      switch (held.status) {
        case 'starting':
        case 'active':
          await writeResult(tx, interactionId, result)
          return { kind: 'kept' }
        case 'ended':
          return { kind: 'settled', settled: await settleEndings(tx, [{ interactionId, closesWait: true, at: now, result }], now, this.#settlement.timing) }
        case 'finalized':
          if (held.result === null) return { kind: 'late', ...(await lateResult(tx, orgId, interactionId, held.taskId, result, now)) }
          if (sameResult(held.result, result)) return { kind: 'same' }
          throw new ApiError(
            'conflict',
            `Interaction ${interactionId} has reported its result already, on its events; an interaction reports one result. GET /api/v2/interactions/${interactionId} shows it.`,
          )
      }
    })
    if (recorded.kind === 'settled') this.#settlement.committed(recorded.settled)
    if (recorded.kind === 'late') {
      this.#metrics.countCommitted({ tasks: recorded.tasks })
      this.#wake.deliveries()
      if (recorded.rescheduled) this.#wake.tasks()
    }
    return (await findInteractionContext(this.#db, interactionId, orgId))!
  }
}

/**
 * A result for an interaction reported without one: written, reported on an
 * interaction.result_added event, and applied to its task as far as a late
 * word still can be (domain/attemptPolicy.ts, stepAfterLateResult).
 */
async function lateResult(
  tx: Queryable,
  orgId: string,
  interactionId: string,
  taskId: string | null,
  result: ConversationResult,
  now: number,
): Promise<{ tasks: TaskCompletion[]; rescheduled: boolean }> {
  await writeResult(tx, interactionId, result)
  // As the event reports it: with what the person wrote, when the result carries no transcript of its own.
  const { interaction, routingKey, triggerId, ids, contact } = (await findInteractionContext(tx, interactionId, orgId))!
  const reported = interaction.result!
  const events: OrganizationEvent[] = [
    {
      orgId,
      event: interactionResultAddedEvent({ ...interaction, triggerId, routingKey, outcome: interaction.outcome!, ids, result: reported }, now),
    },
  ]
  if (result.opt_out && contact !== null) await suppress(tx, orgId, contact.phone, 'conversation', now)
  const task = taskId === null ? undefined : (await lockTasks(tx, [taskId], orgId)).get(taskId)
  const step = stepAfterLateResult(
    { optOut: result.opt_out, callbackAt: result.callback_at === null ? null : Date.parse(result.callback_at) },
    task === undefined
      ? null
      : { schedule: task.campaign.schedule, timezones: task.timezones, expiresAt: task.expiresAt, status: task.status, attempts: task.attempts - attemptsOfEarlierSteps(task.steps), policy: task.campaign.attempts },
  )
  let tasks: TaskCompletion[] = []
  if (step.kind === 'complete') tasks = await completeAndReport(tx, [{ task: task!, outcome: step.outcome, result: reported }], now, events)
  if (step.kind === 'reschedule') {
    // While the person's own call back holds the task, the time is kept for when the hold ends.
    if (task!.heldBy === 'callback') await resumeCallbackHoldAt(tx, task!.id, step.dueAt)
    else await postponeTasks(tx, [{ taskId: task!.id, dueAt: step.dueAt }], now)
  }
  await insertEvents(tx, events)
  return { tasks, rescheduled: step.kind === 'reschedule' }
}

const notFound = (interactionId: string) => new ApiError('not_found', `No interaction ${interactionId} exists.`)
