/**
 * A Retell campaign's provider_config: the number the calls are placed from
 * (`from_number`, a number bought in or imported to Retell), the agent that
 * speaks (`agent_id` and `agent_version`, sent as Retell's
 * override_agent_id / override_agent_version; without them Retell uses the
 * number's own outbound agent), the environment variable holding the API key
 * (which also signs Retell's webhooks), and which fields of the agent's post-
 * call analysis (`custom_analysis_data`) carry the client's disposition, a
 * callback time and an opt-out.
 *
 * The API key is never part of the document, only the name of the variable
 * that holds it. Types are checked strictly (no "3" for 3), because the
 * document is stored as sent and read back as it is when a call is placed.
 */
import { normalizePhone } from '../../domain/contact.ts'
import { type ErrorDetail, valueError } from '../../domain/errors.ts'
import type { JsonObject } from '../../domain/types.ts'

export interface RetellConfig {
  fromNumber: string
  agentId: string | undefined
  agentVersion: number | undefined
  apiKeyEnv: string
  /** Keys of custom_analysis_data read into the result's disposition, callback_at and opt_out. */
  dispositionField: string
  callbackAtField: string
  optOutField: string
}

const DEFAULT_API_KEY_ENV = 'RETELL_API_KEY'
/**
 * Only RETELL_* names, so that a campaign cannot make the service send one of
 * its other secrets (the database URL, another provider's token) to Retell as
 * a bearer token, or verify webhooks with it.
 */
const API_KEY_ENV_NAME = /^RETELL_[A-Z0-9_]{1,92}$/
/** Retell's agent ids are opaque tokens ("oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD" in its reference). */
const AGENT_ID = /^[A-Za-z0-9_-]{1,128}$/
/** A key of the analysis' custom data, as named in the agent's post-call analysis settings. */
const MAX_FIELD_NAME = 128

const FIELDS = ['from_number', 'agent_id', 'agent_version', 'api_key_env', 'disposition_field', 'callback_at_field', 'opt_out_field'] as const
type Field = (typeof FIELDS)[number]
type Loc = ErrorDetail['loc']

/** 422 entries for a provider_config, in field order and then extra keys, as Twilio's are reported. */
export function checkRetellConfig(config: unknown, prefix: Loc): ErrorDetail[] {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    return [{ type: 'model_attributes_type', loc: [...prefix], msg: 'Input should be a valid dictionary or object to extract fields from', input: config }]
  }
  const input = config as Record<string, unknown>
  const errors: ErrorDetail[] = []
  for (const field of FIELDS) {
    const value = Object.hasOwn(input, field) ? input[field] : undefined
    // An optional field sent as null counts as not sent, as elsewhere in the API.
    if (value === undefined || (value === null && field !== 'from_number')) {
      if (field === 'from_number') errors.push({ type: 'missing', loc: [...prefix, field], msg: 'Field required', input })
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

const fieldName = (field: string) =>
  checkedString((value) => value.trim() === value && value !== '', `${field} must name a field of the agent's custom analysis data`, MAX_FIELD_NAME)

const FIELD_CHECKS: Record<Field, (value: unknown, loc: Loc) => ErrorDetail | undefined> = {
  from_number: checkedString((value) => normalizePhone(value) === value, 'from_number must be a valid phone number in E.164 form, such as +14155552671'),
  agent_id: checkedString((value) => AGENT_ID.test(value), 'agent_id must be a Retell agent id (letters, digits, "_" and "-")'),
  agent_version: (value, loc) => {
    if (typeof value !== 'number') return { type: 'int_type', loc, msg: 'Input should be a valid integer', input: value }
    if (!Number.isInteger(value)) return { type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value }
    return value < 0 ? { type: 'greater_than_equal', loc, msg: 'Input should be greater than or equal to 0', input: value, ctx: { ge: 0 } } : undefined
  },
  api_key_env: checkedString(
    (value) => API_KEY_ENV_NAME.test(value),
    'api_key_env must be the name of an environment variable starting with RETELL_ (uppercase letters, digits, underscores)',
  ),
  disposition_field: fieldName('disposition_field'),
  callback_at_field: fieldName('callback_at_field'),
  opt_out_field: fieldName('opt_out_field'),
}

/** A string field whose value must pass `valid`, refused with a `value_error` saying `message` when it does not. */
function checkedString(valid: (value: string) => boolean, message: string, maxLength?: number) {
  return (value: unknown, loc: Loc): ErrorDetail | undefined => {
    if (typeof value !== 'string') return { type: 'string_type', loc, msg: 'Input should be a valid string', input: value }
    if (maxLength !== undefined && [...value].length > maxLength) {
      return { type: 'string_too_long', loc, msg: `String should have at most ${maxLength} characters`, input: value, ctx: { max_length: maxLength } }
    }
    return valid(value) ? undefined : valueError(loc, value, message)
  }
}

/** A config that `checkRetellConfig` accepted, with its defaults filled in. */
export function readRetellConfig(config: JsonObject): RetellConfig {
  const optional = <T>(field: Field) => (config[field] as T | null | undefined) ?? undefined
  return {
    fromNumber: config.from_number as string,
    agentId: optional<string>('agent_id'),
    agentVersion: optional<number>('agent_version'),
    apiKeyEnv: optional<string>('api_key_env') ?? DEFAULT_API_KEY_ENV,
    dispositionField: optional<string>('disposition_field') ?? 'disposition',
    callbackAtField: optional<string>('callback_at_field') ?? 'callback_at',
    optOutField: optional<string>('opt_out_field') ?? 'opt_out',
  }
}
