/**
 * A Twilio SMS campaign's provider_config: the account the texts are sent
 * from, the sender (a number of the account's, `from`, or a Messaging
 * Service, `messaging_service_sid`, which picks one of its numbers), the
 * text (one, or by the contact's language, with the task's values in its
 * placeholders: domain/messageText.ts), how long a reply is waited for, and
 * what a HELP is answered with.
 *
 * The auth token is never part of the document, only the name of the
 * environment variable that holds it (TWILIO_* only, as for calls).
 */
import { Type } from '@sinclair/typebox'
import { normalizePhone } from '../../domain/contact.ts'
import type { MessageText } from '../../domain/messageText.ts'
import { checkedString, messageTextSchema } from '../../validation/fields.ts'
import { refineModel } from '../../validation/model.ts'
import { storedConfigReader } from '../providerConfig.ts'

export interface TwilioMessagingConfig {
  accountSid: string
  /** The sending number (E.164), or undefined when a Messaging Service sends. */
  from: string | undefined
  messagingServiceSid: string | undefined
  text: MessageText
  authTokenEnv: string
  replyWindowS: number
  /** What a HELP is answered with; undefined: Twilio's own answer (its default opt-out handling). */
  helpText: string | undefined
}

/** Twilio's limit on a message's Body: 1,600 characters (error 21617 beyond). */
export const MAX_SMS_CHARACTERS = 1_600
/** A day, as WhatsApp's window: long enough for a person to answer a text in their own time. */
const DEFAULT_REPLY_WINDOW_S = 86_400
const MIN_REPLY_WINDOW_S = 60
const MAX_REPLY_WINDOW_S = 604_800
const DEFAULT_AUTH_TOKEN_ENV = 'TWILIO_AUTH_TOKEN'
const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/
const MESSAGING_SERVICE_SID = /^MG[0-9a-fA-F]{32}$/
const TOKEN_ENV_NAME = /^TWILIO_[A-Z0-9_]{1,92}$/

export const TwilioMessagingConfigSchema = refineModel(
  Type.Object(
    {
      account_sid: checkedString((value) => ACCOUNT_SID.test(value), 'account_sid must be "AC" followed by 32 hexadecimal digits', {
        description: 'The Twilio account the texts are sent from.',
      }),
      from: Type.Optional(
        checkedString((value) => normalizePhone(value) === value, 'from must be a valid phone number in E.164 form, such as +14155552671', {
          description: "The sending number, one of the account's, in E.164 form; or give messaging_service_sid.",
        }),
      ),
      messaging_service_sid: Type.Optional(
        checkedString((value) => MESSAGING_SERVICE_SID.test(value), 'messaging_service_sid must be "MG" followed by 32 hexadecimal digits', {
          description: 'A Messaging Service of the account, which picks the sending number; or give from.',
        }),
      ),
      text: messageTextSchema(
        MAX_SMS_CHARACTERS,
        'The text: one, or texts by BCP 47 tag ("*" for any other language). Placeholders: {{first_name}}, {{last_name}}, {{language}}, {{context.KEY}}; unknown ones are left empty. At most 1,600 characters once filled in.',
      ),
      auth_token_env: Type.Optional(
        checkedString(
          (value) => TOKEN_ENV_NAME.test(value),
          'auth_token_env must be the name of an environment variable starting with TWILIO_ (uppercase letters, digits, underscores)',
          { description: `The environment variable holding the account's auth token (default ${DEFAULT_AUTH_TOKEN_ENV}).` },
        ),
      ),
      reply_window_s: Type.Optional(
        Type.Integer({
          minimum: MIN_REPLY_WINDOW_S,
          maximum: MAX_REPLY_WINDOW_S,
          description: `How long to wait for a reply before the interaction is settled, in seconds (default ${DEFAULT_REPLY_WINDOW_S}).`,
        }),
      ),
      help_text: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: MAX_SMS_CHARACTERS,
          description: "What a person who texts HELP is answered with (who you are, how to stop). Absent: Twilio's own answer.",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  (_, input) => {
    const senders = [input.from, input.messaging_service_sid].filter((sender) => sender != null).length
    if (senders === 1) return []
    return [senders === 0 ? { path: ['from'], missing: true } : { path: ['messaging_service_sid'], message: 'give from or messaging_service_sid, not both' }]
  },
)

/** A stored config, normalized, with its defaults filled in. */
export const readTwilioMessagingConfig = storedConfigReader(
  TwilioMessagingConfigSchema,
  (value): TwilioMessagingConfig => ({
    accountSid: value.account_sid,
    from: value.from,
    messagingServiceSid: value.messaging_service_sid,
    text: value.text,
    authTokenEnv: value.auth_token_env ?? DEFAULT_AUTH_TOKEN_ENV,
    replyWindowS: value.reply_window_s ?? DEFAULT_REPLY_WINDOW_S,
    helpText: value.help_text,
  }),
)
