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
 * that holds it. A TypeBox schema, checked and read as every provider's
 * (channels/providerConfig.ts).
 */
import { Type } from '@sinclair/typebox'
import { normalizePhone } from '../../domain/contact.ts'
import { checkedString } from '../../validation/fields.ts'
import { storedConfigReader } from '../providerConfig.ts'

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
const MAX_FIELD_NAME = 128

/** A key of the analysis' custom data, as named in the agent's post-call analysis settings. */
const fieldName = (field: string, what: string) =>
  Type.Optional(
    checkedString((value) => value.trim() === value && value !== '', `${field} must name a field of the agent's custom analysis data`, {
      maxLength: MAX_FIELD_NAME,
      description: `The key of the agent's custom analysis data (custom_analysis_data) that holds ${what}.`,
    }),
  )

export const RetellConfigSchema = Type.Object(
  {
    from_number: checkedString((value) => normalizePhone(value) === value, 'from_number must be a valid phone number in E.164 form, such as +14155552671', {
      description: 'The number the calls are placed from: one bought in or imported to Retell, in E.164 form.',
    }),
    agent_id: Type.Optional(
      checkedString((value) => AGENT_ID.test(value), 'agent_id must be a Retell agent id (letters, digits, "_" and "-")', {
        description: "The agent that speaks (Retell's override_agent_id); without it, the number's own outbound agent.",
      }),
    ),
    agent_version: Type.Optional(Type.Integer({ minimum: 0, description: "The agent's version (override_agent_version)." })),
    api_key_env: Type.Optional(
      checkedString(
        (value) => API_KEY_ENV_NAME.test(value),
        'api_key_env must be the name of an environment variable starting with RETELL_ (uppercase letters, digits, underscores)',
        { description: `The environment variable holding the API key, which also signs Retell's webhooks (default ${DEFAULT_API_KEY_ENV}).` },
      ),
    ),
    disposition_field: fieldName('disposition_field', "the disposition, a short code of the client's own (default disposition)"),
    callback_at_field: fieldName('callback_at_field', 'when the person asked to be called again, RFC 3339 with an offset (default callback_at)'),
    opt_out_field: fieldName('opt_out_field', 'whether the person asked not to be contacted again, a boolean (default opt_out)'),
  },
  { additionalProperties: false },
)

/** A stored config, normalized, with its defaults filled in. */
export const readRetellConfig = storedConfigReader(
  RetellConfigSchema,
  (value): RetellConfig => ({
    fromNumber: value.from_number,
    agentId: value.agent_id,
    agentVersion: value.agent_version,
    apiKeyEnv: value.api_key_env ?? DEFAULT_API_KEY_ENV,
    dispositionField: value.disposition_field ?? 'disposition',
    callbackAtField: value.callback_at_field ?? 'callback_at',
    optOutField: value.opt_out_field ?? 'opt_out',
  }),
)
