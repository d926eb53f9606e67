/**
 * One webhook delivery as one HTTP POST, made safe against receivers we do
 * not trust. The hostname is resolved here and every address is vetted before
 * connecting; the connection then goes to a vetted address and nowhere else,
 * so a DNS answer that changes between the check and the connect (DNS
 * rebinding) cannot steer the request inward. A receiver can neither hold a
 * delivery worker (one deadline covers the whole exchange) nor flood it (the
 * response body is read only up to a small limit), nor send us elsewhere
 * (redirects are answers, never followed).
 *
 * Each delivery opens its own connection (`agent: false`) and closes it when
 * done. That costs a handshake per delivery, but a pooled socket would tie
 * deliveries to each other: one hanging receiver could hold sockets others
 * wait for, and a pool keyed by hostname would reuse connections made to an
 * address vetted for an earlier delivery rather than this one.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { performance } from 'node:perf_hooks'
import { isPublicAddress, webhookUrlProblem } from './urlSafety.ts'

export interface PostResult {
  status: number
  /** From a `Retry-After` header, capped at 24 hours; undefined when absent or unparseable. */
  retryAfterMs: number | undefined
  latencyMs: number
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

export interface PostWebhookOptions {
  url: string
  headers: Record<string, string>
  body: string
  /** Bounds everything: DNS, connect, TLS, sending, and reading the answer. */
  timeoutMs: number
  allowPrivate: boolean
  userAgent: string
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>
  now?: () => number
}

/** Enough for any error text a receiver means us to keep; more is only cost. */
const BODY_LIMIT_BYTES = 64 * 1024
/** A receiver asking us to wait longer than a day is treated as asking for a day. */
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000
/** Headers this module sets itself: a caller's length or host could contradict the request actually sent. */
const OWNED_HEADERS: ReadonlySet<string> = new Set(['content-length', 'host', 'user-agent'])

/** POSTs `body` to `url` and reports the receiver's status; throws only DeliveryError. */
export async function postWebhook(options: PostWebhookOptions): Promise<PostResult> {
  const started = performance.now()
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs)
  const timeout = () => new DeliveryError('timeout', `no complete answer within ${options.timeoutMs} ms`)
  try {
    // Checked again here because a stored URL may predate today's rules.
    const problem = webhookUrlProblem(options.url, options.allowPrivate)
    if (problem !== undefined) throw new DeliveryError('address_refused', problem)
    const url = new URL(options.url)
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    const addresses = await beforeDeadline(resolve(hostname, options.lookup), deadline.signal, timeout)
    if (!options.allowPrivate) {
      const refused = addresses.find(({ address }) => !isPublicAddress(address))
      // One private answer is enough: the connection may fall back to any of them, and mixing public with private answers is how rebinding starts.
      if (refused !== undefined) {
        throw new DeliveryError('address_refused', `${hostname} resolves to ${refused.address}, which is not a public address`)
      }
    }
    const answer = await exchange(url, hostname, addresses, options, deadline.signal, timeout)
    return {
      status: answer.status,
      retryAfterMs: parseRetryAfter(answer.retryAfter, (options.now ?? Date.now)()),
      latencyMs: performance.now() - started,
    }
  } catch (error) {
    throw error instanceof DeliveryError ? error : new DeliveryError('network', describe(error))
  } finally {
    clearTimeout(timer)
  }
}

type Addresses = [ResolvedAddress, ...ResolvedAddress[]]

async function resolve(hostname: string, lookup: PostWebhookOptions['lookup']): Promise<Addresses> {
  const family = isIP(hostname)
  if (family === 4 || family === 6) return [{ address: hostname, family }]
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

/** DNS lookups cannot be cancelled, but a delivery must not wait for one past its deadline. */
function beforeDeadline<T>(work: Promise<T>, deadline: AbortSignal, timeout: () => DeliveryError): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const onAbort = () => reject(timeout())
    if (deadline.aborted) return onAbort()
    deadline.addEventListener('abort', onAbort, { once: true })
    work.then(resolvePromise, reject).finally(() => deadline.removeEventListener('abort', onAbort))
  })
}

interface Answer {
  status: number
  retryAfter: string | undefined
}

function exchange(
  url: URL,
  hostname: string,
  addresses: Addresses,
  options: PostWebhookOptions,
  deadline: AbortSignal,
  timeout: () => DeliveryError,
): Promise<Answer> {
  // Node asks for every address (all: true) when it races IPv4 against IPv6, and for one otherwise.
  const vettedLookup: LookupFunction = (_name, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, addresses)
    else callback(null, addresses[0].address, addresses[0].family)
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(options.headers)) {
    if (!OWNED_HEADERS.has(name.toLowerCase())) headers[name] = value
  }
  const body = Buffer.from(options.body, 'utf8')
  headers['user-agent'] = options.userAgent
  headers['content-length'] = String(body.length)

  return new Promise((resolvePromise, reject) => {
    let settled = false
    // Node derives the Host header from `hostname`, and the TLS server name too unless it is an IP literal.
    const request = (url.protocol === 'https:' ? https : http).request({
      method: 'POST',
      hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers,
      agent: false,
      lookup: vettedLookup,
      ...(url.protocol === 'https:' && isIP(hostname) === 0 ? { servername: hostname } : {}),
    })
    const settle = (outcome: Answer | DeliveryError) => {
      if (settled) return
      settled = true
      deadline.removeEventListener('abort', onAbort)
      // Whether the answer is complete, cut short by the body limit or failed, this connection has nothing more to give.
      request.destroy()
      if (outcome instanceof DeliveryError) reject(outcome)
      else resolvePromise(outcome)
    }
    const onAbort = () => settle(timeout())
    if (deadline.aborted) return onAbort()
    deadline.addEventListener('abort', onAbort, { once: true })

    request.on('error', (error) => settle(new DeliveryError('network', describe(error))))
    request.on('response', (response) => {
      const retryAfter = response.headers['retry-after']
      const answer: Answer = { status: response.statusCode ?? 0, retryAfter }
      let read = 0
      response.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read >= BODY_LIMIT_BYTES) settle(answer)
      })
      response.on('end', () => settle(answer))
      response.on('error', (error) => settle(new DeliveryError('network', describe(error))))
      // Without an 'end' first, the receiver hung up in the middle of its answer.
      response.on('close', () => settle(new DeliveryError('network', 'connection closed before the response ended')))
    })
    request.end(body)
  })
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
