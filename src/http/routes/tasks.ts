/**
 * The client's view of its tasks: one by id, those of one of its own external
 * ids, and cancellation. Another organization's task is never found.
 */
import { stepsOfCompletedTask, type TaskStep } from '../../domain/fallback.ts'
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { ApiError, refuse } from '../../domain/errors.ts'
import { normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { normalizeIdPart } from '../../domain/externalIds.ts'
import { isId } from '../../domain/ids.ts'
import { interactionDurationS } from '../../domain/interactionDuration.ts'
import { TASK_HOLDS, TASK_OUTCOMES, TASK_STATUSES, type Task, ZONE_SOURCES } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { TaskLifecycle } from '../../services/taskLifecycle.ts'
import type { Database } from '../../store/database.ts'
import { listOrganizationTasks } from '../../services/taskListing.ts'
import { findTask } from '../../store/tasks.ts'
import { refine, refineModel } from '../../validation/model.ts'
import { organizationOf, requireOrganizationKey } from '../auth.ts'
import { envelope } from '../reply.ts'
import {
  authErrors,
  ChannelSchema,
  ContactSchema,
  conflict,
  DecisionSchema,
  Envelope,
  instant,
  InteractionStatusSchema,
  notFound,
  NullableHandoff,
  NullableResult,
  OneOf,
  presentContact,
  TaskStepSchema,
  Timestamp,
  validationErrors,
} from '../schemas.ts'
import { component } from '../openapi.ts'

const MAX_TASKS_PAGE = 100
const DEFAULT_TASKS_PAGE = 50

const InteractionSchema = component('Interaction', Type.Object({
  id: Type.String(),
  channel: { ...ChannelSchema, description: "Its channel: the task's campaign's, or, for a task that went on to a fallback step, that step's." },
  direction: OneOf(['outbound', 'inbound'] as const),
  attempt: Type.Union([Type.Integer(), Type.Null()]),
  status: InteractionStatusSchema,
  outcome: Type.Union([Type.String(), Type.Null()]),
  started_at: Timestamp,
  ended_at: Type.Union([Timestamp, Type.Null()]),
  duration_s: Type.Union([Type.Integer(), Type.Null()]),
  test_mode: Type.Boolean(),
  provider: Type.String({ description: 'Who carried it: simulator, twilio, whatsapp_cloud, vapi, retell or elevenlabs.' }),
  provider_ref: Type.Union([Type.String(), Type.Null()], { description: "The provider's own reference (Twilio's call SID, WhatsApp's message id, an agent platform's call or conversation id), once the provider has it." }),
  handoff: NullableHandoff,
  result: Type.Optional({
    ...NullableResult,
    description: "Its conversation's result; null when none came. On GET /api/v2/tasks/{id} (and a cancel's answer); task lists leave it out: a result may hold a long transcript.",
  }),
  decision: Type.Optional(
    Type.Union([Type.Ref(DecisionSchema.$id!), Type.Null()], {
      description:
        'Why the attempt was placed: the decision made before it, with the consent, calling-law rules and profiles it relied on (null for an inbound interaction, and for attempts made before decisions were kept). On GET /api/v2/tasks/{id}; task lists leave it out.',
    }),
  ),
}))

const TaskSchema = component('Task', Type.Object({
  id: Type.String({ examples: ['tsk_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  trigger_id: Type.String(),
  campaign: Type.String({ description: 'Routing key.' }),
  channel: ChannelSchema,
  status: OneOf(TASK_STATUSES),
  outcome: Type.Union([OneOf(TASK_OUTCOMES), Type.Null()], { description: 'Set once completed.' }),
  attempts: Type.Integer({ description: 'Interactions started so far.' }),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], {
    description: 'When the next attempt is due, once the schedule allows; null while one runs or once completed.',
  }),
  contact: Type.Union([ContactSchema, Type.Null()], {
    description: "Whom the task reaches, as known when its trigger was accepted: in test mode, the tester. Null once erased (POST /api/v2/contacts/erase, or the organization's retention_days after it completed).",
  }),
  timezone: Type.Union([Type.String(), Type.Null()], {
    description: 'The contact\'s time zone when only one is possible; null when `candidate_timezones` holds several (or none).',
  }),
  candidate_timezones: Type.Array(Type.String(), {
    description:
      'Every zone the contact may be in, west first: an attempt starts only at an instant inside the campaign\'s window in all of them. Empty only when nothing told the zone and the campaign keeps a zone of its own.',
    examples: [['Atlantic/Canary', 'Europe/Madrid']],
  }),
  timezone_source: Type.Union([OneOf(ZONE_SOURCES), Type.Null()], {
    description:
      'What told the zones, when the trigger was accepted: `sent` (contact.timezone), `on_file` (the person\'s zone in the contact directory), `phone` (the area of the number), `country` (every zone of the number\'s country: mobiles move), `fallback` (the campaign\'s fallback_timezone, for numbers of no country). Null when nothing told them and the campaign keeps a zone of its own.',
  }),
  test_mode: Type.Boolean(),
  ids: Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() })),
  created_at: Timestamp,
  expires_at: Timestamp,
  completed_at: Type.Union([Timestamp, Type.Null()]),
  campaign_paused: Type.Boolean({ description: "True while the task waits for its paused campaign: no attempt starts until the campaign is resumed. False while an attempt runs and once the task has completed." }),
  waiting: Type.Optional(
    Type.Object(
      {
        for: OneOf(TASK_HOLDS),
        until: Timestamp,
      },
      {
        description:
          "Present while the task is pending and held past its window by something other than its campaign: what (`sender`: its sender's pace, the campaign's `pacing` or its provider's documented rate, let other attempts start first; `contact_cap`: its organization's cap on attempts to one number across campaigns; `provider`: its provider turned its start away for now, throttling or in a moment's outage, and asked it to come back later; `law`: the calling law of the number's jurisdictions, its hours, holidays or cap per number, as `decision` says; `callback`: the person called a campaign's number and that call runs, docs/callbacks.md), and when it is due again (its `next_attempt_at`). Its attempts are not spent meanwhile, and it still expires at `expires_at`.",
      },
    ),
  ),
  steps: Type.Optional(Type.Array(TaskStepSchema, {
    description:
      "Only for a task that went on to its campaign's fallback step: the steps it took, oldest first. While it runs, the steps it left; once completed, its last step too, ending with the task's outcome (as in task.completed's `steps`).",
  })),
  decision: Type.Union([Type.Ref(DecisionSchema.$id!), Type.Null()], {
    description:
      "Its last decision that did not start an attempt: while it waits for the law (`waiting.for` law), the deferral, with the rules that hold it (kept should it expire or be cancelled while it waits); once completed not_permitted, the block, with its reasons. Null once an attempt has started since (each interaction keeps the decision that allowed it), and for a task no law held.",
  }),
  interactions: Type.Array(InteractionSchema),
}))

