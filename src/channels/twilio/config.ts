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
 * environment variable that holds it. A TypeBox schema, checked and read as
 * every provider's (channels/providerConfig.ts).
 */
import { Type } from '@sinclair/typebox'
import { normalizePhone } from '../../domain/contact.ts'
import { checkedString, hasScheme, httpsUrl, OneOf } from '../../validation/fields.ts'
import { type ModelProblem, refineModel } from '../../validation/model.ts'
import { UnknownCallerMessageSchema } from '../callbacks.ts'
import { storedConfigReader } from '../providerConfig.ts'
import { readVoicemail, type VoicemailSettings, VoicemailSchema } from './voicemail.ts'

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
  /** Said to an unknown caller before hanging up; undefined: the conversation takes the call. */
  unknownCallerMessage: string | undefined
}

const DEFAULT_AUTH_TOKEN_ENV = 'TWILIO_AUTH_TOKEN'
const DEFAULT_RING_TIMEOUT_S = 30
/** Twilio accepts a `Timeout` of up to 600 seconds; below 5 no one can pick up. */
const MIN_RING_TIMEOUT_S = 5
const MAX_RING_TIMEOUT_S = 600
const MAX_URL_LENGTH = 2048
/** What each handoff needs besides: where the conversation is. */
const NEEDED_BY = { redirect: 'answer_url', stream: 'stream_url' } as const

/** Twilio's own pattern for an account SID. */
const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/
/**
 * Only TWILIO_* names, so that a campaign cannot make the service send one of
 * its other secrets (the database URL, the operator token) to Twilio as a
 * password, or verify callbacks with it.
 */
const TOKEN_ENV_NAME = /^TWILIO_[A-Z0-9_]{1,92}$/

export const TwilioConfigSchema = refineModel(
  Type.Object(
    {
      account_sid: checkedString((value) => ACCOUNT_SID.test(value), 'account_sid must be "AC" followed by 32 hexadecimal digits', {
        description: 'The Twilio account the calls are placed from.',
      }),
      from: checkedString((value) => normalizePhone(value) === value, 'from must be a valid phone number in E.164 form, such as +14155552671', {
        description: "The caller id: a number of the account's, in E.164 form.",
      }),
      handoff: Type.Optional(OneOf(HANDOFFS)),
      answer_url: Type.Optional(httpsUrl('answer_url', MAX_URL_LENGTH, "The app's TwiML, for handoff redirect.")),
      // Twilio's <Stream> connects over wss only, and its url takes no query string: values go as <Parameter>s.
      stream_url: Type.Optional(
        checkedString(
          (value) => hasScheme(value, 'wss:') && !value.includes('?'),
          'stream_url must be a wss URL without a query string (Twilio passes the context as stream parameters instead)',
          { maxLength: MAX_URL_LENGTH, description: "The agent's WebSocket, for handoff stream." },
        ),
      ),
      auth_token_env: Type.Optional(
        checkedString(
          (value) => TOKEN_ENV_NAME.test(value),
          'auth_token_env must be the name of an environment variable starting with TWILIO_ (uppercase letters, digits, underscores)',
          { description: `The environment variable holding the account's auth token (default ${DEFAULT_AUTH_TOKEN_ENV}).` },
        ),
      ),
      machine_detection: Type.Optional(Type.Boolean({ description: 'Answering-machine detection (default true).' })),
      ring_timeout_s: Type.Optional(Type.Integer({ minimum: MIN_RING_TIMEOUT_S, maximum: MAX_RING_TIMEOUT_S, description: `How long to let the phone ring (default ${DEFAULT_RING_TIMEOUT_S}).` })),
      voicemail: Type.Optional(VoicemailSchema),
      unknown_caller_message: UnknownCallerMessageSchema,
    },
    { additionalProperties: false },
  ),
  (value, input) => {
    const problems: ModelProblem[] = []
    // What each handoff needs besides: where the conversation is (a URL refused on its own is not reported again).
    const needed = NEEDED_BY[value.handoff ?? 'redirect']
    if (input[needed] == null && (input.handoff == null || value.handoff !== undefined)) {
      problems.push({ path: [needed], missing: true })
    }
    // Detection is what tells the greeting's end; a campaign that turned it off cannot leave a message.
    if (value.voicemail?.policy === 'leave_message' && value.machine_detection === false) {
      problems.push({ path: ['voicemail', 'policy'], message: 'leave_message needs answering-machine detection: remove machine_detection: false' })
    }
    return problems
  },
)

/** A stored config, normalized, with its defaults filled in. */
export const readTwilioConfig = storedConfigReader(
  TwilioConfigSchema,
  (value): TwilioConfig => ({
    accountSid: value.account_sid,
    from: value.from,
    handoff: value.handoff ?? 'redirect',
    answerUrl: value.answer_url,
    streamUrl: value.stream_url,
    authTokenEnv: value.auth_token_env ?? DEFAULT_AUTH_TOKEN_ENV,
    machineDetection: value.machine_detection ?? true,
    ringTimeoutS: value.ring_timeout_s ?? DEFAULT_RING_TIMEOUT_S,
    voicemail: readVoicemail(value.voicemail),
    unknownCallerMessage: value.unknown_caller_message,
  }),
)
