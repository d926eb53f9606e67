/**
 * A WhatsApp Cloud API campaign's provider_config: which business phone number
 * sends (its Graph API phone number ID), which approved message template
 * opens the conversation (outside the 24-hour customer service window only
 * templates may be sent), and the names of the environment variables holding
 * the access token and the app secret. Credentials are never stored here.
 */
import { type ErrorDetail, valueError } from '../../domain/errors.ts'
import type { JsonObject } from '../../domain/types.ts'

export const DEFAULT_ACCESS_TOKEN_ENV = 'WHATSAPP_ACCESS_TOKEN'
export const DEFAULT_APP_SECRET_ENV = 'WHATSAPP_APP_SECRET'
/** The 24-hour customer service window a reply opens is what a template asks for. */
export const DEFAULT_REPLY_WINDOW_S = 86_400
const MIN_REPLY_WINDOW_S = 60
const MAX_REPLY_WINDOW_S = 604_800

/** What `start` reads from a config that `checkWhatsAppCloudConfig` accepted, defaults applied. */
export interface WhatsAppCloudConfig {
  phoneNumberId: string
  templateName: string
  templateLanguage: string | undefined
  bodyParameters: string[]
  accessTokenEnv: string
  appSecretEnv: string
  replyWindowS: number
}

type Loc = ErrorDetail['loc']

const PHONE_NUMBER_ID = /^[0-9]{1,32}$/
/** Meta's rule for template names: lowercase alphanumerics and underscores, at most 512. */
const TEMPLATE_NAME = /^[a-z0-9_]{1,512}$/
/** Meta's template language codes: `en`, `fil`, `en_US`, `pt_BR`. */
const TEMPLATE_LANGUAGE = /^[a-z]{2,3}(_[A-Z]{2})?$/
/**
 * Credentials are named, never held, and only variables meant for WhatsApp
 * may be named: otherwise a campaign could send another secret of the
 * service (its database URL, the operator token) to Meta as a token.
 */
const ENV_NAME = /^WHATSAPP_[A-Z0-9_]{1,100}$/

const TOP_FIELDS = ['phone_number_id', 'template', 'access_token_env', 'app_secret_env', 'reply_window_s']
const TEMPLATE_FIELDS = ['name', 'language', 'body_parameters']

/**
 * The 422 entries for a provider_config, as a pydantic model with
 * `extra='forbid'` reports them: fields in declaration order, then unknown keys.
 */
export function checkWhatsAppCloudConfig(config: unknown, prefix: Loc): ErrorDetail[] {
  const errors: ErrorDetail[] = []
  if (!isObject(config)) return [{ type: 'dict_type', loc: prefix, msg: 'Input should be a valid dictionary', input: config }]

  const phoneNumberId = requiredString(config, 'phone_number_id', prefix, errors)
  if (phoneNumberId !== undefined && !PHONE_NUMBER_ID.test(phoneNumberId)) {
    errors.push(valueError([...prefix, 'phone_number_id'], phoneNumberId, 'phone_number_id must be the digits of a WhatsApp Business phone number ID'))
  }

  if (!Object.hasOwn(config, 'template')) {
    errors.push(missing([...prefix, 'template'], config))
  } else {
    checkTemplate(config.template, [...prefix, 'template'], errors)
  }

  for (const field of ['access_token_env', 'app_secret_env']) {
    const name = optionalString(config, field, prefix, errors)
    if (name !== undefined && !ENV_NAME.test(name)) {
      errors.push(valueError([...prefix, field], name, `${field} must name an environment variable WHATSAPP_<NAME> (capital letters, digits, underscores)`))
    }
  }

  if (given(config, 'reply_window_s')) {
    checkReplyWindow(config.reply_window_s, [...prefix, 'reply_window_s'], errors)
  }

  extraKeys(config, TOP_FIELDS, prefix, errors)
  return errors
}

