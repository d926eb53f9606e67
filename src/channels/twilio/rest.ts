/**
 * Twilio's REST API (2010-04-01) as both Twilio channels speak it: HTTP basic
 * auth with the account SID and its auth token, form-encoded requests, JSON
 * answers, and refusals as `{code, message, more_info, status}`.
 */
import { type ProviderAnswer, requestProvider } from '../providerHttp.ts'

/** Twilio's messages are short; anything longer is not one of them and stays out of the reason. */
const MAX_REASON_MESSAGE = 300

export interface TwilioRest {
  apiBaseUrl: string
  timeoutMs: number
}

/** One REST request (see providerHttp.ts); throws when no answer came (network error, timeout), since Twilio may then have acted on it. */
export function twilioRequest(rest: TwilioRest, method: 'GET' | 'POST', path: string, accountSid: string, token: string, form?: URLSearchParams): Promise<ProviderAnswer> {
  const authorization = `Basic ${Buffer.from(`${accountSid}:${token}`).toString('base64')}`
  return requestProvider(rest.apiBaseUrl + path, { method, headers: { authorization }, body: form, timeoutMs: rest.timeoutMs, label: `Twilio ${method} ${path}` })
}

export function accountPath(accountSid: string): string {
  return `/2010-04-01/Accounts/${accountSid}`
}

/**
 * A REST refusal, to make a reason of: its error code, `what` ("HTTP 400,
 * error 21211") and `said` (": " and Twilio's message, with the number it was
 * about taken out, since it quotes the To: contact data stays out of reasons).
 */
export function twilioRefusal(answer: ProviderAnswer, to: string): { code: number | undefined; what: string; said: string } {
  const rawCode = field(answer.body, 'code')
  const code = typeof rawCode === 'number' ? rawCode : undefined
  const rawMessage = field(answer.body, 'message')
  const message = typeof rawMessage === 'string' ? rawMessage.replaceAll(to, '[To]').slice(0, MAX_REASON_MESSAGE) : undefined
  const what = code === undefined ? `HTTP ${answer.status}` : `HTTP ${answer.status}, error ${code}`
  return { code, what, said: message === undefined ? '' : `: ${message}` }
}

/** HTTP 429, or error 20429 "Too Many Requests": Twilio's own throttling. */
export function isThrottled(answer: ProviderAnswer, code: number | undefined): boolean {
  return answer.status === 429 || code === 20429
}

export function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined
}
