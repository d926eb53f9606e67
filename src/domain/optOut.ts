/**
 * Whether a message a person sent asks to be left alone: the whole message,
 * trimmed of spaces, punctuation and emoji, is one of the words people use
 * for it (in English, Spanish, Portuguese, French, German, Italian, Dutch,
 * Polish, Turkish, Indonesian and Hindi transliterated). Only the whole
 * message counts, so "don't stop" or "stop by at 5" are not an opt-out; and
 * "cancel" is not one either, since a reply to a reminder may cancel just the
 * appointment.
 * Words of every language are accepted for every contact: a person may not
 * write in the language on file, and these words mean nothing else.
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

export function asksToStop(text: string | undefined): boolean {
  if (text === undefined) return false
  const words = text
    .normalize('NFC')
    .toLocaleLowerCase()
    .replace(/[\p{P}\p{S}\p{Extended_Pictographic}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return OPT_OUT_WORDS.has(words)
}