const presentTask = (task: Task) => ({
  id: task.id,
  trigger_id: task.triggerId,
  campaign: task.campaign.routingKey,
  channel: task.campaign.channel,
  status: task.status,
  outcome: task.outcome,
  attempts: task.attempts,
  next_attempt_at: task.nextAttemptAt,
  // An erased task keeps an empty contact (store/erasure.ts).
  contact: task.contact.phone === undefined ? null : presentContact(task.contact),
  timezone: task.timezones.length === 1 ? task.timezones[0]! : null,
  candidate_timezones: task.timezones,
  timezone_source: task.timezoneSource,
  test_mode: task.testMode,
  ids: task.ids,
  created_at: task.createdAt,
  expires_at: task.expiresAt,
  completed_at: task.completedAt,
  campaign_paused: task.campaignPaused,
  ...(task.waiting !== undefined && { waiting: task.waiting }),
  ...presentSteps(task),
  decision: task.decision,
  interactions: task.interactions.map((interaction) => ({
    id: interaction.id,
    channel: interaction.channel,
    direction: interaction.direction,
    attempt: interaction.attempt,
    status: interaction.status,
    outcome: interaction.outcome,
    started_at: interaction.startedAt,
    ended_at: interaction.endedAt,
    duration_s: interactionDurationS(interaction),
    test_mode: interaction.testMode,
    provider: interaction.provider,
    provider_ref: interaction.providerRef,
    handoff: interaction.handoff,
    ...(interaction.result === undefined ? {} : { result: interaction.result }),
    ...(interaction.decision === undefined ? {} : { decision: interaction.decision }),
  })),
})

