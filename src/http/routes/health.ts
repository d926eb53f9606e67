import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Database } from '../../store/database.ts'

const Status = Type.Object({ status: Type.String() })

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
        response: { 200: Status, 503: Status },
      },
    },
    async (request, reply) => {
      try {
        await deps.db.query('SELECT 1')
        return { status: 'ready' }
      } catch (error) {
        request.log.warn({ err: error }, 'database not reachable')
        return reply.code(503).send({ status: 'database unreachable' })
      }
    },
  )
}
