/**
 * The console's only way to the service: its public API, with the signed-in
 * credential as a bearer token. Errors come back in words, with the
 * request_id an operator can find in the service's log.
 */

const CREDENTIAL = 'cts.credential'

/** The credential of this tab, kept for the tab's life only (sessionStorage), or undefined. */
export function storedCredential() {
  const raw = sessionStorage.getItem(CREDENTIAL)
  return raw === null ? undefined : JSON.parse(raw)
}

export function storeCredential(credential) {
  sessionStorage.setItem(CREDENTIAL, JSON.stringify(credential))
}

export function forgetCredential() {
  sessionStorage.removeItem(CREDENTIAL)
}

/** An answer other than 2xx: its status, its words, and the request_id to quote. */
export class ApiFailure extends Error {
  constructor(status, body, requestId) {
    super(describeFailure(status, body))
    this.status = status
    this.body = body
    this.requestId = requestId
  }
}

function describeFailure(status, body) {
  if (body?.error?.message) return body.error.message
  if (Array.isArray(body?.detail)) {
    return body.detail.map((entry) => `${entry.loc.filter((part) => part !== 'body' && part !== 'query').join('.') || 'request'}: ${entry.msg}`).join('; ')
  }
  if (status === 0) return 'The service could not be reached.'
  return `The service answered ${status}.`
}

/** Calls the API with `token`; resolves to the response's `data`, or throws an ApiFailure. */
export async function call(token, method, path, body) {
  let response
  try {
    response = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    })
  } catch {
    throw new ApiFailure(0, undefined, undefined)
  }
  const text = await response.text()
  let parsed
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = undefined
  }
  if (!response.ok) throw new ApiFailure(response.status, parsed, response.headers.get('x-request-id') ?? undefined)
  return parsed?.data
}

/** A query string of the defined, non-empty values. */
export function query(values) {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== '') params.set(name, String(value))
  const text = params.toString()
  return text === '' ? '' : `?${text}`
}
