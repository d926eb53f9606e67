/**
 * The deliverer's work: send each due delivery, signed, and log the attempt.
 *
 * It works by endpoint. A round takes endpoints with due deliveries (skipping
 * those another deliverer holds) and claims for each a queue of them, ahead
 * of the sends; the deliverer sends up to the endpoint's cap at once over
 * kept-alive connections, claims more in a round of its own when the queue
 * runs down to half (not after every send), and lets the endpoint go once its
 * queue is empty. An endpoint is held by the deliverer whose claims on it
 * still run, and only it sends there, so the cap holds across processes; a
 * receiver that hangs until the timeout holds up only its own deliveries.
 * Results are recorded many at a time: when a batch fills, or a few
 * milliseconds after the first of it waits. One send per claim round, one
 * connection per send and one transaction per result held one worker to
 * about 400 webhooks a second to one local receiver.
 *
 * Claims are leases of a minute, renewed while queued or in flight. A send
 * starts only while its lease has a whole timeout left, so a deliverer that
 * stalls past its leases has ended its sends before another can take the
 * endpoint. A deliverer that dies leaves what it had claimed to be claimed
 * again when the leases run out; its claims, named one by one, can no longer
 * record over the claims that took them over.
 */
import type { ServiceMetrics } from '../services/metrics.ts'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import { newId } from '../domain/ids.ts'
import type { DeliveryHandOffs, Reservation } from '../services/settlement.ts'
import type { Database } from '../store/database.ts'
import {
  type AttemptResult,
  type Claimed,
  claimDeliveries,
  type ClaimedDelivery,
  giveUpPending,
  handBack,
  type LeasedEndpoint,
  nextDeliveryDueAt,
  receivingEndpoints,
  recordAttempts,
  renewLeases,
} from '../store/deliveries.ts'
import { disableEndpoint } from '../store/webhookEndpoints.ts'
import { DeliveryError, type PostResult, WebhookPoster } from '../webhooks/httpPoster.ts'
import { signatureHeader } from '../webhooks/signing.ts'
import { type Work, WorkLoop } from './workLoop.ts'
import { tracing } from '../tracing.ts'

const TIMEOUT_MS = 15_000
const LEASE_MS = 60_000
const RENEW_EVERY_MS = LEASE_MS / 3
/**
 * Deliveries claimed ahead of the sends, per endpoint, and the queue length
 * at which more are claimed. At 3,000 webhooks a second half a queue lasts
 * about 40 ms, which covers a claim round on a busy database; claiming 128 at
 * a time rather than 64 took a fifth off PostgreSQL's CPU per delivery.
 */
const QUEUE_AHEAD = 256
const REFILL_AT = QUEUE_AHEAD / 2
/** The caps of the endpoints one deliverer holds add up to at most this: its sends in flight, and its connections. */
const MAX_PLACES = 200
/** An endpoint held this long is not refilled but let go once its queue is empty, so that endpoints beyond MAX_PLACES take turns. */
const HOLD_MS = 30_000
/** How many of its running claims on an endpoint a hand-off names, to show that the endpoint is still this deliverer's. */
const CLAIMS_NAMED = 4
/**
 * Results recorded in one statement at most, and how long the first of a
 * batch waits for others, even when no flush is running: flushing whatever
 * had come as soon as the last flush ended made batches of a few, and cost
 * the worker and PostgreSQL nearly twice the CPU per delivery (about 440 and
 * 240 µs, against 250 and 130 µs waiting 5 to 10 ms).
 */
const RECORD_BATCH = 200
const RECORD_AFTER_MS = 10
/** After the first attempt fails: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; then it gives up. */
const RETRY_DELAYS_S = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400]
/** Retries are spread by up to this share of their delay, so that a recovering receiver is not hit by a wave. */
const JITTER = 0.1
const USER_AGENT = 'ConversationTriggerService-Webhooks/1'

export interface DelivererOptions {
  /** Lets webhooks go to private and loopback addresses (local development, tests). */
  allowPrivate: boolean
}

/** An endpoint this deliverer holds. */
interface Held {
  endpoint: LeasedEndpoint
  /** Claimed, not yet sent, in the order they fell due. */
  queue: ClaimedDelivery[]
  sending: Set<ClaimedDelivery>
  /** When it was taken. */
  since: number
  /** Its last claim got all it asked for: more may be due. */
  more: boolean
  /** A round is claiming more of its deliveries. */
  refilling: boolean
  /** Settlements handing deliveries over to it are under way: it stays held until they end. */
  pins: number
}

interface Sent extends AttemptResult {
  endpointId: string
  gone: boolean
}

