/**
 * A campaign's own text to a person (the message it leaves on a voicemail,
 * the text it sends by SMS): its text in the contact's language, with the
 * task's values put in its placeholders.
 *
 * Placeholders are `{{name}}` (spaces inside the braces allowed):
 * `{{first_name}}`, `{{last_name}}` and `{{language}}` read the contact;
 * `{{context.KEY}}` reads the task's context (the campaign's default merged
 * with the trigger's), `{{context.a.b}}` a nested value. A name that is
 * unknown, or a value that is not a string, number or boolean, renders as
 * nothing: a message goes out whatever the trigger sent. For a voicemail the
 * result is XML character data, ready to go between TwiML tags: what the
 * campaign wrote and what the trigger sent are escaped alike.
 */
import { compareCodeUnits } from './text.ts'
import type { JsonObject } from './types.ts'

/** A message's text: one for every contact, or one per BCP 47 language tag (and "*" for any other). */
export type MessageText = string | Record<string, string>

/** What the placeholders read. */
export interface MessageValues {
  firstName: string | undefined
  lastName: string | undefined
  language: string | undefined
  context: JsonObject
}

/** The key of the text for a contact whose language has none of its own. */
export const ANY_LANGUAGE = '*'

/** Twilio's <Say> speaks at most 4,096 characters; a longer message would be refused, not shortened. */
export const MAX_SPOKEN_CHARACTERS = 4_000

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]{1,200})\s*\}\}/g

/**
 * The text for a contact of `language`, and the language to speak it in:
 * one text, in the contact's language (none when the trigger gave none); or
 * of texts by language, the contact's exact tag, else its language without
 * the region ("de-AT" finds "de"), else a tag of the same language ("de"
 * finds "de-DE"), each spoken in its own tag; else the text under "*", in
 * Twilio's default voice; else the text of the first tag in alphabetical
 * order (the stored document keeps no order of its keys: PostgreSQL's jsonb
 * sorts them its own way).
 */
export function chooseMessageText(text: MessageText, language: string | undefined): { text: string; language: string | undefined } {
  if (typeof text === 'string') return { text, language }
  const entries = Object.entries(text)
    .filter(([tag]) => tag !== ANY_LANGUAGE)
    .sort(([a], [b]) => compareCodeUnits(a, b))
  const wanted = language?.toLowerCase()
  const primary = wanted?.split('-')[0]
  const found =
    entries.find(([tag]) => tag.toLowerCase() === wanted) ??
    entries.find(([tag]) => tag.toLowerCase() === primary) ??
    entries.find(([tag]) => tag.toLowerCase().split('-')[0] === primary)
  if (found !== undefined) return { text: found[1], language: found[0] }
  const fallback = text[ANY_LANGUAGE]
  if (fallback !== undefined) return { text: fallback, language: undefined }
  const [tag, first] = entries[0]!
  return { text: first, language: tag }
}

/** The text with its placeholders filled (see the header), as XML character data, at most {@link MAX_SPOKEN_CHARACTERS} characters before escaping. */
export function renderMessageText(template: string, values: MessageValues): string {
  return escapeXml([...fillPlaceholders(template, values)].slice(0, MAX_SPOKEN_CHARACTERS).join(''))
}

/** The text with its placeholders filled (see the header), as plain text. */
export function fillPlaceholders(template: string, values: MessageValues): string {
  return template.replace(PLACEHOLDER, (_whole, name: string) => valueOf(name, values))
}

function valueOf(name: string, values: MessageValues): string {
  switch (name) {
    case 'first_name':
      return values.firstName ?? ''
    case 'last_name':
      return values.lastName ?? ''
    case 'language':
      return values.language ?? ''
  }
  if (!name.startsWith('context.')) return ''
  let value: unknown = values.context
  for (const key of name.slice('context.'.length).split('.')) {
    value = typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, key) ? (value as JsonObject)[key] : undefined
  }
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : ''
}

/** Markup escaped, and the characters XML 1.0 cannot hold at all (most controls) replaced. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => XML_ENTITIES[character]!).replace(/[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/g, '\uFFFD')
}

const XML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }
