import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { normalizePhone } from '../src/domain/contact.ts'
import { isTimeZone, zonesOfPhone } from '../src/domain/timezones.ts'

/** The zones of a number as a client writes it, after normalizePhone has accepted it. */
function zones(written: string, fallback?: string) {
  const e164 = normalizePhone(written)
  assert.notEqual(e164, null, `${written} is a valid number`)
  return zonesOfPhone(e164!, fallback)
}

describe('zonesOfPhone', () => {
  const cases: [string, string[], 'phone' | 'country' | 'fallback', string][] = [
    // Numbers tied to an area: the zones the data lists for the longest prefix.
    ['+1 415 555 2671', ['America/Los_Angeles'], 'phone', 'a US area code in one zone'],
    ['+1 212 736 3100', ['America/New_York'], 'phone', 'a US area code in one zone'],
    ['+1 208 244 5000', ['America/Los_Angeles', 'America/Boise'], 'phone', 'an Idaho exchange the data puts in two zones'],
    ['+1 605 555 0100', ['America/Denver', 'America/North_Dakota/Center'], 'phone', 'South Dakota spans Mountain and Central'],
    ['+1 907 201 0123', ['America/Adak', 'America/Anchorage'], 'phone', 'Alaska outside Juneau'],
    ['+1 907 463 2000', ['America/Juneau'], 'phone', 'a Juneau exchange'],
    ['+1 647 555 0123', ['America/Toronto'], 'phone', 'Canada'],
    ['+1 306 555 0100', ['America/Regina'], 'phone', 'Saskatchewan keeps no DST'],
    ['+1 709 555 0100', ['America/Puerto_Rico', 'America/St_Johns'], 'phone', 'a Canadian area code across two zones: Labrador or Newfoundland'],
    ['+1 876 555 1234', ['America/Jamaica'], 'phone', 'Jamaica, in the +1 plan too'],
    ['+52 664 123 4567', ['America/Tijuana'], 'phone', 'Mexican numbers carry area codes, mobiles too'],
    ['+52 200 123 4909', ['America/Tijuana', 'America/Mexico_City'], 'phone', 'a Mexican prefix the data puts in two zones'],
    ['+55 11 96123 4567', ['America/Sao_Paulo'], 'phone', 'a Brazilian mobile carries its area code'],
    ['+55 92 91234 5678', ['America/Manaus'], 'phone', 'Amazonas'],
    ['+34 912 345 678', ['Europe/Madrid'], 'phone', 'a Madrid fixed line'],
    ['+34 922 12 34 56', ['Atlantic/Canary'], 'phone', 'a Canary Islands fixed line'],
    ['+61 2 1234 5678', ['Australia/Sydney'], 'phone', 'a Sydney fixed line'],
    ['+61 8 9123 4567', ['Australia/Perth', 'Australia/Adelaide'], 'phone', 'an 08 fixed line: Perth or Adelaide'],
    ['+7 495 123 45 67', ['Europe/Moscow'], 'phone', 'a Moscow fixed line'],
    ['+62 967 123 456', ['Asia/Jayapura'], 'phone', 'a Papua fixed line'],
    ['+44 20 7946 0958', ['Europe/London'], 'phone', 'a London fixed line'],
    // Mobiles, and numbers that may be mobiles: every zone of the country, each clock once.
    ['+34 612 34 58 11', ['Atlantic/Canary', 'Europe/Madrid'], 'country', 'Spain (Ceuta keeps Madrid’s clock)'],
    ['+351 912 345 678', ['Atlantic/Azores', 'Europe/Lisbon'], 'country', 'Portugal (Madeira keeps Lisbon’s clock)'],
    ['+61 412 345 976', ['Australia/Perth', 'Australia/Eucla', 'Asia/Tokyo', 'Australia/Darwin', 'Australia/Brisbane', 'Australia/Adelaide', 'Australia/Lord_Howe', 'Australia/Sydney'], 'country', 'Australia (tzdb lists Asia/Tokyo for part of it)'],
    ['+64 21 123 4567', ['Pacific/Auckland', 'Pacific/Chatham'], 'country', 'New Zealand'],
    ['+7 912 345 67 89', ['Europe/Kaliningrad', 'Europe/Moscow', 'Europe/Samara', 'Asia/Yekaterinburg', 'Asia/Omsk', 'Asia/Krasnoyarsk', 'Asia/Irkutsk', 'Asia/Yakutsk', 'Asia/Vladivostok', 'Asia/Magadan', 'Asia/Anadyr'], 'country', 'Russia, eleven clocks'],
    ['+62 812 345 678', ['Asia/Jakarta', 'Asia/Makassar', 'Asia/Jayapura'], 'country', 'an Indonesian mobile: its prefix names a carrier, not a place'],
    ['+243 81 234 5678', ['Africa/Kinshasa', 'Africa/Lubumbashi'], 'country', 'DR Congo, named by its own cities'],
    ['+976 8812 3456', ['Asia/Hovd', 'Asia/Ulaanbaatar'], 'country', 'Mongolia'],
    ['+686 72001234', ['Pacific/Tarawa', 'Pacific/Kanton', 'Pacific/Kiritimati'], 'country', 'Kiribati'],
    ['+691 350 1234', ['Pacific/Chuuk', 'Pacific/Pohnpei'], 'country', 'Micronesia, by current names'],
    ['+593 99 123 4567', ['Pacific/Galapagos', 'America/Guayaquil'], 'country', 'Ecuador'],
    ['+56 9 6123 4567', ['Pacific/Easter', 'America/Coyhaique', 'America/Santiago'], 'country', 'Chile: fixed lines and mobiles share 9…'],
    ['+54 9 11 2345 6789', ['America/Argentina/Buenos_Aires'], 'country', 'Argentina: twelve names, one clock'],
    ['+86 131 2345 6789', ['Asia/Urumqi', 'Asia/Shanghai'], 'country', 'China'],
    ['+44 7911 123456', ['Europe/London'], 'country', 'a UK mobile'],
    ['+49 1512 3456789', ['Europe/Berlin'], 'country', 'Germany (Busingen keeps Berlin’s clock)'],
    ['+977 984 1234567', ['Asia/Kathmandu'], 'country', 'Nepal, +05:45'],
    ['+1 800 555 0123', ['America/Adak', 'Pacific/Honolulu', 'America/Juneau', 'America/Los_Angeles', 'America/Denver', 'America/Phoenix', 'America/Chicago', 'America/New_York'], 'country', 'US toll-free: anywhere in the US'],
    // A number of no country: only the campaign's fallback can say.
    ['+800 1234 5678', ['Europe/London'], 'fallback', 'international freephone'],
  ]
  for (const [written, expected, source, what] of cases) {
    test(`${written}: ${what}`, () => {
      assert.deepEqual(zones(written, 'Europe/London'), { zones: expected, source })
    })
  }

  test('a number of no country tells nothing without a fallback', () => {
    assert.equal(zones('+800 1234 5678'), undefined)
  })

  test('a number on file that the data no longer holds valid is placed by its calling code, never by the fallback', () => {
    // +1 200 is not an assigned area code: normalizePhone refuses it, but a contact on file may carry such a number.
    assert.equal(normalizePhone('+1 200 555 0123'), null)
    const found = zonesOfPhone('+12005550123', 'Europe/Berlin')!
    assert.equal(found.source, 'country')
    assert.ok(found.zones.includes('America/New_York') && found.zones.includes('Pacific/Honolulu'), found.zones.join(' '))
    assert.ok(!found.zones.includes('Europe/Berlin'))
  })

  test('names each clock once, west first: the eleven zones of Russia are at eleven offsets, in order', () => {
    const offsetMinutes = (zone: string) => {
      const [, sign, hours, minutes] = /GMT([+-])(\d{2}):(\d{2})/.exec(new Date().toLocaleString('en-US', { timeZone: zone, timeZoneName: 'longOffset' }))!
      return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes))
    }
    const offsets = zones('+7 912 345 67 89')!.zones.map(offsetMinutes)
    assert.deepEqual(offsets, [...new Set(offsets)].sort((a, b) => a - b))
    assert.equal(offsets.length, 11)
  })

  test('every zone named is one this runtime knows', () => {
    for (const [written] of cases) for (const zone of zones(written, 'Europe/London')!.zones) assert.ok(isTimeZone(zone), zone)
  })
})

describe('isTimeZone', () => {
  test('accepts IANA names, canonical or linked', () => {
    for (const name of ['Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Asia/Kolkata', 'Asia/Calcutta', 'UTC', 'Etc/GMT-3']) {
      assert.equal(isTimeZone(name), true, name)
    }
  })

  test('refuses offsets, unknown names and near misses', () => {
    for (const name of ['', 'contact', 'Mars/Olympus_Mons', 'Europe/Berln', 'Europe/Berlin ', '+03:00', '-05:00', 'UTC+3', 'GMT-5']) {
      assert.equal(isTimeZone(name), false, name)
    }
  })
})
