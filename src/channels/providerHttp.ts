/**
 * One request to a provider's REST API (a JSON body, or Twilio's form), as
 * every adapter makes them: an answer of any status is returned (each
 * adapter reads its own refusals), and a request with no answer (a lost
 * connection, a timeout, a redirect) throws, since the provider may then
 * have acted on it.
 *
 * undici's request() on one kept-alive Agent rather than the global fetch:
 * fetch builds a WHATWG Request, Headers and a ReadableStream for each call,
 * and a Create Call to a local server cost 700 µs of CPU through fetch against
 * 200 µs through request() (client and server in one process, 8 at once), a
 * Vapi start being the worker's costliest step end to end. The base URLs are
 * the operator's (environment), not a client's: no address check like the
 * webhook poster's.
 */
import { Agent, request } from 'undici'

/** A provider's answer: its status, its body as JSON (undefined when it is not), and its Retry-After header. */
export interface ProviderAnswer {
  status: number
  body: unknown
  retryAfter: string | null
}

export interface ProviderRequest {
  method: 'GET' | 'POST'
  /** The provider's credential headers, and any others; the body's type and Accept are added. */
  headers: Record<string, string>
  /** Sent as JSON, or form-encoded when URLSearchParams. */
  body?: object | URLSearchParams
  timeoutMs: number
  /** What the request is, in the error when no answer came (the provider and the path, without ids). */
  label: string
}

/** A request with no answer: the provider may have acted on it. `why` says what went wrong (no answer in time, a redirect, a connection refused or cut). */
export class ProviderUnanswered extends Error {
  constructor(
    label: string,
    readonly why: string,
    cause?: unknown,
  ) {
    super(`${label}: ${why}`, { cause })
  }
}

/** Connections to the providers, kept alive between requests; each request's own deadline bounds it. */
const providers = new Agent({ headersTimeout: 0, bodyTimeout: 0 })

export async function requestProvider(url: string, options: ProviderRequest): Promise<ProviderAnswer> {
  const headers: Record<string, string> = { ...options.headers, accept: 'application/json' }
  const form = options.body instanceof URLSearchParams
  if (options.body !== undefined) headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json'
  // One deadline for the whole exchange, connection to last byte.
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs)
  let status: number
  let text: string
  let retryAfter: string | string[] | undefined
  try {
    const response = await request(url, {
      method: options.method,
      headers,
      body: options.body === undefined ? undefined : form ? options.body.toString() : JSON.stringify(options.body),
      signal: deadline.signal,
      dispatcher: providers,
    })
    status = response.statusCode
    retryAfter = response.headers['retry-after']
    text = await response.body.text()
  } catch (error) {
    throw new ProviderUnanswered(options.label, deadline.signal.aborted ? `no answer within ${options.timeoutMs} ms` : 'connection failed', error)
  } finally {
    clearTimeout(timer)
  }
  // Without the redirect interceptor a 3xx is the answer: not the provider's, and following it could carry the credential elsewhere.
  if (status >= 300 && status < 400) throw new ProviderUnanswered(options.label, `answered HTTP ${status}, a redirect`)
  return { status, body: parseJson(text), retryAfter: (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
