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
import { normalizeLanguage } from '../../domain/contact.ts'
import { type ErrorDetail, valueError } from '../../domain/errors.ts'
import type { JsonObject } from '../../domain/types.ts'
import { ANY_LANGUAGE, chooseMessageText, escapeXml, type MessageText, type MessageValues, renderMessageText } from '../../domain/voicemailMessage.ts'
import { isHttpsUrl } from '../../validation/fields.ts'

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

export const MAX_MESSAGE_TEXT = 1_000
const MAX_LANGUAGES = 20
const MAX_URL_LENGTH = 2048

type Loc = ErrorDetail['loc']

/** 422 entries for provider_config.voicemail, at `loc`. */
export function checkVoicemail(value: unknown, loc: Loc, machineDetection: unknown): ErrorDetail[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ type: 'model_type', loc, msg: 'Input should be a valid dictionary or instance of VoicemailPolicy', input: value }]
  }
  const input = value as Record<string, unknown>
  const errors: ErrorDetail[] = []
  const policy = input.policy
  if (policy === undefined || policy === null) {
    errors.push({ type: 'missing', loc: [...loc, 'policy'], msg: 'Field required', input })
  } else if (!VOICEMAIL_POLICIES.includes(policy as VoicemailPolicy)) {
    errors.push({ type: 'literal_error', loc: [...loc, 'policy'], msg: "Input should be 'hang_up' or 'leave_message'", input: policy, ctx: { expected: "'hang_up' or 'leave_message'" } })
  }
  const message = input.message
  if (message !== undefined && message !== null) errors.push(...checkMessage(message, [...loc, 'message'], policy === 'leave_message'))
  else if (policy === 'leave_message') {
    errors.push({ type: 'missing', loc: [...loc, 'message'], msg: 'Field required', input })
  }
  // Detection is what tells the greeting's end; a campaign that turned it off cannot leave a message.
  if (policy === 'leave_message' && machineDetection === false) {
    errors.push(valueError([...loc, 'policy'], policy, 'leave_message needs answering-machine detection: remove machine_detection: false'))
  }
  for (const key of Object.keys(input)) {
    if (key !== 'policy' && key !== 'message') errors.push({ type: 'extra_forbidden', loc: [...loc, key], msg: 'Extra inputs are not permitted', input: input[key] })
  }
  return errors
}

function checkMessage(value: unknown, loc: Loc, needed: boolean): ErrorDetail[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ type: 'model_type', loc, msg: 'Input should be a valid dictionary or instance of VoicemailMessage', input: value }]
  }
  const input = value as Record<string, unknown>
  const errors: ErrorDetail[] = []
  const text = input.text ?? undefined
  const audioUrl = input.audio_url ?? undefined
  if (text !== undefined) errors.push(...checkText(text, [...loc, 'text']))
  if (audioUrl !== undefined) {
    const problem = stringProblem(audioUrl, [...loc, 'audio_url'], MAX_URL_LENGTH)
    if (problem !== undefined) errors.push(problem)
    else if (!isHttpsUrl(audioUrl as string)) errors.push(valueError([...loc, 'audio_url'], audioUrl, 'audio_url must be an https URL'))
  }
  if (text !== undefined && audioUrl !== undefined) {
    errors.push(valueError(loc, input, 'give the message as text or as audio_url, not both'))
  } else if (needed && text === undefined && audioUrl === undefined) {
    errors.push(valueError(loc, input, 'leave_message needs a text to speak or an audio_url to play'))
  }
  for (const key of Object.keys(input)) {
    if (key !== 'text' && key !== 'audio_url') errors.push({ type: 'extra_forbidden', loc: [...loc, key], msg: 'Extra inputs are not permitted', input: input[key] })
  }
  return errors
}

/** One text, or texts by language: each 1 to {@link MAX_MESSAGE_TEXT} characters, each language a valid BCP 47 tag or "*". */
function checkText(value: unknown, loc: Loc): ErrorDetail[] {
  if (typeof value === 'string') return nonEmptyText(value, loc)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ type: 'string_type', loc, msg: 'Input should be a valid string, or an object of texts by language', input: value }]
  }
  const entries = Object.entries(value)
  if (entries.length === 0) return [valueError(loc, value, 'text by language needs at least one language')]
  if (entries.length > MAX_LANGUAGES) {
    return [{ type: 'too_long', loc, msg: `Dictionary should have at most ${MAX_LANGUAGES} items after validation, not ${entries.length}`, input: value, ctx: { field_type: 'Dictionary', max_length: MAX_LANGUAGES, actual_length: entries.length } }]
  }
  const errors: ErrorDetail[] = []
  for (const [tag, text] of entries) {
    if (tag !== ANY_LANGUAGE && normalizeLanguage(tag) === null) errors.push(valueError([...loc, tag], tag, 'each key of text must be a BCP 47 language tag, such as en or de-AT, or * for any other language'))
    else if (typeof text !== 'string') errors.push({ type: 'string_type', loc: [...loc, tag], msg: 'Input should be a valid string', input: text })
    else errors.push(...nonEmptyText(text, [...loc, tag]))
  }
  return errors
}

function nonEmptyText(value: string, loc: Loc): ErrorDetail[] {
  const length = [...value].length
  if (value.trim() === '') return [{ type: 'string_too_short', loc, msg: 'String should have at least 1 character', input: value, ctx: { min_length: 1 } }]
  if (length > MAX_MESSAGE_TEXT) {
    return [{ type: 'string_too_long', loc, msg: `String should have at most ${MAX_MESSAGE_TEXT} characters`, input: value, ctx: { max_length: MAX_MESSAGE_TEXT } }]
  }
  return []
}

function stringProblem(value: unknown, loc: Loc, maxLength: number): ErrorDetail | undefined {
  if (typeof value !== 'string') return { type: 'string_type', loc, msg: 'Input should be a valid string', input: value }
  if ([...value].length > maxLength) {
    return { type: 'string_too_long', loc, msg: `String should have at most ${maxLength} characters`, input: value, ctx: { max_length: maxLength } }
  }
  return undefined
}

/** A voicemail setting that `checkVoicemail` accepted (or none: `hang_up`). */
export function readVoicemail(value: unknown): VoicemailSettings {
  if (typeof value !== 'object' || value === null) return { policy: 'hang_up', text: undefined, audioUrl: undefined }
  const settings = value as JsonObject
  const message = (settings.message ?? {}) as JsonObject
  return {
    policy: settings.policy as VoicemailPolicy,
    text: (message.text as MessageText | null | undefined) ?? undefined,
    audioUrl: (message.audio_url as string | null | undefined) ?? undefined,
  }
}

/** The TwiML that leaves the message on a machine whose greeting has ended, then hangs up. */
export function voicemailTwiml(settings: VoicemailSettings, values: MessageValues): string {
  let verb: string
  if (settings.audioUrl !== undefined) {
    verb = `<Play>${escapeXml(settings.audioUrl)}</Play>`
  } else {
    const chosen = chooseMessageText(settings.text ?? '', values.language)
    const language = chosen.language === undefined ? '' : ` language="${escapeXml(chosen.language)}"`
    verb = `<Say${language}>${renderMessageText(chosen.text, values)}</Say>`
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response>${verb}<Hangup/></Response>`
}
