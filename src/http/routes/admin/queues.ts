/** GET /admin/v1/queues: how much work waits in each queue, for the operator (and the console's queue page). */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { type Operations, queues } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { requireOperator } from '../../auth.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, Timestamp } from '../../schemas.ts'
import { adminDocs } from './shared.ts'
import { component } from '../../openapi.ts'

const Oldest = (description: string) => Type.Union([Timestamp, Type.Null()], { description })

const QueuesSchema = component('Queues', Type.Object({
  tasks: Type.Object({
    pending: Type.Integer({ description: 'Tasks waiting for an attempt.' }),
    due: Type.Integer({ description: 'Of those, due now: the dispatcher starts them as their campaigns allow.' }),
    oldest_due_at: Oldest('When the longest-waiting due task fell due; null when none is due.'),
  }),
  interactions: Type.Object({
    running: Type.Integer({ description: 'Calls and conversations under way.' }),
    oldest_started_at: Oldest('When the longest-running one started.'),
  }),
  deliveries: Type.Object({
    pending: Type.Integer({ description: 'Webhooks still to deliver.' }),
    retrying: Type.Integer({ description: 'Of those, failed at least once.' }),
    due: Type.Integer({ description: 'Of those, due now.' }),
    oldest_due_at: Oldest('When the most overdue one fell due; null when none is due.'),
  }),
}))

export function queueRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator }) {
  app.get(
    '/admin/v1/queues',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        ...adminDocs,
        operationId: 'getQueues',
        summary: "The service's queues",
        description: 'How much work waits now in each queue, over every organization, and how long the oldest has waited.',
        response: { 200: Envelope(QueuesSchema), ...authErrors },
      },
    },
    async (request, reply) => {
      const depths = await queues(deps.ops)
      return reply.send(
        envelope(request, {
          tasks: { pending: depths.tasks.pending, due: depths.tasks.due, oldest_due_at: depths.tasks.oldestDueAt },
          interactions: { running: depths.interactions.running, oldest_started_at: depths.interactions.oldestStartedAt },
          deliveries: { pending: depths.deliveries.pending, retrying: depths.deliveries.retrying, due: depths.deliveries.due, oldest_due_at: depths.deliveries.oldestDueAt },
        }),
      )
    },
  )
}
