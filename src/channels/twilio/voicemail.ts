/**
 * A Twilio campaign's voicemail policy (provider_config.voicemail):
 * - `hang_up` (the default, and what a campaign without the setting does):
 *   the call is placed as ever (synchronous detection when
 *   machine_detection is on), and a machine's call ends `voicemail`;
 * - `leave_message`: the call is placed with asynchronous answering-machine
 *   detection that waits for the greeting's end (`MachineDetection=
 *   DetectMessageEnd`, `AsyncAmd=true`), so a person is handed to the
 *   conversation at once while detection goes on; when Twilio's AMD
 *   callback says a machine's greeting ended (`machine_end_beep`,
 *   `machine_end_silence`, `machine_end_other`), the live call is given TwiML
 *   that speaks the message (<Say>) or plays its recording (<Play>) and hangs
 *   up, and the call ends `voicemail_left`.
 */
import { type Static, Type } from '@sinclair/typebox'
import { chooseMessageText, escapeXml, type MessageText, type MessageValues, renderMessageText } from '../../domain/messageText.ts'
import { httpsUrl, messageTextSchema, OneOf } from '../../validation/fields.ts'
import { refineModel } from '../../validation/model.ts'
import { twilioSayLanguage } from './sayLanguages.ts'

export const VOICEMAIL_POLICIES = ['hang_up', 'leave_message'] as const
export type VoicemailPolicy = (typeof VOICEMAIL_POLICIES)[number]

export interface VoicemailSettings {
  policy: VoicemailPolicy
  text: MessageText | undefined
  audioUrl: string | undefined
}

/** Twilio's AnsweredBy values that say a machine's greeting is over (with DetectMessageEnd): the moment to speak. */
const GREETING_ENDED: ReadonlySet<string> = new Set(['machine_end_beep', 'machine_end_silence', 'machine_end_other'])

export function greetingEnded(answeredBy: string | undefined): boolean {
  return answeredBy !== undefined && GREETING_ENDED.has(answeredBy)
}

const MAX_MESSAGE_TEXT = 1_000
const MAX_URL_LENGTH = 2048

const VoicemailMessageSchema = refineModel(
  Type.Object(
    {
      text: Type.Optional(
        messageTextSchema(
          MAX_MESSAGE_TEXT,
          'One text, spoken in contact.language, or texts by BCP 47 tag ("*" for any other language). Placeholders: {{first_name}}, {{last_name}}, {{language}}, {{context.KEY}}; unknown ones are left empty.',
        ),
      ),
      audio_url: Type.Optional(httpsUrl('audio_url', MAX_URL_LENGTH, 'An https recording to play instead of a text.')),
    },
    { additionalProperties: false, title: 'VoicemailMessage', description: 'With leave_message: a text or an audio_url, not both.' },
  ),
  (_, input) => (input.text != null && input.audio_url != null ? [{ path: [], message: 'give the message as text or as audio_url, not both' }] : []),
)

export const VoicemailSchema = refineModel(
  Type.Object(
    {
      policy: {
        ...OneOf(VOICEMAIL_POLICIES),
        description: 'hang_up (the default): a machine ends the call voicemail. leave_message: the message is left after the greeting, and the call ends voicemail_left.',
      },
      message: Type.Optional(VoicemailMessageSchema),
    },
    { additionalProperties: false, title: 'VoicemailPolicy', description: 'provider_config.voicemail of a twilio campaign: what a call answered by a machine does.' },
  ),
  (value, input) =>
    value.policy === 'leave_message' && input.message == null ? [{ path: ['message'], missing: true }]
    : value.policy === 'leave_message' && isObject(input.message) && input.message.text == null && input.message.audio_url == null
      ? [{ path: ['message'], message: 'leave_message needs a text to speak or an audio_url to play' }]
      : [],
)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** A voicemail setting as its schema normalized it (or none: `hang_up`). */
export function readVoicemail(value: Static<typeof VoicemailSchema> | undefined): VoicemailSettings {
  return { policy: value?.policy ?? 'hang_up', text: value?.message?.text, audioUrl: value?.message?.audio_url }
}

/**
 * The tag a text is spoken in: the contact's own when the text is of its
 * language and names no region (the `en` text for an `en-GB` contact is
 * spoken `en-GB`), else the text's (the `pt-PT` text for a `pt` contact, the
 * `de` text for a contact of no language).
 */
function spokenTag(textTag: string | undefined, contactTag: string | undefined): string | undefined {
  if (textTag === undefined || contactTag === undefined) return textTag
  const [textLanguage, ...textRest] = textTag.toLowerCase().split('-')
  return textRest.length === 0 && contactTag.toLowerCase().split('-')[0] === textLanguage ? contactTag : textTag
}

/**
 * The TwiML that leaves the message on a machine whose greeting has ended,
 * then hangs up. Its <Say> speaks a language-locale pair Twilio voices, found
 * from the text's language and the country of the number called (see
 * twilioSayLanguage), or has no `language` and speaks in Twilio's default voice.
 */
export function voicemailTwiml(settings: VoicemailSettings, values: MessageValues, numberCountry: string | undefined): string {
  let verb: string
  if (settings.audioUrl !== undefined) {
    verb = `<Play>${escapeXml(settings.audioUrl)}</Play>`
  } else {
    const chosen = chooseMessageText(settings.text ?? '', values.language)
    const voiced = twilioSayLanguage(spokenTag(chosen.language, values.language), numberCountry)
    const language = voiced === undefined ? '' : ` language="${voiced}"`
    verb = `<Say${language}>${renderMessageText(chosen.text, values)}</Say>`
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response>${verb}<Hangup/></Response>`
}
