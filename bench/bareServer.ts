/**
 * The baseline: a bare Fastify app whose POST /api/v2/triggers only parses
 * the JSON body and answers the service's success envelope. No validation,
 * no database, no logging. What the service does beyond this is what the
 * benchmark's ratio prices.
 *
 * Run as `node --import tsx bench/bareServer.ts` with PORT and HOST.
 */
import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'

const app = Fastify({ logger: false })

app.post('/api/v2/triggers', async (request, reply) => {
  const header = request.headers['x-request-id']
  return reply.code(201).send({
    data: { id: `trg_${randomUUID()}`, task_id: `tsk_${randomUUID()}`, status: 'accepted', created_at: new Date().toISOString() },
    metadata: { request_id: typeof header === 'string' ? header : `req_${randomUUID()}` },
  })
})

process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))

await app.listen({ port: Number(process.env.PORT ?? 8081), host: process.env.HOST ?? '127.0.0.1' })