/** The steps of a task that fell back (none for one that did not): with its last once completed. */
function presentSteps(task: Task): { steps?: TaskStep[] } {
  if (task.steps === null) return {}
  const steps = task.outcome === null ? task.steps : stepsOfCompletedTask(task, task.outcome)
  return steps === undefined ? {} : { steps }
}

/** Normalized as a trigger's ids are, so that a lookup finds what was recorded. */
const ExternalIdFields = {
  source: refine(Type.String({ minLength: 1, maxLength: 100 }), { transform: normalizeIdPart }),
  type: refine(Type.String({ minLength: 1, maxLength: 100 }), { transform: normalizeIdPart }),
  value: Type.String({ minLength: 1, maxLength: 500, description: 'Matched exactly.' }),
}
const ExternalIdQuery = Type.Object(ExternalIdFields)

const QUERY_PHONE_REFUSED = `${PHONE_REFUSED} (in a query string, write its + as %2B)`

const TaskListQuery = refineModel(
  Type.Object({
    source: Type.Optional(ExternalIdFields.source),
    type: Type.Optional(ExternalIdFields.type),
    value: Type.Optional(ExternalIdFields.value),
    phone: Type.Optional(
      refine(Type.String({ maxLength: 64, description: 'Tasks that reach this number, written any way with its country calling code.', examples: ['+442079460958'] }), {
        // A + left unencoded in a query string arrives as a space.
        transform: (phone) => phone.replace(/^ (?=[0-9])/, '+'),
        check: (phone) => normalizePhone(phone) ?? refuse(QUERY_PHONE_REFUSED),
      }),
    ),
    status: Type.Optional(OneOf(TASK_STATUSES)),
    outcome: Type.Optional(OneOf(TASK_OUTCOMES)),
    campaign: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A routing key: its campaigns on every channel.' })),
    test_mode: Type.Optional(Type.Boolean()),
    created_from: Type.Optional(instant('created_from', 'Tasks created at or after this instant.', { inQuery: true })),
    created_before: Type.Optional(instant('created_before', 'Tasks created before this instant.', { inQuery: true })),
    before: Type.Optional(Type.String({ maxLength: 40, description: 'The last task id of the previous page: the next page lists the tasks after it.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TASKS_PAGE, description: `Default ${DEFAULT_TASKS_PAGE}.` })),
  }),
  (query) => {
    const given = (['source', 'type', 'value'] as const).filter((field) => query[field] !== undefined)
    if (given.length === 0 || given.length === 3) return []
    return given.map((field) => ({ path: [field], message: 'source, type and value name one of your ids together: give all three, or none' }))
  },
)
type TaskListQuery = Static<typeof TaskListQuery>

const TaskParams = Type.Object({ id: Type.String() })

const MAX_IDS_TO_CANCEL = 100

const CancelByIdsBody = component('CancelTasksByIdsRequest', Type.Object({
  ids: Type.Array(ExternalIdQuery, { minItems: 1, maxItems: MAX_IDS_TO_CANCEL, description: 'Your ids of the person, as sent on triggers.' }),
  campaign: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Only this routing key's campaigns." })),
}))

const CancelledTaskSchema = component('CancelledTask', Type.Object({
  id: Type.String(),
  trigger_id: Type.String(),
  campaign: Type.String({ description: 'Routing key.' }),
  channel: ChannelSchema,
  status: Type.Literal('completed'),
  outcome: Type.Literal('cancelled'),
  ids: Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() })),
  completed_at: Timestamp,
}))

