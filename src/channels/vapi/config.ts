/**
 * A Vapi campaign's provider_config: the assistant that holds the
 * conversation and the Vapi phone number it calls from (their Vapi ids),
 * the names of the environment variables holding the private API key and
 * the secret of the server URL's HMAC credential, the longest a call may
 * last, and which fields of the assistant's structured data carry the
 * client's disposition, a callback time and an opt-out.
 *
 * A TypeBox schema, checked and read as every provider's
 * (channels/providerConfig.ts).
 */
import { Type } from '@sinclair/typebox'
import { checkedString } from '../../validation/fields.ts'
import { UnknownCallerMessageSchema } from '../callbacks.ts'
import { storedConfigReader } from '../providerConfig.ts'

export const DEFAULT_API_KEY_ENV = 'VAPI_API_KEY'
export const DEFAULT_WEBHOOK_SECRET_ENV = 'VAPI_WEBHOOK_SECRET'
/**
 * Vapi's own default for an assistant's maxDurationSeconds ("@default 600
 * (10 minutes)", AssistantOverrides in server-sdk-typescript 2.0.0). It is
 * always sent with the call, so that the settle time holds whatever the
 * assistant says.
 */
export const DEFAULT_MAX_DURATION_S = 600
/** Vapi's bounds for maxDurationSeconds (openapi CreateAssistantDTO: minimum 10, maximum 43200). */
const MIN_DURATION_S = 10
const MAX_DURATION_S = 43_200

/**
 * Credentials are named, never held, and only VAPI_* variables may be named:
 * otherwise a campaign could send another secret of the service (the
 * database URL, the operator token) to Vapi as its key.
 */
const ENV_NAME = /^VAPI_[A-Z0-9_]{1,100}$/
const envName = (field: string, holds: string, fallback: string) =>
  Type.Optional(
    checkedString((value) => ENV_NAME.test(value), `${field} must be the name of an environment variable starting with VAPI_ (uppercase letters, digits, underscores)`, {
      description: `The environment variable holding ${holds} (default ${fallback}).`,
    }),
  )
/** Vapi's ids are UUIDs; the bound only keeps a stored config small. */
const VAPI_ID = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' })
const FIELD_NAME = (what: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: `The key of the assistant's structured data (analysis.structuredData) that holds ${what}.` }))

export const VapiConfigSchema = Type.Object(
  {
    assistant_id: VAPI_ID,
    phone_number_id: VAPI_ID,
    api_key_env: envName('api_key_env', 'the private API key', DEFAULT_API_KEY_ENV),
    webhook_secret_env: envName('webhook_secret_env', "the secret of the server URL's HMAC credential", DEFAULT_WEBHOOK_SECRET_ENV),
    max_duration_s: Type.Optional(Type.Integer({ minimum: MIN_DURATION_S, maximum: MAX_DURATION_S })),
    disposition_field: FIELD_NAME('the disposition, a short code of the client’s own'),
    callback_at_field: FIELD_NAME('when the person asked to be called again (RFC 3339 with an offset)'),
    opt_out_field: FIELD_NAME('whether the person asked not to be contacted again (a boolean)'),
    unknown_caller_message: UnknownCallerMessageSchema,
  },
  { additionalProperties: false },
)
export interface VapiConfig {
  assistantId: string
  phoneNumberId: string
  apiKeyEnv: string
  webhookSecretEnv: string
  maxDurationS: number
  dispositionField: string | undefined
  callbackAtField: string | undefined
  optOutField: string | undefined
  /** Spoken to an unknown caller, whose call Vapi then ends; undefined: the assistant takes the call. */
  unknownCallerMessage: string | undefined
}

/** A stored config, normalized, with its defaults filled in. */
export const readVapiConfig = storedConfigReader(
  VapiConfigSchema,
  (value): VapiConfig => ({
    assistantId: value.assistant_id,
    phoneNumberId: value.phone_number_id,
    apiKeyEnv: value.api_key_env ?? DEFAULT_API_KEY_ENV,
    webhookSecretEnv: value.webhook_secret_env ?? DEFAULT_WEBHOOK_SECRET_ENV,
    maxDurationS: value.max_duration_s ?? DEFAULT_MAX_DURATION_S,
    dispositionField: value.disposition_field,
    callbackAtField: value.callback_at_field,
    optOutField: value.opt_out_field,
    unknownCallerMessage: value.unknown_caller_message,
  }),
)
