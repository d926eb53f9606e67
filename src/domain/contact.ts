/**
 * Normalization of the contact fields that have a canonical form. Each
 * function returns the canonical value, or says why the input is refused.
 */
import { type CountryCode, type NumberType, type PhoneNumber, parsePhoneNumberFromString, parsePhoneNumberWithError } from 'libphonenumber-js/max'

export const PHONE_REFUSED =
  'phone must include a country calling code (for example +44 20 7946 0958) and be a valid number'

/** A leading `+`, then digits and the separators people write between them (so no extension). */
const PHONE_SHAPE = /^\+[0-9 .\/()[\]-]+$/

/**
 * The canonical E.164 form of a phone number that carries its country calling
 * code and is assigned and dialable in its country. Separators and a national
 * trunk prefix written after the country code (`+44 (0)20 ...`) are dropped;
 * a leading 0 that belongs to the number (`+39 06 ...`) is kept. No default
 * country is ever assumed, so `00` prefixes and national numbers are refused.
 */
export function normalizePhone(input: string): string | null {
  const candidate = input.trim()
  if (!PHONE_SHAPE.test(candidate)) return null
  try {
    const parsed = parsePhoneNumberWithError(candidate)
    // With full metadata a number is valid exactly when it has a type, which
    // isValid() would work out again; only a numbering plan without types
    // needs isValid() itself.
    const type = parsed.getType()
    if (type === undefined && !parsed.isValid()) return null
    remember(parsed.number, factsOf(parsed, type))
    return parsed.number
  } catch {
    return null
  }
}

/** What libphonenumber tells of a number beyond its digits. */
export interface PhoneFacts {
  /** MOBILE, FIXED_LINE, ...; undefined in numbering plans that give no types, and for a number not valid. */
  type: NumberType
  /** The number's country; undefined for numbers of no country, and where it cannot be told. */
  country: CountryCode | undefined
  /** Its calling code: "34", "1", "800". */
  callingCode: string
  /** Of a calling code that belongs to no country (+800, +881...). */
  ofNoCountry: boolean
}

function factsOf(parsed: PhoneNumber, type: NumberType = parsed.getType()): PhoneFacts {
  // Asked only of a number without a country: the library builds a Metadata object to answer.
  const ofNoCountry = parsed.country === undefined && parsed.isNonGeographic()
  return { type, country: parsed.country, callingCode: parsed.countryCallingCode, ofNoCountry }
}

/**
 * The facts of the numbers normalized last. The contact's time zones depend
 * on its number's type and country, and are asked soon after the number is
 * normalized: kept here, they cost no second parse. A batch request
 * normalizes all its numbers (up to 1,000) before it places any in its
 * zones, and a few batches may be read at once; at 256 kept, half of each
 * batch of 500 was parsed twice.
 */
const recentFacts = new Map<string, PhoneFacts>()
const MAX_RECENT_FACTS = 4096

function remember(e164: string, facts: PhoneFacts): void {
  if (recentFacts.size >= MAX_RECENT_FACTS) recentFacts.clear()
  recentFacts.set(e164, facts)
}

/**
 * The facts of a canonical E.164 number, or undefined for one libphonenumber
 * cannot parse. A number on file may no longer be valid after an update of
 * the library's data: its calling code is still told.
 */
export function phoneFacts(e164: string): PhoneFacts | undefined {
  const known = recentFacts.get(e164)
  if (known !== undefined) return known
  const parsed = parsePhoneNumberFromString(e164)
  return parsed && factsOf(parsed)
}

/** Intl's canonicalization costs microseconds and clients send few distinct tags. */
const canonicalLanguages = new Map<string, string | null>()
const MAX_CACHED_LANGUAGES = 1_000

/** The canonical form of a well-formed BCP 47 language tag (`pt-br` → `pt-BR`). */
export function normalizeLanguage(input: string): string | null {
  const cached = canonicalLanguages.get(input)
  if (cached !== undefined) return cached
  let canonical: string | null
  try {
    canonical = Intl.getCanonicalLocales(input.trim())[0] ?? null
  } catch {
    canonical = null
  }
  if (canonicalLanguages.size >= MAX_CACHED_LANGUAGES) canonicalLanguages.clear()
  canonicalLanguages.set(input, canonical)
  return canonical
}

export type EmailCheck = { email: string } | { problem: string }

const EMAIL_LOCAL_CHAR = /[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]|[^\x00-\x7f]/u
const DOMAIN_CHAR = /[A-Za-z0-9.-]|[^\x00-\x7f]/u

/**
 * A plausible email address, with its domain lowercased, or the reason it is
 * not one, worded as the email-validator package words it (which pydantic's
 * EmailStr reports). Deliverability is not checked.
 */
export function checkEmail(input: string): EmailCheck {
  const address = input.trim()
  const at = address.indexOf('@')
  if (at === -1) return { problem: 'An email address must have an @-sign.' }
  const local = address.slice(0, at)
  const domain = address.slice(at + 1)
  if (local === '') return { problem: 'There must be something before the @-sign.' }
  if (domain === '') return { problem: 'There must be something after the @-sign.' }
  const badLocal = [...local].find((char) => !EMAIL_LOCAL_CHAR.test(char))
  if (badLocal !== undefined) {
    return { problem: `The email address contains invalid characters before the @-sign: ${describe(badLocal)}.` }
  }
  const badDomain = [...domain].find((char) => !DOMAIN_CHAR.test(char))
  if (badDomain !== undefined) {
    return { problem: `The part after the @-sign contains invalid characters: ${describe(badDomain)}.` }
  }
  if (address.startsWith('.')) return { problem: 'An email address cannot start with a period.' }
  if (address.endsWith('.')) return { problem: 'An email address cannot end with a period.' }
  if (address.includes('..')) return { problem: 'An email address cannot have two periods in a row.' }
  if (local.endsWith('.')) return { problem: 'An email address cannot have a period immediately before the @-sign.' }
  if (domain.startsWith('.')) return { problem: 'An email address cannot have a period immediately after the @-sign.' }
  if (domain.startsWith('-')) return { problem: 'An email address cannot have a hyphen immediately after the @-sign.' }
  if (!domain.includes('.')) return { problem: 'The part after the @-sign is not valid. It should have a period.' }
  if (local.length > 64) return { problem: 'The email address is too long before the @-sign.' }
  if (domain.length > 253) return { problem: 'The email address is too long after the @-sign.' }
  return { email: `${local}@${domain.toLowerCase()}` }
}

function describe(char: string): string {
  return char === ' ' ? 'SPACE' : `'${char}'`
}
