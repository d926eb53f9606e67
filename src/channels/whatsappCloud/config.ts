/**
 * A WhatsApp Cloud API campaign's provider_config: which business phone number
 * sends (its Graph API phone number ID), which approved message template
 * opens the conversation (outside the 24-hour customer service window only
 * templates may be sent), and the names of the environment variables holding
 * the access token and the app secret. Credentials are never stored here.
 *
 * A TypeBox schema, checked and read as every provider's
 * (channels/providerConfig.ts): the campaign keeps the normalized value
 * ("3600" sent for reply_window_s is kept as 3600).
 */
import { Type } from '@sinclair/typebox'
import { checkedString } from '../../validation/fields.ts'
import { storedConfigReader } from '../providerConfig.ts'

export const DEFAULT_ACCESS_TOKEN_ENV = 'WHATSAPP_ACCESS_TOKEN'
export const DEFAULT_APP_SECRET_ENV = 'WHATSAPP_APP_SECRET'
/** The 24-hour customer service window a reply opens is what a template asks for. */
export const DEFAULT_REPLY_WINDOW_S = 86_400
const MIN_REPLY_WINDOW_S = 60
const MAX_REPLY_WINDOW_S = 604_800

/** What `start` reads from a stored config, defaults applied. */
export interface WhatsAppCloudConfig {
  phoneNumberId: string
  templateName: string
  templateLanguage: string | undefined
  bodyParameters: string[]
  accessTokenEnv: string
  appSecretEnv: string
  replyWindowS: number
}

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

const checked = (valid: (value: string) => boolean, message: string, description: string) => checkedString(valid, message, { description })

const envName = (field: string, description: string) =>
  Type.Optional(
    checked((value) => ENV_NAME.test(value), `${field} must name an environment variable WHATSAPP_<NAME> (capital letters, digits, underscores)`, description),
  )

const TemplateSchema = Type.Object(
  {
    name: checked(
      (value) => TEMPLATE_NAME.test(value),
      'name must be an approved template name: lowercase letters, digits and underscores, at most 512',
      'The approved message template that opens the conversation: lowercase letters, digits and underscores, at most 512.',
    ),
    language: Type.Optional(
      checked(
        (value) => TEMPLATE_LANGUAGE.test(value),
        'language must be a WhatsApp template language code such as en, en_US or pt_BR',
        "The template's language code (en, en_US, pt_BR); without it, the contact's language, or en.",
      ),
    ),
    body_parameters: Type.Optional(
      Type.Array(checked((value) => value !== '', 'a body parameter must name a context key', 'A key of the task context.'), {
        description: "The context keys whose values fill the template body's {{1}}, {{2}}..., in order.",
      }),
    ),
  },
  { additionalProperties: false },
)

export const WhatsAppCloudConfigSchema = Type.Object(
  {
    phone_number_id: checked(
      (value) => PHONE_NUMBER_ID.test(value),
      'phone_number_id must be the digits of a WhatsApp Business phone number ID',
      "The sending business phone number's Graph API phone number ID (digits, at most 32).",
    ),
    template: TemplateSchema,
    access_token_env: envName('access_token_env', `The environment variable holding the access token: WHATSAPP_ and capital letters, digits, underscores (default ${DEFAULT_ACCESS_TOKEN_ENV}).`),
    app_secret_env: envName('app_secret_env', `The environment variable holding the app secret: WHATSAPP_ and capital letters, digits, underscores (default ${DEFAULT_APP_SECRET_ENV}).`),
    reply_window_s: Type.Optional(
      Type.Integer({
        minimum: MIN_REPLY_WINDOW_S,
        maximum: MAX_REPLY_WINDOW_S,
        description: `How long to wait for a reply before the interaction is settled, in seconds (default ${DEFAULT_REPLY_WINDOW_S}, the customer service window).`,
      }),
    ),
  },
  { additionalProperties: false },
)

/** A stored config, normalized, with its defaults filled in. */
export const readWhatsAppCloudConfig = storedConfigReader(
  WhatsAppCloudConfigSchema,
  (value): WhatsAppCloudConfig => ({
    phoneNumberId: value.phone_number_id,
    templateName: value.template.name,
    templateLanguage: value.template.language,
    bodyParameters: value.template.body_parameters ?? [],
    accessTokenEnv: value.access_token_env ?? DEFAULT_ACCESS_TOKEN_ENV,
    appSecretEnv: value.app_secret_env ?? DEFAULT_APP_SECRET_ENV,
    replyWindowS: value.reply_window_s ?? DEFAULT_REPLY_WINDOW_S,
  }),
)

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
