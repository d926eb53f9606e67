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
 * variables holding them. A TypeBox schema, checked and read as every
 * provider's (channels/providerConfig.ts): the campaign keeps the normalized
 * value ("30" sent for ring_timeout_s is kept as 30).
 */
import { Type } from '@sinclair/typebox'
import { checkedString, OneOf } from '../../validation/fields.ts'
import { storedConfigReader } from '../providerConfig.ts'

export const TELEPHONIES = ['twilio', 'sip_trunk'] as const
export type Telephony = (typeof TELEPHONIES)[number]

export interface ElevenLabsConfig {
  agentId: string
  agentPhoneNumberId: string
  telephony: Telephony
  apiKeyEnv: string
  webhookSecretEnv: string
  /** The bearer token of the conversation initiation webhook (docs/callbacks.md). */
  initiationSecretEnv: string
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
export const DEFAULT_INITIATION_SECRET_ENV = 'ELEVENLABS_INITIATION_SECRET'
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

const matching = (pattern: RegExp, message: string, description: string) => checkedString((value) => pattern.test(value), message, { description })

const envName = (field: string, description: string) =>
  Type.Optional(
    matching(ENV_NAME, `${field} must be the name of an environment variable starting with ELEVENLABS_ (uppercase letters, digits, underscores)`, description),
  )
const dataField = (field: string, what: string) =>
  Type.Optional(
    matching(
      DATA_FIELD,
      `${field} must be the identifier of a data collection item of the agent (letters, digits, _ . -)`,
      `The identifier of the agent's data collection item (analysis.data_collection_results) that holds ${what}: letters, digits, _ . -, at most 128.`,
    ),
  )

export const ElevenLabsConfigSchema = Type.Object(
  {
    agent_id: matching(ELEVENLABS_ID, 'agent_id must be an ElevenLabs agent id (letters, digits, _ and -)', 'The agent that talks (agent_…): letters, digits, _ and -, at most 128.'),
    agent_phone_number_id: matching(
      ELEVENLABS_ID,
      'agent_phone_number_id must be an ElevenLabs phone number id (letters, digits, _ and -)',
      "The workspace's phone number the calls are placed from (phnum_…): letters, digits, _ and -, at most 128.",
    ),
    telephony: Type.Optional({
      ...OneOf(TELEPHONIES),
      description: "The number's telephony integration: twilio (default) or sip_trunk.",
    }),
    api_key_env: envName('api_key_env', `The environment variable holding the API key: ELEVENLABS_ and uppercase letters, digits, underscores (default ${DEFAULT_API_KEY_ENV}).`),
    webhook_secret_env: envName(
      'webhook_secret_env',
      `The environment variable holding the post-call webhook's HMAC secret: ELEVENLABS_ and uppercase letters, digits, underscores (default ${DEFAULT_WEBHOOK_SECRET_ENV}).`,
    ),
    initiation_secret_env: envName(
      'initiation_secret_env',
      `The environment variable holding the secret the conversation initiation webhook sends as its bearer token, for calls to the agent's numbers (docs/callbacks.md): ELEVENLABS_ and uppercase letters, digits, underscores (default ${DEFAULT_INITIATION_SECRET_ENV}).`,
    ),
    ring_timeout_s: Type.Optional(
      Type.Integer({
        minimum: MIN_RING_TIMEOUT_S,
        maximum: MAX_RING_TIMEOUT_S,
        description: `How long to let the phone ring, in seconds (default ${DEFAULT_RING_TIMEOUT_S}).`,
      }),
    ),
    disposition_field: dataField('disposition_field', "the disposition, a short code of the client's own"),
    callback_at_field: dataField('callback_at_field', 'when the person asked to be called again (an ISO 8601 instant)'),
    opt_out_field: dataField('opt_out_field', 'whether the person asked not to be contacted again (a boolean)'),
  },
  { additionalProperties: false },
)

/** A stored config, normalized, with its defaults filled in. */
export const readElevenLabsConfig = storedConfigReader(
  ElevenLabsConfigSchema,
  (value): ElevenLabsConfig => ({
    agentId: value.agent_id,
    agentPhoneNumberId: value.agent_phone_number_id,
    telephony: value.telephony ?? 'twilio',
    apiKeyEnv: value.api_key_env ?? DEFAULT_API_KEY_ENV,
    webhookSecretEnv: value.webhook_secret_env ?? DEFAULT_WEBHOOK_SECRET_ENV,
    initiationSecretEnv: value.initiation_secret_env ?? DEFAULT_INITIATION_SECRET_ENV,
    ringTimeoutS: value.ring_timeout_s ?? DEFAULT_RING_TIMEOUT_S,
    dispositionField: value.disposition_field,
    callbackAtField: value.callback_at_field,
    optOutField: value.opt_out_field,
  }),
)
