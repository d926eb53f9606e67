/**
 * The workers of a process, built from its services: the dispatcher and the
 * deliverer, woken by the services' wake-ups and, on PostgreSQL, by those of
 * other processes sharing the database.
 */
import type { FastifyBaseLogger } from 'fastify'
import { type Services, WAKE_CHANNEL } from '../services/index.ts'
import { createDeliverer } from './deliverer.ts'
import { createDispatcher } from './dispatcher.ts'
import type { WorkLoop } from './workLoop.ts'

export interface Workers {
  dispatcher: WorkLoop
  deliverer: WorkLoop
  /** Starts both loops, listening for other processes' wake-ups first on PostgreSQL. */
  start(): Promise<void>
  /** Stops both loops and waits for what they started. */
  stop(): Promise<void>
}

export function createWorkers(services: Services, log: FastifyBaseLogger): Workers {
  const { db, now, wake } = services
  const { loop: deliverer, handOffs } = createDeliverer({ db, now, log, options: { allowPrivate: services.webhooks.allowPrivateWebhookUrls }, metrics: services.metrics })
  services.settlement.handDeliveriesTo(handOffs)
  const dispatcher = createDispatcher({ db, dispatch: services.dispatch, history: services.history, now, log })
  wake.on('tasks', () => dispatcher.loop.wake())
  wake.on('deliveries', () => deliverer.wake())
  wake.onInteractionsEnded((campaignIds) => dispatcher.placesFreed(campaignIds))
  let unlisten: (() => Promise<void>) | undefined
  return {
    dispatcher: dispatcher.loop,
    deliverer,
    async start() {
      if (db.notifications === 'listening' && unlisten === undefined) {
        unlisten = await db.listen(WAKE_CHANNEL, (payload) => wake.heard(payload))
      }
      if (db.notifications === 'polling') {
        log.warn(
          { notifications: db.notifications },
          'behind a transaction-mode pooler with no DATABASE_DIRECT_URL, the workers hear of no other process\'s work: they find it at their polls, every half second',
        )
      }
      dispatcher.loop.start()
      deliverer.start()
    },
    async stop() {
      log.info('shutdown: stopping the dispatcher (its round, then the calls it is starting)')
      await dispatcher.loop.stop()
      log.info('shutdown: stopping the deliverer (the webhooks being sent)')
      await deliverer.stop()
      await unlisten?.()
      unlisten = undefined
    },
  }
}
