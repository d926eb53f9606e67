/**
 * An ElevenLabs Agents campaign's provider_config: which agent talks
 * (`agent_id`), from which of the workspace's phone numbers
 * (`agent_phone_number_id`), through which of its telephony integrations
 * (`telephony`: its Twilio integration, or a SIP trunk; the two outbound-call
 * requests take the same body), how long to let the phone ring, which of the
 * agent's data collection items hold the client's disposition, a callback
 * time and an opt-out, and the names of the environment variables holding
 * the API key and the post-call webhook's HMAC secret.
 *
 * Credentials are never part of the document, only the names of the
 * variables holding them. Types are checked strictly (no "30" for 30),
 * because the document is stored as sent and read back as it is when a call
 * is placed.
 */
import { type ErrorDetail, valueError } from '../../domain/errors.ts'
import type { JsonObject } from '../../domain/types.ts'

export const TELEPHONIES = ['twilio', 'sip_trunk'] as const
export type Telephony = (typeof TELEPHONIES)[number]

export interface ElevenLabsConfig {
  agentId: string
  agentPhoneNumberId: string
  telephony: Telephony
  apiKeyEnv: string
  webhookSecretEnv: string
  ringTimeoutS: number
  /** The data collection item whose value is the result's disposition, if any. */
  dispositionField: string | undefined
  /** The one whose value is the result's callback_at (an ISO 8601 instant). */
  callbackAtField: string | undefined
  /** The one whose boolean value is the result's opt_out. */
  optOutField: string | undefined
}

export const DEFAULT_API_KEY_ENV = 'ELEVENLABS_API_KEY'
export const DEFAULT_WEBHOOK_SECRET_ENV = 'ELEVENLABS_WEBHOOK_SECRET'
/** As Twilio's own default ring time (its `Timeout`), which ElevenLabs' Twilio integration dials through. */
const DEFAULT_RING_TIMEOUT_S = 60
const MIN_RING_TIMEOUT_S = 5
const MAX_RING_TIMEOUT_S = 600

/** ElevenLabs' ids (agent_…, phnum_…) are letters, digits, `_` and `-`. */
const ELEVENLABS_ID = /^[A-Za-z0-9_-]{1,128}$/
/** A data collection item's identifier, as the agent's analysis settings name it. */
const DATA_FIELD = /^[A-Za-z0-9_.-]{1,128}$/
/**
 * Only ELEVENLABS_* names, so that a campaign cannot make the service send one
 * of its other secrets (the database URL, the operator token) to ElevenLabs as
 * an API key, or verify webhooks with it.
 */
const ENV_NAME = /^ELEVENLABS_[A-Z0-9_]{1,100}$/

const FIELDS = [
  'agent_id',
  'agent_phone_number_id',
  'telephony',
  'api_key_env',
  'webhook_secret_env',
  'ring_timeout_s',
  'disposition_field',
  'callback_at_field',
  'opt_out_field',
] as const
type Field = (typeof FIELDS)[number]
const REQUIRED: ReadonlySet<string> = new Set(['agent_id', 'agent_phone_number_id'])

type Loc = ErrorDetail['loc']

/** 422 entries for a provider_config, in field order and then extra keys, as pydantic reports a model with `extra="forbid"`. */
export function checkElevenLabsConfig(config: unknown, prefix: Loc): ErrorDetail[] {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    return [{ type: 'model_attributes_type', loc: [...prefix], msg: 'Input should be a valid dictionary or object to extract fields from', input: config }]
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
    const problem = FIELD_CHECKS[field](value, [...prefix, field])
    if (problem !== undefined) errors.push(problem)
  }
  for (const key of Object.keys(input)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      errors.push({ type: 'extra_forbidden', loc: [...prefix, key], msg: 'Extra inputs are not permitted', input: input[key] })
    }
  }
  return errors
}

const envName = (field: string) =>
  checkedString((value) => ENV_NAME.test(value), `${field} must be the name of an environment variable starting with ELEVENLABS_ (uppercase letters, digits, underscores)`)
const dataField = (field: string) =>
  checkedString((value) => DATA_FIELD.test(value), `${field} must be the identifier of a data collection item of the agent (letters, digits, _ . -)`)

const FIELD_CHECKS: Record<Field, (value: unknown, loc: Loc) => ErrorDetail | undefined> = {
  agent_id: checkedString((value) => ELEVENLABS_ID.test(value), 'agent_id must be an ElevenLabs agent id (letters, digits, _ and -)'),
  agent_phone_number_id: checkedString((value) => ELEVENLABS_ID.test(value), 'agent_phone_number_id must be an ElevenLabs phone number id (letters, digits, _ and -)'),
  telephony: (value, loc) =>
    TELEPHONIES.includes(value as Telephony)
      ? undefined
      : { type: 'literal_error', loc, msg: "Input should be 'twilio' or 'sip_trunk'", input: value, ctx: { expected: "'twilio' or 'sip_trunk'" } },
  api_key_env: envName('api_key_env'),
  webhook_secret_env: envName('webhook_secret_env'),
  ring_timeout_s: (value, loc) => integerProblem(value, loc, MIN_RING_TIMEOUT_S, MAX_RING_TIMEOUT_S),
  disposition_field: dataField('disposition_field'),
  callback_at_field: dataField('callback_at_field'),
  opt_out_field: dataField('opt_out_field'),
}

/** A string field whose value must pass `valid`, refused with a `value_error` saying `message` when it does not. */
function checkedString(valid: (value: string) => boolean, message: string) {
  return (value: unknown, loc: Loc): ErrorDetail | undefined => {
    if (typeof value !== 'string') return { type: 'string_type', loc, msg: 'Input should be a valid string', input: value }
    return valid(value) ? undefined : valueError(loc, value, message)
  }
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

/** A config that `checkElevenLabsConfig` accepted, with its defaults filled in. */
export function readElevenLabsConfig(config: JsonObject): ElevenLabsConfig {
  const optional = (field: Field) => (config[field] as string | null | undefined) ?? undefined
  return {
    agentId: config.agent_id as string,
    agentPhoneNumberId: config.agent_phone_number_id as string,
    telephony: (config.telephony as Telephony | null | undefined) ?? 'twilio',
    apiKeyEnv: optional('api_key_env') ?? DEFAULT_API_KEY_ENV,
    webhookSecretEnv: optional('webhook_secret_env') ?? DEFAULT_WEBHOOK_SECRET_ENV,
    ringTimeoutS: (config.ring_timeout_s as number | null | undefined) ?? DEFAULT_RING_TIMEOUT_S,
    dispositionField: optional('disposition_field'),
    callbackAtField: optional('callback_at_field'),
    optOutField: optional('opt_out_field'),
  }
}