function checkTemplate(template: unknown, loc: Loc, errors: ErrorDetail[]): void {
  if (!isObject(template)) {
    errors.push({ type: 'dict_type', loc, msg: 'Input should be a valid dictionary', input: template })
    return
  }
  const name = requiredString(template, 'name', loc, errors)
  if (name !== undefined && !TEMPLATE_NAME.test(name)) {
    errors.push(valueError([...loc, 'name'], name, 'name must be an approved template name: lowercase letters, digits and underscores, at most 512'))
  }
  const language = optionalString(template, 'language', loc, errors)
  if (language !== undefined && !TEMPLATE_LANGUAGE.test(language)) {
    errors.push(valueError([...loc, 'language'], language, 'language must be a WhatsApp template language code such as en, en_US or pt_BR'))
  }
  if (given(template, 'body_parameters')) {
    const keys = template.body_parameters
    if (!Array.isArray(keys)) {
      errors.push({ type: 'list_type', loc: [...loc, 'body_parameters'], msg: 'Input should be a valid list', input: keys })
    } else {
      keys.forEach((key, index) => {
        const itemLoc = [...loc, 'body_parameters', index]
        if (typeof key !== 'string') errors.push(stringType(itemLoc, key))
        else if (key === '') errors.push(valueError(itemLoc, key, 'a body parameter must name a context key'))
      })
    }
  }
  extraKeys(template, TEMPLATE_FIELDS, loc, errors)
}

/** pydantic's `conint(ge=60, le=604800)` in lax mode, without its string parsing: the config is stored as sent. */
function checkReplyWindow(value: unknown, loc: Loc, errors: ErrorDetail[]): void {
  if (typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value)) {
    errors.push({ type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value })
  } else if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    errors.push({ type: 'int_type', loc, msg: 'Input should be a valid integer', input: value })
  } else if (value < MIN_REPLY_WINDOW_S) {
    errors.push({ type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${MIN_REPLY_WINDOW_S}`, input: value, ctx: { ge: MIN_REPLY_WINDOW_S } })
  } else if (value > MAX_REPLY_WINDOW_S) {
    errors.push({ type: 'less_than_equal', loc, msg: `Input should be less than or equal to ${MAX_REPLY_WINDOW_S}`, input: value, ctx: { le: MAX_REPLY_WINDOW_S } })
  }
}

/** The typed view of a config this module has accepted. */
export function readWhatsAppCloudConfig(config: JsonObject): WhatsAppCloudConfig {
  const template = config.template as JsonObject
  return {
    phoneNumberId: config.phone_number_id as string,
    templateName: template.name as string,
    templateLanguage: (template.language as string | null | undefined) ?? undefined,
    bodyParameters: (template.body_parameters as string[] | undefined) ?? [],
    accessTokenEnv: (config.access_token_env as string | undefined) ?? DEFAULT_ACCESS_TOKEN_ENV,
    appSecretEnv: (config.app_secret_env as string | undefined) ?? DEFAULT_APP_SECRET_ENV,
    replyWindowS: (config.reply_window_s as number | undefined) ?? DEFAULT_REPLY_WINDOW_S,
  }
}

function requiredString(object: Record<string, unknown>, field: string, loc: Loc, errors: ErrorDetail[]): string | undefined {
  if (!Object.hasOwn(object, field)) {
    errors.push(missing([...loc, field], object))
    return undefined
  }
  return stringField(object, field, loc, errors)
}

function optionalString(object: Record<string, unknown>, field: string, loc: Loc, errors: ErrorDetail[]): string | undefined {
  return given(object, field) ? stringField(object, field, loc, errors) : undefined
}

/** As the rest of the API does (pydantic's `X | None = None`), an optional field sent as null counts as not sent. */
function given(object: Record<string, unknown>, field: string): boolean {
  return Object.hasOwn(object, field) && object[field] !== null
}

function stringField(object: Record<string, unknown>, field: string, loc: Loc, errors: ErrorDetail[]): string | undefined {
  const value = object[field]
  if (typeof value === 'string') return value
  errors.push(stringType([...loc, field], value))
  return undefined
}

function extraKeys(object: Record<string, unknown>, known: string[], loc: Loc, errors: ErrorDetail[]): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) {
      errors.push({ type: 'extra_forbidden', loc: [...loc, key], msg: 'Extra inputs are not permitted', input: object[key] })
    }
  }
}

const missing = (loc: Loc, input: unknown): ErrorDetail => ({ type: 'missing', loc, msg: 'Field required', input })
const stringType = (loc: Loc, input: unknown): ErrorDetail => ({ type: 'string_type', loc, msg: 'Input should be a valid string', input })

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
