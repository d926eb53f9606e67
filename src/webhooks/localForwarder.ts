/**
 * Webhooks to a developer's machine without a public address (`cli listen`):
 * the organization's events are read from the events API as they are
 * recorded (GET /api/v2/events, on from the newest at start) and each is
 * POSTed, signed as the service signs its webhooks (Standard Webhooks, with a
 * local secret), to a local URL, one at a time in the order they were
 * recorded, printing a line per event with the receiver's answer. As Stripe's
 * and Vapi's CLIs forward webhooks to localhost: no endpoint is registered
 * and no port is opened.
 *
 * A receiver that is down or answers 5xx gets the event again after 1, 2, 4
 * and 8 seconds, then it is skipped with a line saying so; the events API
 * keeps it (GET /api/v2/events/{id}). The API's 429 and 503 are waited out
 * as their Retry-After says. Each try is reported to the service (POST
 * /api/v2/events/{id}/listen-forwards) with the receiver's answer, so that
 * the console shows the event as forwarded rather than as sent nowhere.
 */
import { setTimeout } from 'node:timers/promises'
import { request } from 'undici'
import type { OutboxEvent } from '../domain/events.ts'
import { DeliveryError, WebhookPoster } from './httpPoster.ts'
import { signatureHeader } from './signing.ts'

export interface ForwarderOptions {
  /** The service, e.g. http://localhost:8080. */
  baseUrl: string
  /** An API key of the organization with `triggers:read`. */
  apiKey: string
  /** The local receiver, e.g. http://localhost:9000/hook. */
  forwardTo: string
  /** The whsec_... secret the receiver checks signatures with. */
  secret: string
  /** Only events of these types (all when empty). */
  types: readonly string[]
  /** Start after this event instead of the newest. */
  after?: string
  print: (line: string) => void
  now?: () => number
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

/** How often the events API is read while nothing new comes: webhooks reach the receiver within about this. */
const POLL_INTERVAL_MS = 500
const PAGE_SIZE = 100
/** Waits before each new try of an event the receiver did not take. */
const RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000]
const FORWARD_TIMEOUT_MS = 10_000
const USER_AGENT = 'ConversationTriggerService-Listen/1'

export class ForwarderError extends Error {}

/** A try as the service records it (POST /api/v2/events/{id}/listen-forwards): the receiver's status, or why none came. */
interface ForwardReport {
  at: string
  status_code?: number
  latency_ms: number
  error?: string
}

/** How long a report to the service may take before it is let go. */
const REPORT_TIMEOUT_MS = 2_000
/** The longest error the service takes in a report. */
const MAX_REPORTED_ERROR = 500

/**
 * A wait that ends early when the signal aborts (Ctrl-C stops listen at once).
 * node's own timer removes its abort listener when the wait ends: one added by
 * hand on every poll piled up on the run's one signal (a warning after 5-8 s idle).
 */
export async function wakeableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await setTimeout(ms, undefined, { signal })
  } catch (error) {
    if (!signal?.aborted) throw error
  }
}

export class LocalForwarder {
  readonly #options: ForwarderOptions
  readonly #now: () => number
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  readonly #poster: WebhookPoster
  #cursor: string | undefined

  constructor(options: ForwarderOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#sleep = options.sleep ?? wakeableSleep
    // Local addresses are the point here: the receiver is the developer's own.
    this.#poster = new WebhookPoster({ allowPrivate: true, userAgent: USER_AGENT, timeoutMs: FORWARD_TIMEOUT_MS, now: this.#now })
    this.#cursor = options.after
  }

