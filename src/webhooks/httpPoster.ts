/**
 * Webhook deliveries as HTTP POSTs, made safe against receivers we do not
 * trust. The hostname is resolved as each connection is made and every
 * address is vetted before connecting; the connection then goes to a vetted
 * address and nowhere else, so a DNS answer that changes between the check
 * and the connect (DNS rebinding) cannot steer a request inward. A receiver
 * can neither hold a delivery worker (one deadline covers the whole exchange)
 * nor flood it (the response body is read only up to a small limit), nor send
 * us elsewhere (redirects are answers, never followed).
 *
 * Connections are kept alive, in one undici pool per endpoint: four at a time
 * from one core to a local receiver, a connection per POST made 3,500 a
 * second, kept-alive ones 13,000. Pooling is safe because every new
 * connection of a pool is resolved and vetted again by the pool's `connect`
 * (a rebinding answer can only refuse a new connection, never redirect it),
 * and a kept-alive connection stays on the address vetted when it was made.
 * A pool serves one endpoint at one origin, with at most as many connections
 * as the endpoint's cap: a receiver that hangs holds no connection another
 * endpoint waits for, and a URL changed to another origin never reuses one
 * made for the old. An exchange cut short by the deadline or the body limit
 * closes its connection rather than return it to the pool. Pools unused for a
 * minute are closed.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import type { LookupFunction } from 'node:net'
import { performance } from 'node:perf_hooks'
import { buildConnector, type Dispatcher, Pool } from 'undici'
import { isPublicAddress, webhookUrlProblem } from './urlSafety.ts'

export interface PostResult {
  status: number
  /** From a `Retry-After` header, capped at 24 hours; undefined when absent or unparseable. */
  retryAfterMs: number | undefined
  latencyMs: number
  /** The rest of the answer, as much of it as is kept to be shown. */
  excerpt: AnswerExcerpt
}

/**
 * What a receiver answered besides its status, as the console and the events
 * API show it: its first RESPONSE_HEADERS_KEPT headers, each value cut at
 * RESPONSE_HEADER_VALUE_CHARS, and its body's first RESPONSE_BODY_EXCERPT_BYTES
 * (as UTF-8 text, a character cut at the end dropped), with whether there was more.
 */
export interface AnswerExcerpt {
  headers: Record<string, string>
  body: string
  bodyTruncated: boolean
}

export class DeliveryError extends Error {
  constructor(
    readonly kind: 'address_refused' | 'dns' | 'timeout' | 'network',
    message: string,
  ) {
    super(message)
    this.name = 'DeliveryError'
  }
}

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

export interface PosterOptions {
  /** Lets webhooks go to private and loopback addresses, over http too (local development, tests). */
  allowPrivate: boolean
  userAgent: string
  /** Bounds each delivery, everything included: DNS, connect, TLS, sending, and reading the answer. */
  timeoutMs: number
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>
  now?: () => number
}

export interface WebhookPost {
  /** The endpoint posted to: its pool serves it alone. */
  endpointId: string
  /** Its cap on webhooks in flight: its pool opens no more connections than that. */
  maxConnections: number
  url: string
  headers: Record<string, string>
  body: string
}

/** Enough for any error text a receiver means us to keep; more is only cost. */
const BODY_LIMIT_BYTES = 64 * 1024
/**
 * How much of an answer is kept, for every attempt (recorded on the delivery
 * path, so bounded): 1 KiB of body holds the message of a framework's JSON
 * error or the opening of an error page, which is what says why a webhook
 * was refused; twenty headers of at most 256 characters hold the content
 * type, a request id, the server and a Retry-After, while a CDN's long
 * policy headers (report-to, content-security-policy) say nothing about a
 * webhook. An attempt's row stays a few kilobytes at most, mostly under one.
 */
export const RESPONSE_BODY_EXCERPT_BYTES = 1024
export const RESPONSE_HEADERS_KEPT = 20
export const RESPONSE_HEADER_VALUE_CHARS = 256
/** A receiver asking us to wait longer than a day is treated as asking for a day. */
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000
/** Headers this module sets itself: a caller's length or host could contradict the request actually sent. */
const OWNED_HEADERS: ReadonlySet<string> = new Set(['content-length', 'host', 'user-agent'])
/** A pool with nothing in flight for this long is closed (its connections may have closed long before, by keep-alive timeout). */
const POOL_IDLE_MS = 60_000

interface PoolEntry {
  pool: Pool
  inFlight: number
  lastUsed: number
}

/** POSTs webhooks over kept-alive connections, one pool per endpoint and origin. */
export class WebhookPoster {
  readonly #options: PosterOptions
  readonly #pools = new Map<string, PoolEntry>()
  /** How every connection of every pool is made: undici's own, with a lookup that vets each address before the socket dials one. */
  readonly #connect: ReturnType<typeof buildConnector>
  #sweeper: NodeJS.Timeout | undefined

  constructor(options: PosterOptions) {
    this.#options = options
    // The connect timeout is the delivery's: the deadline, started first, always ends a hung connect as a timeout.
    this.#connect = buildConnector({ timeout: options.timeoutMs, lookup: vettedLookup(options) })
  }

