/**
 * GET /metrics: the operator's view of webhook delivery, in Prometheus's text
 * format, read from the database so that every process answers the same.
 */
import type { FastifyInstance } from 'fastify'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Database } from '../../store/database.ts'
import { deliveryMetrics } from '../../store/deliveries.ts'
import { requireOperator } from '../auth.ts'

export function metricsRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator; now: () => number }) {
  app.get(
    '/metrics',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        summary: 'Delivery metrics (Prometheus text format)',
        tags: ['admin'],
        security: [{ operatorToken: [] }],
      },
    },
    async (_request, reply) => {
      const m = await deliveryMetrics(deps.db, deps.now())
      const lines = [
        metric('webhook_deliveries_total', 'counter', 'Deliveries ended: succeeded, or failed (given up after the last retry, or for an endpoint that no longer receives).', [
          ['status="succeeded"', m.succeeded],
          ['status="failed"', m.failed],
        ]),
        metric('webhook_delivery_attempts_total', 'counter', 'Attempts made, over every delivery.', [['', m.attempts]]),
        metric('webhook_deliveries_pending', 'gauge', 'Deliveries still to be made.', [['', m.pending]]),
        metric('webhook_deliveries_retrying', 'gauge', 'Pending deliveries that have failed at least once.', [['', m.retrying]]),
        metric('webhook_endpoints_disabled', 'gauge', 'Endpoints the service disabled after a 410.', [['', m.disabledEndpoints]]),
        metric('webhook_oldest_pending_delivery_age_seconds', 'gauge', 'Age of the oldest pending delivery.', [['', m.oldestPendingAgeS]]),
        metric('webhook_delivery_lag_seconds', 'gauge', 'How long the most overdue delivery has waited past its due time.', [['', m.lagS]]),
      ]
      return reply.type('text/plain; version=0.0.4').send(`${lines.join('\n')}\n`)
    },
  )
}

function metric(name: string, type: string, help: string, samples: [labels: string, value: number][]): string {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([labels, value]) => `${name}${labels ? `{${labels}}` : ''} ${value}`)].join('\n')
}