  /** Where reading starts: after the given event, else after the newest one recorded (none: from the first to come). */
  async start(): Promise<void> {
    if (this.#cursor === undefined) this.#cursor = (await this.#events({ newest: 'true', limit: '1' }))[0]?.id
    this.#options.print(`forwarding events to ${this.#options.forwardTo}${this.#cursor === undefined ? '' : ` (recorded after ${this.#cursor})`}; Ctrl-C to stop`)
  }

  /** Reads what was recorded since the last read and forwards it; answers how many events it read. */
  async forwardNew(signal?: AbortSignal): Promise<number> {
    const events = await this.#events({ ...(this.#cursor === undefined ? {} : { after: this.#cursor }), limit: String(PAGE_SIZE) })
    for (const event of events) {
      if (signal?.aborted) break
      if (this.#options.types.length === 0 || this.#options.types.includes(event.type)) await this.#forward(event, signal)
      this.#cursor = event.id
    }
    return events.length
  }

  async run(signal: AbortSignal): Promise<void> {
    await this.start()
    try {
      while (!signal.aborted) {
        const read = await this.forwardNew(signal)
        if (read < PAGE_SIZE) await this.#sleep(POLL_INTERVAL_MS, signal)
      }
    } finally {
      await this.close()
    }
  }

  close(): Promise<void> {
    return this.#poster.close()
  }

  async #forward(event: OutboxEvent, signal?: AbortSignal): Promise<void> {
    const body = JSON.stringify(event)
    for (let attempt = 0; ; attempt++) {
      const timestamp = Math.floor(this.#now() / 1000)
      const startedMs = this.#now()
      const started = new Date(startedMs).toISOString()
      let answer: string
      let taken = false
      let report: ForwardReport
      try {
        const result = await this.#poster.post({
          endpointId: 'local',
          maxConnections: 1,
          url: this.#options.forwardTo,
          headers: {
            'content-type': 'application/json',
            'webhook-id': event.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signatureHeader([this.#options.secret], event.id, timestamp, body),
          },
          body,
        })
        answer = `${result.status} (${Math.round(result.latencyMs)} ms)`
        // A 4xx is the receiver's verdict on this event (a refused signature, say): sending it again changes nothing.
        taken = result.status < 500
        report = { at: started, status_code: result.status, latency_ms: Math.round(result.latencyMs) }
      } catch (error) {
        if (!(error instanceof DeliveryError)) throw error
        answer = error.message
        report = { at: started, latency_ms: Math.max(0, this.#now() - startedMs), error: error.message.slice(0, MAX_REPORTED_ERROR) }
      }
      const retryIn = RETRY_DELAYS_MS[attempt]
      const next = taken ? '' : retryIn === undefined ? ', skipped' : `, again in ${retryIn / 1000} s`
      this.#options.print(`${started} ${event.type} ${event.id} -> ${answer}${next}`)
      await this.#report(event.id, report, signal)
      if (taken || retryIn === undefined) return
      await this.#sleep(retryIn, signal)
      if (signal?.aborted) return
    }
  }

  /**
   * Tells the service how a try went: it sent the event nowhere itself, and
   * knows of the forward only what this says. Forwarding is what listen is
   * for: a report the service does not take (one too old for the route, a
   * moment's outage) is let go, with no line of its own among the forwards'.
   */
  async #report(eventId: string, report: ForwardReport, signal: AbortSignal | undefined): Promise<void> {
    const url = new URL(`/api/v2/events/${encodeURIComponent(eventId)}/listen-forwards`, this.#options.baseUrl)
    // A report is a footnote to the forward: a slow service holds the next event up by at most this, and Ctrl-C not at all.
    const timeout = AbortSignal.timeout(REPORT_TIMEOUT_MS)
    try {
      const response = await request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#options.apiKey}`, 'user-agent': USER_AGENT, 'content-type': 'application/json' },
        body: JSON.stringify(report),
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      })
      await response.body.dump()
    } catch {
      // Let go, as said above.
    }
  }

  /** One page of the events API, waiting out its 429 and 503 as their Retry-After says. */
  async #events(query: Record<string, string>): Promise<OutboxEvent[]> {
    const url = new URL('/api/v2/events', this.#options.baseUrl)
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
    for (;;) {
      const response = await request(url, { headers: { authorization: `Bearer ${this.#options.apiKey}`, 'user-agent': USER_AGENT } })
      const text = await response.body.text()
      if (response.statusCode === 200) return (JSON.parse(text) as { data: OutboxEvent[] }).data
      if (response.statusCode === 429 || response.statusCode === 503) {
        await this.#sleep(1_000 * Number(response.headers['retry-after'] ?? 1))
        continue
      }
      throw new ForwarderError(`GET ${url.pathname}${url.search} answered ${response.statusCode}: ${text}`)
    }
  }
}