  /** POSTs `body` to `url` and reports the receiver's status; throws only DeliveryError. */
  post(request: WebhookPost): Promise<PostResult> {
    const started = performance.now()
    // Checked again here because a stored URL may predate today's rules.
    const problem = webhookUrlProblem(request.url, this.#options.allowPrivate)
    if (problem !== undefined) return Promise.reject(new DeliveryError('address_refused', problem))
    const url = new URL(request.url)
    const entry = this.#pool(request, url.origin)
    const body = Buffer.from(request.body, 'utf8')
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (!OWNED_HEADERS.has(name.toLowerCase())) headers[name] = value
    }
    headers['user-agent'] = this.#options.userAgent
    headers['content-length'] = String(body.length)
    const { timeoutMs } = this.#options
    const now = this.#options.now ?? Date.now
    entry.inFlight++
    return new Promise((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined
      let settled = false
      let status = 0
      let retryAfter: string | undefined
      let headersKept: Record<string, string> = {}
      const bodyKept: Buffer[] = []
      let read = 0
      const settle = (outcome: PostResult | DeliveryError) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        entry.inFlight--
        entry.lastUsed = performance.now()
        if (outcome instanceof DeliveryError) reject(outcome)
        else resolve(outcome)
      }
      const answer = (): PostResult => ({
        status,
        retryAfterMs: parseRetryAfter(retryAfter, now()),
        latencyMs: performance.now() - started,
        excerpt: { headers: headersKept, body: bodyText(bodyKept), bodyTruncated: read > RESPONSE_BODY_EXCERPT_BYTES },
      })
      // A request still waiting for its connection has no controller yet (a DNS lookup cannot be cancelled): it is aborted as soon as it gets one.
      let timedOut: DeliveryError | undefined
      const deadline = setTimeout(() => {
        timedOut = new DeliveryError('timeout', `no complete answer within ${timeoutMs} ms`)
        settle(timedOut)
        controller?.abort(timedOut)
      }, timeoutMs)
      // dispatch() with a handler rather than request(), which makes a Readable and an AbortSignal
      // listener for every answer: 13,000 against 9,000 posts a second from one core to a local receiver.
      // undici sets Host from the origin, and the TLS server name from its hostname (unless an IP literal).
      try {
        entry.pool.dispatch(
          { method: 'POST', path: `${url.pathname}${url.search}`, headers, body },
          {
            onRequestStart(control) {
              controller = control
              if (timedOut !== undefined) control.abort(timedOut)
            },
            onResponseStart(_controller, statusCode, responseHeaders) {
              status = statusCode
              const value = responseHeaders['retry-after']
              retryAfter = Array.isArray(value) ? value[0] : value
              headersKept = keptHeaders(responseHeaders)
            },
            onResponseData(control, chunk) {
              // Copied: the excerpt outlives the chunk, and is at most 1 KiB.
              if (read < RESPONSE_BODY_EXCERPT_BYTES) bodyKept.push(Buffer.from(chunk.subarray(0, RESPONSE_BODY_EXCERPT_BYTES - read)))
              read += chunk.length
              if (read < BODY_LIMIT_BYTES) return
              // Enough of the answer: aborting closes the connection, which has nothing more to give.
              settle(answer())
              control.abort(new Error('the response body is longer than it needs to be read'))
            },
            onResponseEnd() {
              settle(answer())
            },
            onResponseError(_controller, error) {
              settle(error instanceof DeliveryError ? error : new DeliveryError('network', describe(error)))
            },
          },
        )
      } catch (error) {
        settle(new DeliveryError('network', describe(error)))
      }
    })
  }

  /**
   * Closes every pool and its connections; a later post opens new ones. Called
   * with nothing in flight, but a connection may still be waiting for a DNS
   * answer that never comes: it is destroyed, not waited for.
   */
  async close(): Promise<void> {
    const pools = [...this.#pools.values()].map((entry) => entry.pool)
    this.#pools.clear()
    clearInterval(this.#sweeper)
    this.#sweeper = undefined
    await Promise.all(pools.map((pool) => pool.destroy()))
  }

  #pool({ endpointId, maxConnections }: WebhookPost, origin: string): PoolEntry {
    // A URL changed to another origin never reuses the connections made for the old one, nor a changed cap a pool sized for the old one.
    const key = `${endpointId} ${maxConnections} ${origin}`
    let entry = this.#pools.get(key)
    if (entry === undefined) {
      // The redirect interceptor is not installed, so a 3xx is the answer; the deadline alone times the exchange.
      const pool = new Pool(origin, { connect: this.#connect, connections: maxConnections, headersTimeout: 0, bodyTimeout: 0 })
      entry = { pool, inFlight: 0, lastUsed: performance.now() }
      this.#pools.set(key, entry)
      this.#sweeper ??= setInterval(() => this.#closeIdle(), POOL_IDLE_MS).unref()
    }
    return entry
  }

  #closeIdle(): void {
    const now = performance.now()
    for (const [key, entry] of this.#pools) {
      if (entry.inFlight > 0 || now - entry.lastUsed < POOL_IDLE_MS) continue
      this.#pools.delete(key)
      void entry.pool.destroy()
    }
    if (this.#pools.size === 0) {
      clearInterval(this.#sweeper)
      this.#sweeper = undefined
    }
  }
}

/** The first headers of an answer, a repeated one's values joined as HTTP joins them, each cut to its bound. */
function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers).slice(0, RESPONSE_HEADERS_KEPT)) {
    if (value !== undefined) kept[name] = (Array.isArray(value) ? value.join(', ') : value).slice(0, RESPONSE_HEADER_VALUE_CHARS)
  }
  return kept
}