export function taskRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator; lifecycle: TaskLifecycle }) {
  const { db, authenticator, lifecycle } = deps
  const docs = { tags: ['tasks'], security: [{ apiKey: [] }] }

  const requireTask = async (orgId: string, id: string): Promise<Task> => {
    const task = isId('task', id) ? await findTask(db, orgId, id) : undefined
    if (task === undefined) throw new ApiError('not_found', `No task ${id} exists.`)
    return task
  }

  app.get(
    '/api/v2/tasks/:id',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:read'),
      schema: {
        ...docs,
        operationId: 'getTask',
        summary: 'Look up one task',
        description: 'Status, outcome, the next attempt time and every interaction so far.',
        params: TaskParams,
        response: { 200: Envelope(TaskSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.send(envelope(request, presentTask(await requireTask(organizationOf(request).orgId, id))))
    },
  )

  app.get(
    '/api/v2/tasks',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:read'),
      schema: {
        ...docs,
        operationId: 'listTasks',
        summary: 'List tasks, or find them by one of your ids or a phone number',
        description:
          `Your tasks, newest first (by when their trigger was accepted), at most \`limit\` (default ${DEFAULT_TASKS_PAGE}, at most ${MAX_TASKS_PAGE}), every filter given holding: ` +
          'one of your ids (`source`, `type` and `value` together; source and type compared lowercased, value exactly), the number a task reaches (`phone`; in test mode, the tester\'s), ' +
          '`status`, `outcome`, `campaign` (a routing key), `test_mode`, and a creation time range. ' +
          'The next page: the same query with `before` set to the last task id of this one; a page shorter than `limit` is the last.',
        querystring: TaskListQuery,
        response: { 200: Envelope(Type.Array(TaskSchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const query = request.query as TaskListQuery
      const externalId =
        query.source !== undefined && query.type !== undefined && query.value !== undefined
          ? { source: query.source, type: query.type, value: query.value }
          : undefined
      const filter = {
        externalId,
        phone: query.phone,
        status: query.status,
        outcome: query.outcome,
        campaign: query.campaign,
        testMode: query.test_mode,
        createdFrom: query.created_from === undefined ? undefined : Date.parse(query.created_from),
        createdBefore: query.created_before === undefined ? undefined : Date.parse(query.created_before),
      }
      const tasks = await listOrganizationTasks(db, organizationOf(request).orgId, { filter, before: query.before, limit: query.limit ?? DEFAULT_TASKS_PAGE })
      return reply.send(envelope(request, tasks.map(presentTask)))
    },
  )

  app.post(
    '/api/v2/tasks/:id/cancel',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:write'),
      schema: {
        ...docs,
        operationId: 'cancelTask',
        summary: 'Cancel a task',
        description:
          'No further attempt starts; the task completes with outcome cancelled and a task.completed event. An interaction already running is reported when it ends. A completed task answers 409.',
        params: TaskParams,
        response: { 200: Envelope(TaskSchema), ...authErrors, ...notFound, ...conflict },
      },
    },
    async (request, reply) => {
      const { orgId } = organizationOf(request)
      const { id } = request.params as { id: string }
      if (!isId('task', id)) throw new ApiError('not_found', `No task ${id} exists.`)
      await lifecycle.cancel(orgId, id)
      return reply.send(envelope(request, presentTask(await requireTask(orgId, id))))
    },
  )

  app.post(
    '/api/v2/tasks/cancel',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:write'),
      schema: {
        ...docs,
        operationId: 'cancelTasksByIds',
        summary: 'Stop outreach to a person, by your own ids',
        description:
          `Cancels every task not yet completed whose trigger carried one of these ids (source and type compared lowercased, value exactly), or only those of one campaign's routing key: no further attempt starts. ` +
          'An attempt being made now is allowed to end, and is reported, but moves its task no further. Each task cancelled completes with outcome `cancelled` and a `task.completed` event carrying your ids. ' +
          'Answers the tasks cancelled (none is not an error: the person may have had none open).',
        body: CancelByIdsBody,
        response: { 200: Envelope(Type.Array(CancelledTaskSchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { ids, campaign } = request.body as Static<typeof CancelByIdsBody>
      const cancelled = await lifecycle.cancelByExternalIds(organizationOf(request).orgId, ids, campaign)
      return reply.send(
        envelope(
          request,
          cancelled.map((task) => ({
            id: task.id,
            trigger_id: task.triggerId,
            campaign: task.campaign.routingKey,
            channel: task.campaign.channel,
            status: 'completed' as const,
            outcome: 'cancelled' as const,
            ids: task.ids,
            completed_at: task.completedAt,
          })),
        ),
      )
    },
  )
}
