/**
 * The deliverer's work: send each due delivery, signed, and log the attempt.
 * Sends run beyond the round that claimed them, so a receiver that hangs
 * until the timeout holds up only its own deliveries: each endpoint has at
 * most a few in flight, and the others keep being claimed and sent.
 */
import type { FastifyBaseLogger } from 'fastify'
import { newId } from '../domain/ids.ts'
import type { Database } from '../store/database.ts'
import { type AttemptRecord, type ClaimedDelivery, claimDueDeliveries, giveUpPending, nextDeliveryDueAt, recordAttempt } from '../store/deliveries.ts'
import { disableEndpoint } from '../store/webhookEndpoints.ts'
import { DeliveryError, postWebhook, type PostResult } from '../webhooks/httpPoster.ts'
import { signatureHeader } from '../webhooks/signing.ts'
import { type Work, WorkLoop } from './workLoop.ts'

const CLAIM_BATCH = 50
const MAX_IN_FLIGHT = 100
/** Sends in flight to one endpoint at once. */
const PER_ENDPOINT = 4
const TIMEOUT_MS = 15_000
/** A send takes at most its timeout; the lease leaves room to log it. */
const LEASE_MS = TIMEOUT_MS + 45_000
/** After the first attempt fails: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; then it gives up. */
const RETRY_DELAYS_S = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400]
/** Retries are spread by up to this share of their delay, so that a recovering receiver is not hit by a wave. */
const JITTER = 0.1
const USER_AGENT = 'ConversationTriggerService-Webhooks/1'

export interface DelivererOptions {
  /** Lets webhooks go to private and loopback addresses (local development, tests). */
  allowPrivate: boolean
}

class Delivery implements Work {
  readonly name = 'deliverer'
  readonly worker = newId('worker')
  readonly #inFlight = new Set<Promise<void>>()
  #claims = 0

  constructor(
    readonly db: Database,
    readonly now: () => number,
    readonly log: FastifyBaseLogger,
    readonly options: DelivererOptions,
    readonly onSlotFreed: () => void,
  ) {}

  async round(): Promise<boolean> {
    let progressed = false
    for (;;) {
      const room = Math.min(CLAIM_BATCH, MAX_IN_FLIGHT - this.#inFlight.size)
      if (room <= 0) return progressed
      const now = this.now()
      // Each claim has a name of its own: a send whose lease ran out and was claimed again cannot record over the later one.
      const claim = `${this.worker}.${++this.#claims}`
      const claimed = await claimDueDeliveries(this.db, claim, now, now + LEASE_MS, room, PER_ENDPOINT)
      progressed ||= claimed.length > 0
      for (const delivery of claimed) {
        const sending = this.#send(delivery, claim)
          .catch((error: unknown) => this.log.error({ err: error, event: delivery.event.id }, 'delivery failed to be recorded; retried when its claim runs out'))
          .finally(() => {
            this.#inFlight.delete(sending)
            this.onSlotFreed()
          })
        this.#inFlight.add(sending)
      }
      if (claimed.length < room) return progressed
    }
  }

  nextDueAt(): Promise<number | undefined> {
    return nextDeliveryDueAt(this.db)
  }

  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight)
  }

  async #send(delivery: ClaimedDelivery, claim: string): Promise<void> {
    const { event, endpoint } = delivery
    // Disabled or deleted as it was claimed: what was pending for it has been given up.
    if (!endpoint.enabled) return
    const body = JSON.stringify(event)
    const timestamp = Math.floor(this.now() / 1000)
    let result: PostResult | undefined
    let failure: DeliveryError | undefined
    const at = this.now()
    try {
      result = await postWebhook({
        url: endpoint.url,
        headers: {
          'content-type': 'application/json',
          'webhook-id': event.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(endpoint.secrets, event.id, timestamp, body),
        },
        body,
        timeoutMs: TIMEOUT_MS,
        allowPrivate: this.options.allowPrivate,
        userAgent: USER_AGENT,
        now: this.now,
      })
    } catch (error) {
      failure = error as DeliveryError
    }
    const attempt: AttemptRecord = {
      at,
      statusCode: result?.status ?? null,
      latencyMs: result?.latencyMs ?? this.now() - at,
      error: failure === undefined ? null : `${failure.kind}: ${failure.message}`,
    }
    const status = result?.status
    const gone = status === 410
    const next =
      status !== undefined && status >= 200 && status < 300
        ? ({ status: 'succeeded' } as const)
        : gone || delivery.attempts >= RETRY_DELAYS_S.length
          ? ({ status: 'failed' } as const)
          : ({ status: 'pending', retryAt: this.now() + this.#retryDelayMs(delivery.attempts, result) } as const)
    await this.db.transaction(async (tx) => {
      if (!(await recordAttempt(tx, delivery.id, claim, attempt, next))) return
      if (gone) {
        await disableEndpoint(tx, endpoint.id, `the receiver answered 410 Gone on ${new Date(at).toISOString()}`, this.now())
        await giveUpPending(tx, endpoint.id, this.now())
      }
    })
  }

  /**
   * The next delay of the schedule, spread by the jitter; a 429 or 503 with
   * Retry-After waits at least as long as it asks (never less than the
   * schedule, so that "retry at once" cannot spend every attempt in seconds).
   */
  #retryDelayMs(attemptsBefore: number, result: PostResult | undefined): number {
    const scheduled = Math.round(RETRY_DELAYS_S[attemptsBefore]! * 1000 * (1 + JITTER * (2 * Math.random() - 1)))
    const asked = result?.status === 429 || result?.status === 503 ? result.retryAfterMs : undefined
    return Math.max(scheduled, asked ?? 0)
  }
}

/** A deliverer whose loop is woken whenever a send ends, so a freed slot is used at once. */
export function createDeliverer(deps: { db: Database; now: () => number; log: FastifyBaseLogger; options: DelivererOptions }): WorkLoop {
  let loop: WorkLoop | undefined
  loop = new WorkLoop(new Delivery(deps.db, deps.now, deps.log, deps.options, () => loop?.wake()), deps.log)
  return loop
}
