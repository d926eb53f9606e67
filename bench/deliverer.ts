/**
 * Webhook delivery throughput: how many deliveries one worker process
 * (`cli worker`, pinned to its CPU) sends per second to a local receiver that
 * answers 200 at once, on PostgreSQL.
 *
 * The events are written straight into a fresh database through the store,
 * each with its delivery to one endpoint at its default cap (4 in flight),
 * as the task lifecycle writes them, before the worker starts. The worker
 * claims the endpoint's deliveries a queue at a time, signs each and sends it
 * over one of the endpoint's kept-alive connections, and logs the attempts
 * many to a statement.
 *
 * The first deliveries warm the worker up (its code compiled by the JIT, its
 * connections open) and are not measured: the rate is that of the ones after
 * them, in the same stream, as a running worker sends.
 */
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { taskCompletedEvent } from '../src/domain/events.ts'
import { newId } from '../src/domain/ids.ts'
import { COMMAND_LINE } from '../src/domain/audit.ts'
import { createOrganization } from '../src/services/administration.ts'
import { createEndpoint } from '../src/services/webhookAdministration.ts'
import { createChannels } from '../src/channels/index.ts'
import { openDatabase } from '../src/store/database.ts'
import { insertEvents } from '../src/store/events.ts'
import { migrate } from '../src/store/migrate.ts'
import { startChild, stopChild } from './children.ts'
import { SERVICE_NODE_FLAGS } from './harness.ts'

export interface DelivererResult {
  /** Measured: those after the warm-up. */
  deliveries: number
  warmUp: number
  /** The warm-up's rate, from the first delivery received to the last of the warm-up: a worker that has just started. */
  warmUpPerSecond: number
  /** From the last of the warm-up received to the last delivery. */
  seconds: number
  deliveriesPerSecond: number
}

const INSERT_BATCH = 500

export async function benchDeliverer(options: {
  databaseUrl: string
  deliveries: number
  /** Sent before those measured, in the same stream. */
  warmUp: number
  root: string
  cpu: number
  logFile: string
  timeoutMs: number
}): Promise<DelivererResult> {
  const total = options.warmUp + options.deliveries
  let firstAt: number | undefined
  let warmedUpAt = 0
  let last = 0
  let received = 0
  const receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      last = performance.now()
      firstAt ??= last
      if (++received === options.warmUp) warmedUpAt = last
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const port = (receiver.address() as AddressInfo).port

  const db = await openDatabase({ databaseUrl: options.databaseUrl, dataDir: 'memory://' })
  let worker: ChildProcess | undefined
  try {
    await migrate(db)
    const channels = createChannels({ publicBaseUrl: 'http://127.0.0.1:1', twilioApiBaseUrl: 'http://127.0.0.1:1', whatsappApiBaseUrl: 'http://127.0.0.1:1' }, () => undefined)
    const org = await createOrganization({ db, now: Date.now, channels: channels.registry }, COMMAND_LINE, 'Delivery Bench')
    await createEndpoint({ db, now: Date.now, allowPrivateWebhookUrls: true, onRedeliver: () => {} }, COMMAND_LINE, org.id, {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ['task.completed'],
    })
    for (let written = 0; written < total; written += INSERT_BATCH) {
      const count = Math.min(INSERT_BATCH, total - written)
      const now = Date.now()
      // As the settlement writes them: task.completed events of the client's candidates, each with its delivery.
      await insertEvents(
        db,
        Array.from({ length: count }, (_, index) => ({
          orgId: org.id,
          event: taskCompletedEvent(
            {
              id: newId('task', now),
              orgId: org.id,
              triggerId: newId('trigger', now),
              attempts: 1,
              testMode: false,
              ids: [{ source: 'ats', type: 'candidate_id', value: `C-${written + index}` }],
              campaign: { id: 'campaign_bench', routingKey: 'screening', channel: 'voice' },
            },
            'reached',
            now,
          ),
        })),
      )
    }

    const output = openSync(options.logFile, 'w')
    try {
      worker = startChild('taskset', ['-c', String(options.cpu), process.execPath, ...SERVICE_NODE_FLAGS, 'dist/cli.js', 'worker'], {
        cwd: options.root,
        env: {
          ...process.env,
          DATABASE_URL: options.databaseUrl,
          LOG_LEVEL: 'warn',
          ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
          OPERATOR_TOKEN: randomBytes(24).toString('hex'),
          PHONE_HASH_KEY: randomBytes(32).toString('hex'),
          // Not scraped here: any free port.
          METRICS_PORT: '0',
        },
        stdio: ['ignore', output, output],
      })
    } finally {
      closeSync(output)
    }
    const deadline = Date.now() + options.timeoutMs
    while (received < total) {
      if (Date.now() > deadline) throw new Error(`the receiver got ${received} of ${total} deliveries in ${options.timeoutMs / 1000} s`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const seconds = (last - warmedUpAt) / 1000
    return { deliveries: options.deliveries, warmUp: options.warmUp, warmUpPerSecond: options.warmUp / ((warmedUpAt - firstAt!) / 1000), seconds, deliveriesPerSecond: options.deliveries / seconds }
  } finally {
    if (worker !== undefined) await stopChild(worker)
    await db.close()
    await new Promise((resolve) => receiver.close(resolve))
  }
}