class Delivery implements Work, DeliveryHandOffs {
  readonly name = 'deliverer'
  readonly worker = newId('worker')
  readonly poster: WebhookPoster
  readonly #held = new Map<string, Held>()
  #claims = 0
  #renewAt = 0
  #stopping = false
  // What the next flush records and hands back.
  readonly #sent: Sent[] = []
  readonly #handBacks: ClaimedDelivery[] = []
  #flushing = false
  /** The renewal or flush writing now, which the next one waits for (#oneAtATime). */
  #writing: Promise<unknown> = Promise.resolve()
  /** The first of the next batch has waited long enough. */
  #flushDue = false
  #flushTimer: NodeJS.Timeout | undefined
  readonly #idleWaiters: (() => void)[] = []

  constructor(
    readonly db: Database,
    readonly now: () => number,
    readonly log: FastifyBaseLogger,
    options: DelivererOptions,
    readonly wake: () => void,
    readonly metrics: ServiceMetrics,
  ) {
    this.poster = new WebhookPoster({ allowPrivate: options.allowPrivate, userAgent: USER_AGENT, timeoutMs: TIMEOUT_MS, now })
  }

  async round(): Promise<boolean> {
    if (this.#stopping) return false
    const now = this.now()
    if (this.#held.size > 0) await this.#check(now)
    const held = [...this.#held.values()]
    const refills = held.filter((entry) => !entry.refilling && entry.queue.length <= REFILL_AT && now - entry.since < HOLD_MS)
    let places = 0
    for (const entry of held) places += entry.endpoint.maxInFlight
    const room = Math.max(0, MAX_PLACES - places)
    if (refills.length === 0 && room === 0) return false
    const quotas = new Map(refills.map((entry) => [entry.endpoint.id, QUEUE_AHEAD - entry.queue.length]))
    for (const entry of refills) entry.refilling = true
    let claimed: Claimed
    try {
      claimed = await claimDeliveries(this.db, {
        worker: this.worker,
        // Each claim has a name of its own: a send whose lease ran out and was claimed again cannot record over the later one.
        claim: `${this.worker}.${++this.#claims}`,
        now,
        lockedUntil: now + LEASE_MS,
        full: held.filter((entry) => !quotas.has(entry.endpoint.id)).map((entry) => entry.endpoint.id),
        refills: [...quotas].map(([endpointId, quota]) => ({ endpointId, quota })),
        room,
        quota: QUEUE_AHEAD,
      })
    } catch (error) {
      for (const entry of refills) {
        entry.refilling = false
        this.#pump(entry)
      }
      throw error
    }
    for (const entry of refills) entry.refilling = false
    for (const endpoint of claimed.endpoints) {
      const entry = this.#held.get(endpoint.id)
      if (entry !== undefined) entry.endpoint = endpoint
      else {
        if (this.#held.size === 0) this.#renewAt = now + RENEW_EVERY_MS
        this.#held.set(endpoint.id, {
          endpoint,
          queue: [],
          sending: new Set(),
          since: now,
          more: false,
          refilling: false,
          pins: 0,
        })
      }
    }
    const got = new Map<string, number>()
    for (const delivery of claimed.deliveries) {
      this.#held.get(delivery.endpointId)!.queue.push(delivery)
      got.set(delivery.endpointId, (got.get(delivery.endpointId) ?? 0) + 1)
    }
    if (claimed.deliveries.length > 0 || claimed.lost.length > 0) {
      const counts = { deliveries: claimed.deliveries.length, endpoints_taken: claimed.endpoints.length, endpoints_lost: claimed.lost.length, endpoints_held: this.#held.size }
      this.log.debug(counts, 'claimed deliveries')
    }
    for (const endpointId of claimed.lost) this.#lose(this.#held.get(endpointId)!)
    for (const entry of new Set([...refills, ...claimed.endpoints.map((endpoint) => this.#held.get(endpoint.id)!)])) {
      entry.more = (got.get(entry.endpoint.id) ?? 0) >= (quotas.get(entry.endpoint.id) ?? QUEUE_AHEAD)
      this.#pump(entry)
    }
    return claimed.deliveries.length > 0
  }

  nextDueAt(): Promise<number | undefined> {
    return nextDeliveryDueAt(this.db)
  }

  /**
   * A hand-off for the endpoints held whose queues still take more (not
   * stopping, not held past HOLD_MS) and where a claim of this deliverer
   * still runs (queued, in flight, or its result not yet recorded), each
   * pinned until the hand-off is settled.
   */
  reserve(): Reservation | undefined {
    if (this.#stopping) return undefined
    const now = this.now()
    const entries: { held: Held; claimed: number[] }[] = []
    for (const held of this.#held.values()) {
      if (now - held.since >= HOLD_MS) continue
      // One running claim is enough to hold the endpoint; a few, the last to be sent first, in case some are recorded meanwhile.
      const claimed = [...held.queue.slice(-CLAIMS_NAMED), ...held.sending].slice(0, CLAIMS_NAMED).map((delivery) => delivery.id)
      for (const { endpointId, delivery } of this.#sent) if (claimed.length < CLAIMS_NAMED && endpointId === held.endpoint.id) claimed.push(delivery.id)
      if (claimed.length > 0) entries.push({ held, claimed })
    }
    if (entries.length === 0) return undefined
    for (const { held } of entries) held.pins++
    return {
      handOff: {
        worker: this.worker,
        claim: `${this.worker}.${++this.#claims}`,
        now,
        lockedUntil: now + LEASE_MS,
        endpoints: entries.map(({ held, claimed }) => ({ id: held.endpoint.id, claimed })),
      },
      settle: (claimed) => {
        const byEndpoint = new Map(entries.map(({ held }) => [held.endpoint.id, held]))
        for (const delivery of claimed) byEndpoint.get(delivery.endpointId)!.queue.push(delivery)
        for (const { held } of entries) {
          held.pins--
          this.#pump(held)
        }
      },
    }
  }

  /** Waits until every endpoint taken so far is let go, its queue sent and every result recorded. */
  async drain(): Promise<void> {
    while (!this.#idle()) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
  }

  /** From now on nothing more is sent: what is queued is handed back, and each endpoint let go once its sends in flight end. */
  stopping(): void {
    this.#stopping = true
    for (const held of this.#held.values()) this.#pump(held)
  }

  /** Stopped: sends may start again, over new connections. */
  async stopped(): Promise<void> {
    this.#stopping = false
    await this.poster.close()
  }

  /** Starts sends up to the endpoint's cap; asks for more at the low-water mark; lets the endpoint go when it has nothing left. */
  #pump(held: Held): void {
    if (this.#stopping) this.#dropQueue(held)
    while (held.sending.size < held.endpoint.maxInFlight && held.queue.length > 0) {
      const delivery = held.queue.shift()!
      // Lease renewals stalled (the database was out of reach): its endpoint may soon be another's, so it is no longer ours to send.
      if (delivery.lockedUntil - this.now() < TIMEOUT_MS) {
        this.#handBacks.push(delivery)
        this.#scheduleFlush()
        continue
      }
      held.sending.add(delivery)
      void this.#send(held.endpoint, delivery)
        .then((sent) => {
          if (sent.next.status !== 'succeeded') this.#logFailure(delivery, sent)
          this.#sent.push(sent)
          this.#scheduleFlush()
          // Given up with everything else pending for the endpoint, in the transaction that records this answer.
          if (sent.gone) this.#dropQueue(held)
        })
        .catch((error: unknown) => this.log.error({ err: error, event: delivery.event.id }, 'delivery failed; sent again when its lease runs out'))
        .finally(() => {
          held.sending.delete(delivery)
          this.#pump(held)
        })
    }
    if (held.more && !held.refilling && held.queue.length === REFILL_AT) this.wake()
    // Another deliverer may take it once the last results are recorded (or at once, if it was lost); its places may go to another endpoint now.
    if (held.queue.length === 0 && held.sending.size === 0 && !held.refilling && held.pins === 0 && this.#held.get(held.endpoint.id) === held) {
      this.#held.delete(held.endpoint.id)
      this.wake()
      this.#settle()
    }
  }

  async #send(endpoint: LeasedEndpoint, delivery: ClaimedDelivery): Promise<Sent> {
    const { event } = delivery
    const { body } = event
    const at = this.now()
    const timestamp = Math.floor(at / 1000)
    // A span of the event's trigger's trace; the endpoint by its id only, since its URL may hold a secret.
    const span = tracing.enabled
      ? tracing.start(
          'webhook delivery',
          {
            kind: SpanKind.CLIENT,
            attributes: { 'cts.event_id': event.id, 'cts.endpoint_id': endpoint.id, 'cts.delivery_id': delivery.id, 'cts.attempt': delivery.attempts + 1 },
          },
          event.traceParent,
        )
      : undefined
    let result: PostResult | undefined
    let failure: DeliveryError | undefined
    try {
      result = await this.poster.post({
        endpointId: endpoint.id,
        maxConnections: endpoint.maxInFlight,
        url: endpoint.url,
        headers: {
          'content-type': 'application/json',
          'webhook-id': event.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(signingSecrets(endpoint, at), event.id, timestamp, body),
        },
        body,
      })
    } catch (error) {
      failure = error as DeliveryError
    }
    const status = result?.status
    const gone = status === 410
    if (span !== undefined) {
      if (status !== undefined) span.setAttribute('http.response.status_code', status)
      if (failure !== undefined) span.setAttribute('error.type', failure.kind)
      if (status === undefined || status < 200 || status >= 300) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    }
    return {
      endpointId: endpoint.id,
      gone,
      delivery,
      attempt: {
        at,
        statusCode: status ?? null,
        latencyMs: result?.latencyMs ?? this.now() - at,
        error: failure === undefined ? null : `${failure.kind}: ${failure.message}`,
        ...(result === undefined ? {} : { answer: result.excerpt }),
      },
      next:
        status !== undefined && status >= 200 && status < 300
          ? { status: 'succeeded' }
          : gone || delivery.attempts >= RETRY_DELAYS_S.length
            ? { status: 'failed' }
            : { status: 'pending', retryAt: this.now() + this.#retryDelayMs(delivery.attempts, result) },
    }
  }

  /**
   * One line per failed attempt, to answer "why did my receiver not get it"
   * from the log: the status or the error (as the events API shows it: no
   * URL path or query, no secret, no body) and what happens next.
   */
  #logFailure(delivery: ClaimedDelivery, { endpointId, attempt, next, gone }: Sent): void {
    this.log.warn(
      {
        event: delivery.event.id,
        endpoint: endpointId,
        attempt: delivery.attempts + 1,
        status: attempt.statusCode ?? undefined,
        error: attempt.error ?? undefined,
        next_attempt_at: next.status === 'pending' ? new Date(next.retryAt).toISOString() : null,
      },
      `webhook delivery failed; ${gone ? 'the endpoint answered 410 and is disabled' : next.status === 'pending' ? 'it will be retried' : 'no attempt is left'}`,
    )
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

  /**
   * Each round takes up changes to the endpoints held (a URL, cap or secret),
   * and drops the queues of those that no longer receive; every
   * RENEW_EVERY_MS it renews the leases of what is queued and in flight, and
   * drops the queue of an endpoint any of whose deliveries it no longer holds.
   */
  async #check(now: number): Promise<void> {
    const current = new Map((await receivingEndpoints(this.db, [...this.#held.keys()])).map((endpoint) => [endpoint.id, endpoint]))
    let renewed: Set<number> | undefined
    const lockedUntil = now + LEASE_MS
    if (now >= this.#renewAt) {
      const claims = [...this.#held.values()].flatMap((entry) => [...entry.queue, ...entry.sending])
      renewed = await this.#oneAtATime(() => renewLeases(this.db, claims, lockedUntil))
      this.#renewAt = now + RENEW_EVERY_MS
    }
    for (const entry of this.#held.values()) {
      const endpoint = current.get(entry.endpoint.id)
      const claims = [...entry.queue, ...entry.sending]
      if (endpoint === undefined || (renewed !== undefined && claims.some((delivery) => !renewed.has(delivery.id)))) {
        this.#lose(entry)
        continue
      }
      entry.endpoint = endpoint
      if (renewed !== undefined) for (const delivery of claims) delivery.lockedUntil = lockedUntil
      // A raised cap has room for more sends at once.
      this.#pump(entry)
    }
  }

  /** The endpoint is no longer ours (its leases ran out) or no longer receives: nothing more is sent to it from here. */
  #lose(held: Held): void {
    this.#dropQueue(held)
    this.#pump(held)
  }

  #dropQueue(held: Held): void {
    if (held.queue.length === 0) return
    this.#handBacks.push(...held.queue.splice(0))
    this.#scheduleFlush()
  }

  /** A flush when a batch is full, else a few milliseconds after the first of it came; while one runs, the next waits for it. */
  #scheduleFlush(): void {
    if (this.#sent.length >= RECORD_BATCH || this.#flushDue) {
      if (!this.#flushing) void this.#flush()
      return
    }
    this.#flushTimer ??= setTimeout(() => {
      this.#flushTimer = undefined
      this.#flushDue = true
      this.#scheduleFlush()
    }, RECORD_AFTER_MS)
  }

  /**
   * The attempts of a batch, with in the same transaction the endpoints that
   * answered 410 disabled (and what was pending for them given up) and the
   * deliveries handed back. A flush that fails loses nothing: what it would
   * have recorded is sent again when its lease runs out.
   */
  async #flush(): Promise<void> {
    clearTimeout(this.#flushTimer)
    this.#flushTimer = undefined
    this.#flushDue = false
    this.#flushing = true
    const sent = this.#sent.splice(0, RECORD_BATCH)
    const handBacks = this.#handBacks.splice(0)
    const now = this.now()
    let recorded: Set<number> | undefined
    try {
      // Most batches are attempts alone: one statement, without the round trips of a transaction around it.
      recorded = await this.#oneAtATime(() =>
        handBacks.length === 0 && !sent.some((result) => result.gone)
          ? recordAttempts(this.db, sent)
          : this.db.transaction(async (tx) => {
              const recorded = await recordAttempts(tx, sent)
              const gone = new Map(sent.filter((result) => result.gone && recorded.has(result.delivery.id)).map((result) => [result.endpointId, result.attempt.at]))
              for (const [endpointId, at] of gone) {
                await disableEndpoint(tx, endpointId, `the receiver answered 410 Gone on ${new Date(at).toISOString()}`, now)
                await giveUpPending(tx, endpointId, now)
              }
              await handBack(tx, handBacks, now)
              return recorded
            }),
      )
      this.log.debug({ attempts: sent.length, recorded: recorded.size, handed_back: handBacks.length }, 'recorded delivery results')
      for (const { attempt, next } of sent) {
        this.metrics.deliveryAttempts.observe({ result: next.status === 'pending' ? 'retry' : next.status }, attempt.latencyMs / 1000)
      }
    } catch (error) {
      this.log.error({ err: error }, 'delivery results failed to be recorded; sent again when their leases run out')
    } finally {
      this.#flushing = false
    }
    for (const result of sent) {
      // Given up meanwhile, or claimed again after its lease ran out: the rest of its endpoint's queue is not ours to send either.
      const held = this.#held.get(result.endpointId)
      if (recorded !== undefined && !recorded.has(result.delivery.id) && held !== undefined) this.#lose(held)
    }
    if (this.#sent.length > 0 || this.#handBacks.length > 0) this.#scheduleFlush()
    this.#settle()
  }

  /**
   * A renewal of the leases and a flush of results write the same rows (a
   * delivery sent just after the renewal read what it holds), each in an
   * order of its own: run at once, the two deadlocked now and then under load
   * (40P01), and a flush rolled back leaves its webhooks to be sent again when
   * their leases run out. One waits for the other instead: a renewal comes
   * every RENEW_EVERY_MS and takes milliseconds.
   */
  #oneAtATime<T>(write: () => Promise<T>): Promise<T> {
    const written = this.#writing.then(write, write)
    this.#writing = written.catch(() => {})
    return written
  }

  /** Wakes whoever drains, once every endpoint is let go and every result recorded. */
  #settle(): void {
    if (this.#idle()) for (const resolve of this.#idleWaiters.splice(0)) resolve()
  }

  #idle(): boolean {
    return this.#held.size === 0 && !this.#flushing && this.#sent.length === 0 && this.#handBacks.length === 0
  }
}

/** The secrets that sign at `now`: after a rotation, the previous one too until it expires. */
function signingSecrets(endpoint: LeasedEndpoint, now: number): string[] {
  const { secret, previousSecret, previousSecretUntil } = endpoint
  return previousSecret !== null && previousSecretUntil !== null && previousSecretUntil > now ? [secret, previousSecret] : [secret]
}

/** Stopping hands back what was queued rather than send it, so that a receiver that hangs cannot hold up a shutdown past its sends in flight. */
class DelivererLoop extends WorkLoop {
  readonly #delivery: Delivery

  constructor(delivery: Delivery, log: FastifyBaseLogger) {
    super(delivery, log)
    this.#delivery = delivery
  }

  override async stop(): Promise<void> {
    this.#delivery.stopping()
    try {
      await super.stop()
    } finally {
      await this.#delivery.stopped()
    }
  }
}

/**
 * A deliverer whose loop is woken whenever an endpoint's queue runs low or an
 * endpoint is let go, so that its places are used at once; and through which
 * this process's settlements hand over the deliveries they write.
 */
export function createDeliverer(deps: { db: Database; now: () => number; log: FastifyBaseLogger; options: DelivererOptions; metrics: ServiceMetrics }): {
  loop: WorkLoop
  handOffs: DeliveryHandOffs
} {
  let loop: WorkLoop | undefined
  const delivery = new Delivery(deps.db, deps.now, deps.log, deps.options, () => loop?.wake(), deps.metrics)
  loop = new DelivererLoop(delivery, deps.log)
  return { loop, handOffs: delivery }
}