/**
 * The body's opening as text: a character cut by the bound is left out (a
 * streaming decode keeps it back), and NUL, which PostgreSQL's text and
 * jsonb cannot hold, is shown as the replacement character.
 */
function bodyText(chunks: readonly Buffer[]): string {
  return new TextDecoder().decode(Buffer.concat(chunks), { stream: true }).replaceAll('\u0000', '\uFFFD')
}

type Addresses = [ResolvedAddress, ...ResolvedAddress[]]

/**
 * The lookup of every connection a pool makes: the hostname's addresses, each
 * vetted, are all the socket may dial (Node asks for every address when it
 * races IPv4 against IPv6, and for one otherwise). IP literals never reach a
 * lookup; webhookUrlProblem has judged them.
 */
function vettedLookup(options: PosterOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolve(hostname, options.lookup)
      .then((addresses) => {
        if (!options.allowPrivate) {
          const refused = addresses.find(({ address }) => !isPublicAddress(address))
          // One private answer is enough: the connection may fall back to any of them, and mixing public with private answers is how rebinding starts.
          if (refused !== undefined) {
            throw new DeliveryError('address_refused', `${hostname} resolves to ${refused.address}, which is not a public address`)
          }
        }
        if (lookupOptions.all) callback(null, addresses)
        else callback(null, addresses[0].address, addresses[0].family)
      })
      .catch((error: DeliveryError) => callback(error, '', 0))
  }
}

async function resolve(hostname: string, lookup: PosterOptions['lookup']): Promise<Addresses> {
  let addresses: ResolvedAddress[]
  try {
    addresses = await (lookup ?? systemLookup)(hostname)
  } catch (error) {
    throw new DeliveryError('dns', `could not resolve ${hostname}: ${describe(error)}`)
  }
  const [first, ...rest] = addresses
  if (first === undefined) throw new DeliveryError('dns', `${hostname} resolves to no address`)
  return [first, ...rest]
}

async function systemLookup(hostname: string): Promise<ResolvedAddress[]> {
  // verbatim keeps the resolver's order, so the first address tried is the one DNS prefers.
  const answers = await dnsLookup(hostname, { all: true, verbatim: true })
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
// The three date formats RFC 9110 (section 5.6.7) requires recipients to accept.
const IMF_FIXDATE = /^[A-Z][a-z]{2}, (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/
const RFC_850 = /^[A-Z][a-z]+, (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/
const ASCTIME = /^[A-Z][a-z]{2} ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/

/** `Retry-After` as milliseconds from `nowMs`: delta-seconds or an HTTP-date, never negative, at most a day. */
function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, RETRY_AFTER_CAP_MS)
  const at = parseHttpDate(text, nowMs)
  return at === undefined ? undefined : Math.min(Math.max(at - nowMs, 0), RETRY_AFTER_CAP_MS)
}

function parseHttpDate(text: string, nowMs: number): number | undefined {
  let parts: [day: string, month: string, year: number, hour: string, minute: string, second: string] | undefined
  let match = IMF_FIXDATE.exec(text)
  if (match !== null) {
    const [, day = '', month = '', year = '', hour = '', minute = '', second = ''] = match
    parts = [day, month, Number(year), hour, minute, second]
  } else if ((match = RFC_850.exec(text)) !== null) {
    const [, day = '', month = '', year = '', hour = '', minute = '', second = ''] = match
    // RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those digits.
    const thisYear = new Date(nowMs).getUTCFullYear()
    let fullYear = thisYear - (thisYear % 100) + Number(year)
    if (fullYear > thisYear + 50) fullYear -= 100
    parts = [day, month, fullYear, hour, minute, second]
  } else if ((match = ASCTIME.exec(text)) !== null) {
    const [, month = '', day = '', hour = '', minute = '', second = '', year = ''] = match
    parts = [day.trim(), month, Number(year), hour, minute, second]
  }
  if (parts === undefined) return undefined
  const [day, month, year, hour, minute, second] = parts
  const monthIndex = MONTHS.indexOf(month)
  if (monthIndex < 0) return undefined
  const at = Date.UTC(year, monthIndex, Number(day), Number(hour), Number(minute), Number(second))
  // Date.UTC rolls "31 Feb" over into March; a date that does not exist is unparseable, not a different date.
  return new Date(at).getUTCDate() === Number(day) ? at : undefined
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code
    return code !== undefined && !error.message.includes(code) ? `${code}: ${error.message}` : error.message
  }
  return String(error)
}
