import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import countriesAndTimezones from 'countries-and-timezones'
import type { Jurisdiction } from '../src/domain/callingLaw.ts'
import { normalizePhone } from '../src/domain/contact.ts'
import { jurisdictionKey, jurisdictionsOfNumber } from '../src/domain/jurisdictions.ts'
import { zonesOfPhone } from '../src/domain/timezones.ts'

/** The jurisdictions of a number as a client writes it, after normalizePhone has accepted it, as keys. */
function keys(written: string): string[] {
  const e164 = normalizePhone(written)
  assert.notEqual(e164, null, `${written} is a valid number`)
  return jurisdictionsOfNumber(e164!).map(jurisdictionKey)
}

const US_REGIONS = ['AK', 'AL', 'AR', 'AZ', 'CA', 'CO', 'CT', 'DC', 'DE', 'FL', 'GA', 'HI', 'IA', 'ID', 'IL', 'IN', 'KS', 'KY', 'LA', 'MA', 'MD', 'ME', 'MI', 'MN', 'MO', 'MS', 'MT', 'NC', 'ND', 'NE', 'NH', 'NJ', 'NM', 'NV', 'NY', 'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VA', 'VT', 'WA', 'WI', 'WV', 'WY']
const CA_REGIONS = ['AB', 'BC', 'MB', 'NB', 'NL', 'NS', 'NT', 'NU', 'ON', 'PE', 'QC', 'SK', 'YT']
const everywhereIn = (country: string, regions: string[]) => [country, ...regions.map((region) => `${country}-${region}`)]

describe('jurisdictionsOfNumber', () => {
  const cases: [string, string[], string][] = [
    // The United States and Canada: the country, then the state or province of the area code.
    ['+1 305 234 5678', ['US', 'US-FL'], 'Miami'],
    ['+1 212 736 3100', ['US', 'US-NY'], 'Manhattan'],
    ['+1 416 234 5678', ['CA', 'CA-ON'], 'Toronto'],
    ['+1 604 234 5678', ['CA', 'CA-BC'], 'Vancouver'],
    ['+1 405 234 5678', ['US', 'US-OK'], 'Oklahoma City'],
    ['+1 410 234 5678', ['US', 'US-MD'], 'Baltimore'],
    ['+1 206 234 5678', ['US', 'US-WA'], 'Seattle'],
    ['+1 512 234 5678', ['US', 'US-TX'], 'Austin'],
    ['+1 202 234 5678', ['US', 'US-DC'], 'Washington, D.C.'],
    ['+1 263 234 5678', ['CA', 'CA-QC'], 'a Montreal overlay the data names by its city'],
    ['+1 203 234 5678', ['US', 'US-CT'], 'an area code the data names only by its exchanges'],
    ['+1 905 234 5678', ['CA', 'CA-ON'], 'a Canadian one the data names only by its exchanges'],
    ['+1 201 631 1234', ['US', 'US-NJ'], 'the area code’s state, though the data names one of its exchanges New York'],
    // Area codes of several regions: all of them.
    ['+1 902 234 5678', ['CA', 'CA-NS', 'CA-PE'], 'Nova Scotia and Prince Edward Island share 902'],
    ['+1 867 234 5678', ['CA', 'CA-NT', 'CA-NU', 'CA-YT'], 'the three territories share 867'],
    // Other countries of the +1 plan: the country alone.
    ['+1 787 234 5678', ['PR', 'US'], 'Puerto Rico: federal law holds in the territories (47 U.S.C. 153)'],
    ['+1 671 472 1234', ['GU', 'US'], 'Guam'],
    ['+1 670 234 5678', ['MP', 'US'], 'the Northern Mariana Islands'],
    ['+1 684 633 1234', ['AS', 'US'], 'American Samoa'],
    ['+1 876 234 5678', ['JM'], 'Jamaica'],
    ['+1 809 234 5678', ['DO'], 'the Dominican Republic'],
    ['+1 340 773 1234', ['VI', 'US'], 'the US Virgin Islands, a country of their own in ISO 3166-1'],
    // Elsewhere: the country.
    ['+33 1 42 68 53 00', ['FR'], 'Paris'],
    ['+44 20 7946 0958', ['GB'], 'London'],
    ['+49 30 12345678', ['DE'], 'Berlin'],
    ['+33 6 12 34 56 78', ['FR'], 'a French mobile'],
    // A number of no country.
    ['+800 1234 5678', [], 'international freephone'],
    ['+882 1340 0123', [], 'an international network'],
  ]
  for (const [written, expected, what] of cases) test(`${written}: ${what}`, () => assert.deepEqual(keys(written), expected))

  // Numbers that name no place may be anywhere in their country: bound by every state's law.
  const anywhere: [string, string[], string][] = [
    ['+1 800 234 5678', everywhereIn('US', US_REGIONS), 'US toll-free'],
    ['+1 833 234 5678', everywhereIn('US', US_REGIONS), 'US toll-free'],
    ['+1 888 234 5678', everywhereIn('US', US_REGIONS), 'US toll-free'],
    ['+1 500 234 5678', everywhereIn('US', US_REGIONS), 'a US personal number'],
    ['+1 521 234 5678', everywhereIn('US', US_REGIONS), 'a US machine-to-machine number'],
    ['+1 900 234 5678', everywhereIn('US', US_REGIONS), 'US premium rate'],
    ['+1 600 234 5678', everywhereIn('CA', CA_REGIONS), 'a Canadian non-geographic service'],
    ['+1 622 234 5678', everywhereIn('CA', CA_REGIONS), 'a Canadian personal number'],
    // libphonenumber-js holds 273 valid for Canada; the geocoding data names no place for it.
    ['+1 273 234 5678', everywhereIn('CA', CA_REGIONS), 'an area code the data does not hold'],
  ]
  for (const [written, expected, what] of anywhere) test(`${written}: ${what}, every region of the country`, () => assert.deepEqual(keys(written), expected))

  test('a number on file that libphonenumber no longer holds valid has no country, so no jurisdiction', () => {
    assert.equal(normalizePhone('+1 200 555 0123'), null)
    assert.deepEqual(jurisdictionsOfNumber('+12005550123'), [])
  })

  test('answers as jurisdictions: the country without a region, then the regions', () => {
    assert.deepEqual(jurisdictionsOfNumber('+13052345678'), [{ country: 'US' }, { country: 'US', region: 'FL' }])
  })

  test('an answer is the caller’s own: changing it changes no later answer', () => {
    const first = jurisdictionsOfNumber('+13052345678')
    first.pop()
    assert.deepEqual(jurisdictionsOfNumber('+13052345678').map(jurisdictionKey), ['US', 'US-FL'])
  })
})

