/**
 * Jurisdictions of a phone number: the places whose calling law may bind an
 * attempt to it. As with candidate time zones (timezones.ts), a number that
 * may be in several places is bound by the law of each, and the strictest
 * rule wins.
 *
 * The country is the one libphonenumber gives the number. In the United
 * States and Canada, states and provinces make laws of their own, and the
 * area code tells which: data/nanp-regions.txt, derived from libphonenumber's
 * geocoding data (its header says how).
 */
import { readFileSync } from 'node:fs'
import type { Jurisdiction } from './callingLaw.ts'
import { phoneFacts } from './contact.ts'

/**
 * The territories of the United States that libphonenumber (as ISO 3166-1)
 * names as countries of their own, each with area codes of the +1 plan:
 * Puerto Rico, the US Virgin Islands, Guam, the Northern Mariana Islands,
 * American Samoa. Federal law holds there as in the states: the
 * Communications Act's "United States" is "the several States and
 * Territories, the District of Columbia, and the possessions of the United
 * States" (47 U.S.C. 153), and the TCPA binds calls to a recipient within it
 * (47 U.S.C. 227(b)(1)); so a territory's number is the territory's and the
 * `US` federal rules'.
 */
const US_TERRITORIES: ReadonlySet<string> = new Set(['PR', 'VI', 'GU', 'MP', 'AS'])

/** "US" for a country's own rules, "US-FL" for a subdivision's (its ISO 3166-2 code). */
export function jurisdictionKey(jurisdiction: Jurisdiction): string {
  return jurisdiction.region === undefined ? jurisdiction.country : `${jurisdiction.country}-${jurisdiction.region}`
}

/**
 * The jurisdictions of a valid E.164 number: its country first, then, in the
 * United States and Canada, the state or province of its area code (all of
 * them where an area code serves several: 902 is Nova Scotia's and Prince
 * Edward Island's).
 *
 * An area code that names no place (toll-free 8XX, 5XX personal numbers,
 * 600, 900) or that the data does not hold (one opened since) may be
 * anywhere in its country: every region of the country, so that each
 * state's law holds. A US territory of the +1 plan (PR, GU...) is itself
 * and the United States' federal law (not a state's); the other countries
 * of the plan (JM, DO...) are just the country; a number of no country
 * (+800, +882) or of one that cannot be told has none.
 */
export function jurisdictionsOfNumber(e164: string): Jurisdiction[] {
  // phoneFacts remembers the numbers normalized last: no second parse for a contact just accepted.
  const country = phoneFacts(e164)?.country
  if (country === undefined) return []
  const { ofAreaCode, ofCountry } = regions()
  const everyRegion = ofCountry.get(country)
  if (everyRegion === undefined) return US_TERRITORIES.has(country) ? [shared(country), shared('US')] : [shared(country)]
  // Only +1 countries have regions in the data, so the area code follows "+1".
  return [...(ofAreaCode.get(`${country}|${e164.slice(2, 5)}`) ?? everyRegion)]
}

interface RegionTable {
  /**
   * "US|305" → the country's own jurisdiction, then the area code's regions.
   * Keyed by country too: the two data sets are updated apart, and a region
   * holds only for a number that libphonenumber puts in the region's country.
   */
  ofAreaCode: Map<string, readonly Jurisdiction[]>
  /** "US" → the country's own jurisdiction, then every region of it in the data, by code. */
  ofCountry: Map<string, readonly Jurisdiction[]>
}

/** Read on first use, as timezones.ts reads its data: most processes that import this module never place a number. */
let regionTable: RegionTable | undefined

function regions(): RegionTable {
  if (regionTable !== undefined) return regionTable
  const ofAreaCode = new Map<string, Jurisdiction[]>()
  const regionsOfCountry = new Map<string, Set<string>>()
  const text = readFileSync(new URL('./data/nanp-regions.txt', import.meta.url), 'utf8')
  for (const line of text.split('\n')) {
    // The header's lines quote geocoding lines, `|` included.
    if (line.startsWith('#')) continue
    const [areaCode, country, region] = line.split('|')
    if (!areaCode || !country || !region) continue
    const key = `${country}|${areaCode}`
    const listed = ofAreaCode.get(key) ?? [shared(country)]
    listed.push(shared(country, region))
    ofAreaCode.set(key, listed)
    regionsOfCountry.set(country, (regionsOfCountry.get(country) ?? new Set()).add(region))
  }
  const ofCountry = new Map<string, readonly Jurisdiction[]>()
  for (const [country, codes] of regionsOfCountry) {
    ofCountry.set(country, [shared(country), ...[...codes].sort().map((region) => shared(country, region))])
  }
  regionTable = { ofAreaCode, ofCountry }
  return regionTable
}

/** One object for every answer that names it: frozen, so that no caller's change reaches another's answer. */
function shared(country: string, region?: string): Jurisdiction {
  return Object.freeze(region === undefined ? { country } : { country, region })
}
