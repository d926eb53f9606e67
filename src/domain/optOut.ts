/**
 * Whether a message a person sent asks to be left alone: the whole message,
 * trimmed of spaces, punctuation, emoji and a "please", is one of the words
 * people use for it (in English, Spanish, Portuguese, French, German,
 * Italian, Dutch, Polish, Turkish, Indonesian and Hindi transliterated).
 * Only the whole message counts, so "don't stop" or "stop by at 5" are not
 * an opt-out; and "cancel" is not one either, since a reply to a reminder may
 * cancel just the appointment. Every language's words count for every
 * contact: people do not always write in the language on file, and as the
 * whole reply to an outreach message each of these asks it to stop.
 */
const OPT_OUT_WORDS = new Set([
  // English; carriers' standard keywords among them
  'stop', 'stopall', 'unsubscribe', 'end', 'quit', 'opt out', 'optout', 'remove me',
  // Spanish
  'baja', 'darme de baja', 'dar de baja', 'alto', 'parar',
  // Portuguese
  'sair', 'descadastrar', 'pare',
  // French
  'arrêt', 'arret', 'arrête', 'arrete', 'désabonner', 'desabonner', 'désinscrire', 'desinscrire',
  // German
  'stopp', 'abmelden', 'abbestellen', 'austragen',
  // Italian
  'basta', 'disiscrivi', 'cancellami',
  // Dutch
  'afmelden', 'uitschrijven',
  // Polish, Turkish, Indonesian, Hindi (transliterated)
  'wypisz', 'dur', 'berhenti', 'band karo', 'बंद करो',
])

const POLITENESS = /^(?:please|pls|por favor|bitte|s il vous plait|svp|per favore|alsjeblieft|por favor) | (?:please|pls|por favor|bitte|s il vous plait|svp|per favore|alsjeblieft)$/

export function asksToStop(text: string | undefined): boolean {
  if (text === undefined) return false
  const words = text
    // Fullwidth letters and ligatures as their plain forms; invisible characters out.
    .normalize('NFKC')
    .replace(/[\u200B-\u200D\u2060\uFEFF]/g, '')
    .toLocaleLowerCase()
    .replace(/[\p{P}\p{S}\p{Extended_Pictographic}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(POLITENESS, '')
    .trim()
  // "STOP STOP STOP" says it three times.
  const once = words.replace(/^(.+?)(?: \1)+$/, '$1')
  return OPT_OUT_WORDS.has(once)
}

/**
 * The carriers' keywords of a text message (CTIA's Messaging Principles, and
 * Twilio's default opt-out handling, which acts on them itself): a whole
 * message of one of them, in any case, spaces around it trimmed. `stop`:
 * STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT (and OPTOUT, REVOKE, which
 * Twilio adds); Twilio then refuses every later text to the number from the
 * sender (error 21610), so the number is suppressed, CANCEL included (which
 * {@link asksToStop} does not count on WhatsApp). `start`: START, UNSTOP,
 * YES, which opt back in. `help`: HELP, INFO.
 */
export type SmsKeyword = 'stop' | 'start' | 'help'

const SMS_KEYWORDS: ReadonlyMap<string, SmsKeyword> = new Map([
  ...['stop', 'stopall', 'unsubscribe', 'cancel', 'end', 'quit', 'optout', 'revoke'].map((word) => [word, 'stop'] as const),
  ...['start', 'unstop', 'yes'].map((word) => [word, 'start'] as const),
  ...['help', 'info'].map((word) => [word, 'help'] as const),
])

export function smsKeyword(text: string | undefined): SmsKeyword | undefined {
  return text === undefined ? undefined : SMS_KEYWORDS.get(text.trim().toLowerCase())
}
