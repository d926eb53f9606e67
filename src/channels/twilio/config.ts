/**
 * A Twilio voice campaign's provider_config: the account the calls are
 * placed from, the caller id, how an answered call is handed to the
 * conversation (`handoff`: `redirect` to the app's TwiML at `answer_url`, or
 * `stream` its audio to an agent's WebSocket at `stream_url`),
 * answering-machine detection (`MachineDetection`), how long to let the
 * phone ring (`Timeout`), and what to do on a voicemail (`voicemail`:
 * voicemail.ts).
 *
 * The auth token is never part of the document, only the name of the
 * environment variable that holds it. Types are checked strictly (no "30"
 * for 30, no "true" for true) because the document is stored as sent and read
 * back as it is when a call is placed.
 */
import { normalizePhone } from '../../domain/contact.ts'
import { type ErrorDetail, valueError } from '../../domain/errors.ts'
import type { JsonObject } from '../../domain/types.ts'
import { hasScheme, isHttpsUrl } from '../../validation/fields.ts'
import { checkVoicemail, readVoicemail, type VoicemailSettings } from './voicemail.ts'

export const HANDOFFS = ['redirect', 'stream'] as const
export type HandoffMode = (typeof HANDOFFS)[number]

export interface TwilioConfig {
  accountSid: string
  from: string
  handoff: HandoffMode
  /** The app's TwiML, for `redirect`. */
  answerUrl: string | undefined
  /** The agent's WebSocket, for `stream`. */
  streamUrl: string | undefined
  authTokenEnv: string
  machineDetection: boolean
  ringTimeoutS: number
  voicemail: VoicemailSettings
}

const DEFAULT_AUTH_TOKEN_ENV = 'TWILIO_AUTH_TOKEN'
const DEFAULT_RING_TIMEOUT_S = 30
/** Twilio accepts a `Timeout` of up to 600 seconds; below 5 no one can pick up. */
const MIN_RING_TIMEOUT_S = 5
const MAX_RING_TIMEOUT_S = 600
const MAX_URL_LENGTH = 2048

/** Twilio's own pattern for an account SID. */
const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/
/**
 * Only TWILIO_* names, so that a campaign cannot make the service send one of
 * its other secrets (the database URL, the operator token) to Twilio as a
 * password, or verify callbacks with it.
 */
const TOKEN_ENV_NAME = /^TWILIO_[A-Z0-9_]{1,92}$/

const FIELDS = ['account_sid', 'from', 'handoff', 'answer_url', 'stream_url', 'auth_token_env', 'machine_detection', 'ring_timeout_s', 'voicemail'] as const
const REQUIRED: ReadonlySet<string> = new Set(['account_sid', 'from'])
/** What each handoff needs besides: where the conversation is. */
const NEEDED_BY: Record<HandoffMode, (typeof FIELDS)[number]> = { redirect: 'answer_url', stream: 'stream_url' }

type Loc = ErrorDetail['loc']

/** 422 entries for a provider_config, in field order and then extra keys, as pydantic reports a model with `extra="forbid"`. */
export function checkTwilioConfig(config: unknown, prefix: Loc): ErrorDetail[] {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    return [
      {
        type: 'model_attributes_type',
        loc: [...prefix],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: config,
      },
    ]
  }
  const input = config as Record<string, unknown>
  const errors: ErrorDetail[] = []
  for (const field of FIELDS) {
    const value = Object.hasOwn(input, field) ? input[field] : undefined
    // An optional field sent as null counts as not sent, as elsewhere in the API.
    if (value === undefined || (value === null && !REQUIRED.has(field))) {
      if (REQUIRED.has(field)) errors.push({ type: 'missing', loc: [...prefix, field], msg: 'Field required', input })
      continue
    }
    if (field === 'voicemail') {
      errors.push(...checkVoicemail(value, [...prefix, field], input.machine_detection))
      continue
    }
    const problem = FIELD_CHECKS[field](value, [...prefix, field])
    if (problem !== undefined) errors.push(problem)
  }
  const handoff = input.handoff ?? 'redirect'
  const needed = NEEDED_BY[handoff as HandoffMode]
  if (needed !== undefined && (input[needed] === undefined || input[needed] === null)) {
    errors.push({ type: 'missing', loc: [...prefix, needed], msg: 'Field required', input })
  }
  for (const key of Object.keys(input)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      errors.push({ type: 'extra_forbidden', loc: [...prefix, key], msg: 'Extra inputs are not permitted', input: input[key] })
    }
  }
  return errors
}

