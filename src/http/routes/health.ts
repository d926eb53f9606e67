import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Database } from '../../store/database.ts'

const Status = Type.Object({ status: Type.String() })
const Readiness = Type.Object({
  status: Type.String(),
  notifications: Type.Union([Type.Literal('in_process'), Type.Literal('listening'), Type.Literal('polling')], {
    description:
      "How the workers hear of other processes' work: in this process (the embedded database), by LISTEN, or only at their polls (behind a transaction-mode pooler with no DATABASE_DIRECT_URL).",
  }),
})

export function healthRoutes(app: FastifyInstance, deps: { db: Database }) {
  app.get(
    '/healthz',
    { schema: { operationId: 'checkLiveness', summary: 'Liveness: the process answers', description: '200 whenever the process can answer, whatever the database does.', tags: ['operations'], security: [], response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  )

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'checkReadiness',
        summary: 'Readiness: the database answers',
        description: '200 when the database answers a query; 503 when it does not.',
        tags: ['operations'],
        security: [],
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (request, reply) => {
      const { notifications } = deps.db
      try {
        await deps.db.query('SELECT 1')
        return { status: 'ready', notifications }
      } catch (error) {
        request.log.warn({ err: error }, 'database not reachable')
        return reply.code(503).send({ status: 'database unreachable', notifications })
      }
    },
  )
}
