/**
 * One JSON request to a provider's REST API, as the agent platforms' adapters
 * make them: an answer of any status is returned (each adapter reads its own
 * refusals), and a request with no answer (a lost connection, a timeout)
 * throws, since the provider may then have acted on it.
 */

/** A provider's answer: its status, its body as JSON (undefined when it is not), and its Retry-After header. */
export interface ProviderAnswer {
  status: number
  body: unknown
  retryAfter: string | null
}

export interface ProviderRequest {
  method: 'GET' | 'POST'
  /** The provider's credential headers, and any others; JSON's are added. */
  headers: Record<string, string>
  body?: object
  timeoutMs: number
  /** What the request is, in the error when no answer came (the provider and the path, without ids). */
  label: string
}

export async function requestProvider(url: string, request: ProviderRequest): Promise<ProviderAnswer> {
  const headers: Record<string, string> = { ...request.headers, accept: 'application/json' }
  if (request.body !== undefined) headers['content-type'] = 'application/json'
  try {
    const response = await fetch(url, {
      method: request.method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: AbortSignal.timeout(request.timeoutMs),
      // A redirect is not the provider's: following it could carry the credential elsewhere.
      redirect: 'error',
    })
    const text = await response.text()
    return { status: response.status, body: parseJson(text), retryAfter: response.headers.get('retry-after') }
  } catch (error) {
    const why = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${request.timeoutMs} ms` : 'connection failed'
    throw new Error(`${request.label}: ${why}`, { cause: error })
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