const FIELD_CHECKS: Record<Exclude<(typeof FIELDS)[number], 'voicemail'>, (value: unknown, loc: Loc) => ErrorDetail | undefined> = {
  account_sid: checkedString((value) => ACCOUNT_SID.test(value), 'account_sid must be "AC" followed by 32 hexadecimal digits'),
  from: checkedString((value) => normalizePhone(value) === value, 'from must be a valid phone number in E.164 form, such as +14155552671'),
  handoff: (value, loc) =>
    HANDOFFS.includes(value as HandoffMode)
      ? undefined
      : { type: 'literal_error', loc, msg: "Input should be 'redirect' or 'stream'", input: value, ctx: { expected: "'redirect' or 'stream'" } },
  answer_url: checkedString(isHttpsUrl, 'answer_url must be an https URL', MAX_URL_LENGTH),
  // Twilio's <Stream> connects over wss only, and its url takes no query string: values go as <Parameter>s.
  stream_url: checkedString(
    (value) => hasScheme(value, 'wss:') && !value.includes('?'),
    'stream_url must be a wss URL without a query string (Twilio passes the context as stream parameters instead)',
    MAX_URL_LENGTH,
  ),
  auth_token_env: checkedString(
    (value) => TOKEN_ENV_NAME.test(value),
    'auth_token_env must be the name of an environment variable starting with TWILIO_ (uppercase letters, digits, underscores)',
  ),
  machine_detection: (value, loc) =>
    typeof value === 'boolean' ? undefined : { type: 'bool_type', loc, msg: 'Input should be a valid boolean', input: value },
  ring_timeout_s: (value, loc) => integerProblem(value, loc, MIN_RING_TIMEOUT_S, MAX_RING_TIMEOUT_S),
}

/** A string field whose value must pass `valid`, refused with a `value_error` saying `message` when it does not. */
function checkedString(valid: (value: string) => boolean, message: string, maxLength?: number) {
  return (value: unknown, loc: Loc): ErrorDetail | undefined =>
    stringProblem(value, loc, maxLength) ?? (valid(value as string) ? undefined : valueError(loc, value, message))
}

function stringProblem(value: unknown, loc: Loc, maxLength?: number): ErrorDetail | undefined {
  if (typeof value !== 'string') return { type: 'string_type', loc, msg: 'Input should be a valid string', input: value }
  if (maxLength !== undefined && [...value].length > maxLength) {
    return { type: 'string_too_long', loc, msg: `String should have at most ${maxLength} characters`, input: value, ctx: { max_length: maxLength } }
  }
  return undefined
}

function integerProblem(value: unknown, loc: Loc, min: number, max: number): ErrorDetail | undefined {
  if (typeof value !== 'number') return { type: 'int_type', loc, msg: 'Input should be a valid integer', input: value }
  if (!Number.isInteger(value)) {
    return { type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value }
  }
  if (value < min) return { type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${min}`, input: value, ctx: { ge: min } }
  if (value > max) return { type: 'less_than_equal', loc, msg: `Input should be less than or equal to ${max}`, input: value, ctx: { le: max } }
  return undefined
}

/** A config that `checkTwilioConfig` accepted, with its defaults filled in. */
export function readTwilioConfig(config: JsonObject): TwilioConfig {
  return {
    accountSid: config.account_sid as string,
    from: config.from as string,
    handoff: (config.handoff as HandoffMode | null | undefined) ?? 'redirect',
    answerUrl: (config.answer_url as string | null | undefined) ?? undefined,
    streamUrl: (config.stream_url as string | null | undefined) ?? undefined,
    authTokenEnv: (config.auth_token_env as string | null | undefined) ?? DEFAULT_AUTH_TOKEN_ENV,
    machineDetection: (config.machine_detection as boolean | null | undefined) ?? true,
    ringTimeoutS: (config.ring_timeout_s as number | null | undefined) ?? DEFAULT_RING_TIMEOUT_S,
    voicemail: readVoicemail(config.voicemail),
  }
}
