/**
 * The language a Twilio <Say> speaks a voicemail in. Twilio's `language`
 * attribute takes a language-locale pair it voices (`en-GB`, `de-AT`), not a
 * bare code: `language="en"` is no voice Twilio lists, and the call goes on
 * as if the message had been left. A contact's BCP 47 tag is matched to one
 * of the pairs below, or the attribute is left out (Twilio's default voice).
 */

/**
 * The `language` values <Say> accepts: the `SayLanguage` type of Twilio's
 * Node.js helper library, twilio 6.3.1 (lib/twiml/VoiceResponse.d.ts), the
 * list of https://www.twilio.com/docs/voice/twiml/say/text-speech. Which of
 * them a given voice speaks is Twilio's matter: a campaign sets no voice, and
 * Twilio picks its default for the language.
 */
export const TWILIO_SAY_LANGUAGES: readonly string[] = [
  'af-ZA', 'am-ET', 'ar-AE', 'ar-XA', 'arb', 'bg-BG', 'bn-IN', 'ca-ES', 'cmn-CN', 'cmn-TW', 'cs-CZ', 'cy-GB', 'da-DK',
  'de-AT', 'de-DE', 'el-GR', 'en-AU', 'en-CA', 'en-GB', 'en-GB-WLS', 'en-IE', 'en-IN', 'en-NZ', 'en-US', 'en-ZA',
  'es-ES', 'es-MX', 'es-US', 'fi-FI', 'fil-PH', 'fr-CA', 'fr-FR', 'fr-BE', 'gu-IN', 'he-IL', 'hi-IN', 'hu-HU', 'id-ID',
  'is-IS', 'it-IT', 'ja-JP', 'kn-IN', 'ko-KR', 'lv-LV', 'ml-IN', 'mr-IN', 'ms-MY', 'nb-NO', 'nl-BE', 'nl-NL', 'pa-IN',
  'pl-PL', 'pt-BR', 'pt-PT', 'ro-RO', 'ru-RU', 'sk-SK', 'sr-RS', 'sv-SE', 'ta-IN', 'te-IN', 'th-TH', 'tr-TR', 'uk-UA',
  'vi-VN', 'yue-HK', 'zh-CN', 'zh-HK', 'zh-TW',
]

const VOICED = new Map(TWILIO_SAY_LANGUAGES.map((tag) => [tag.toLowerCase(), tag]))

/** Languages Twilio voices under another code: Norwegian (`no`, the macrolanguage) as Bokmål (`nb-NO`). */
const VOICED_AS: Readonly<Record<string, string>> = { no: 'nb' }

/**
 * The pair Twilio voices for a contact's language tag, or undefined (leave
 * `language` out). In order: the tag itself (any case); its language in the
 * country of the number called (`en` on a +44 number: `en-GB`; `de-CH` on a
 * +43 one: `de-AT`); its language in the region CLDR's likely subtags give it
 * (`Intl.Locale#maximize`: `es` → `es-ES`, `pt` → `pt-BR`, `zh-Hant` →
 * `zh-TW`), then in the region likeliest for the language alone (`de-CH` on
 * a +41 number: `de-DE`). A language Twilio voices in none of those regions (`ar` is
 * likeliest in Egypt) gets no attribute rather than a guess of a dialect.
 */
export function twilioSayLanguage(tag: string | undefined, numberCountry: string | undefined): string | undefined {
  if (tag === undefined) return undefined
  const exact = VOICED.get(tag.toLowerCase())
  if (exact !== undefined) return exact
  let locale: Intl.Locale
  try {
    locale = new Intl.Locale(tag)
  } catch {
    return undefined
  }
  const regions = [numberCountry, locale.region, locale.maximize().region, new Intl.Locale(locale.language).maximize().region]
  const language = VOICED_AS[locale.language] ?? locale.language
  for (const region of regions) {
    if (region === undefined) continue
    const voiced = VOICED.get(`${language}-${region}`.toLowerCase())
    if (voiced !== undefined) return voiced
  }
  return undefined
}