describe('the area codes of data/nanp-regions.txt', () => {
  const regionsOfAreaCode = new Map<string, Jurisdiction[]>()
  for (const line of readFileSync(new URL('../src/domain/data/nanp-regions.txt', import.meta.url), 'utf8').split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const [areaCode, country, region] = line.split('|') as [string, string, string]
    regionsOfAreaCode.set(areaCode, [...(regionsOfAreaCode.get(areaCode) ?? []), { country, region }])
  }

  test('name every US state, DC, and every Canadian province and territory, and no other region', () => {
    const named = (country: string) =>
      [...new Set([...regionsOfAreaCode.values()].flat().filter((j) => j.country === country).map((j) => j.region))].sort()
    assert.deepEqual(named('US'), US_REGIONS)
    assert.deepEqual(named('CA'), CA_REGIONS)
    assert.deepEqual([...new Set([...regionsOfAreaCode.values()].flat().map((j) => j.country))].sort(), ['CA', 'US'])
  })

  test('are sorted, each line once', () => {
    const lines = readFileSync(new URL('../src/domain/data/nanp-regions.txt', import.meta.url), 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
    assert.deepEqual(lines, [...new Set(lines)].sort())
  })

  test('each lies in the country libphonenumber gives it, its regions as listed, on clocks of that country', () => {
    for (const [areaCode, regions] of regionsOfAreaCode) {
      const country = regions[0]!.country
      // An exchange that libphonenumber holds valid in this area code: some area codes leave out a few.
      const e164 = ['2345678', '4567890', '7771234', '9876543'].map((rest) => normalizePhone(`+1${areaCode}${rest}`)).find((number) => number !== null)
      assert.ok(e164, `a valid number in ${areaCode}`)
      assert.deepEqual(jurisdictionsOfNumber(e164), [{ country }, ...regions], areaCode)
      // The time zone data places the number by its own prefix, and only on clocks of this country.
      const zones = zonesOfPhone(e164, undefined)
      assert.equal(zones?.source, 'phone', areaCode)
      const countryZones = new Set<string>(countriesAndTimezones.getCountry(country as 'US' | 'CA', { deprecated: true })!.timezones)
      for (const zone of zones.zones) assert.ok(countryZones.has(zone), `${areaCode} (${country}) in ${zone}`)
    }
  })
})

describe('jurisdictionKey', () => {
  test('the country alone, or the ISO 3166-2 code of the subdivision', () => {
    assert.equal(jurisdictionKey({ country: 'US' }), 'US')
    assert.equal(jurisdictionKey({ country: 'US', region: 'FL' }), 'US-FL')
    assert.equal(jurisdictionKey({ country: 'CA', region: 'ON' }), 'CA-ON')
  })
})
