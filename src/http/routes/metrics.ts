/**
 * GET /metrics: the process's metrics (services/metrics.ts) in Prometheus's
 * text format, for Prometheus with the metrics token, or for the operator.
 */
import type { FastifyInstance } from 'fastify'
import type { Authenticator } from '../../services/authenticator.ts'
import type { ServiceMetrics } from '../../services/metrics.ts'
import { requireMetricsReader } from '../auth.ts'
import { authErrors } from '../schemas.ts'

export function metricsRoutes(app: FastifyInstance, deps: { metrics: ServiceMetrics; authenticator: Authenticator }) {
  app.get(
    '/metrics',
    {
      onRequest: requireMetricsReader(deps.authenticator),
      schema: {
        operationId: 'getMetrics',
        summary: "This process's metrics (Prometheus text format)",
        description:
          'Requests by route and status with their durations, triggers accepted and refused by reason, group commit sizes, attempts started with their dispatch lag, provider errors, tasks completed by outcome, interactions finalized by provider and outcome, webhook attempts by result with their durations, rate-limited requests, the queues (read from the database at most every 5 s), the database pool, and the process itself.',
        tags: ['operations'],
        security: [{ metricsToken: [] }, { operatorToken: [] }],
        response: {
          // Sent as the text it is: Fastify serializes no string payload.
          200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...authErrors,
        },
      },
    },
    async (_request, reply) => reply.type(deps.metrics.contentType).send(await deps.metrics.text()),
  )
}
