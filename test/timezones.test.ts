import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isTimeZone, timeZoneOfPhone } from '../src/domain/timezones.ts'

describe('timeZoneOfPhone', () => {
  test('finds US zones by area code', () => {
    assert.equal(timeZoneOfPhone('+14155552671'), 'America/Los_Angeles')
    assert.equal(timeZoneOfPhone('+12127363100'), 'America/New_York')
    assert.equal(timeZoneOfPhone('+13122440000'), 'America/Chicago')
    assert.equal(timeZoneOfPhone('+13038920000'), 'America/Denver')
    assert.equal(timeZoneOfPhone('+18089561234'), 'Pacific/Honolulu')
    assert.equal(timeZoneOfPhone('+16475550123'), 'America/Toronto')
  })

  test('in Alaska (907), finds Juneau exchanges and leaves the rest in doubt between Anchorage and Adak', () => {
    assert.equal(timeZoneOfPhone('+19074632000'), 'America/Juneau')
    assert.equal(timeZoneOfPhone('+19072010123'), undefined)
  })

  test('finds the zone of single-zone countries, for fixed lines and mobiles', () => {
    assert.equal(timeZoneOfPhone('+442079460958'), 'Europe/London')
    assert.equal(timeZoneOfPhone('+447911123456'), 'Europe/London')
    assert.equal(timeZoneOfPhone('+493012345678'), 'Europe/Berlin')
    assert.equal(timeZoneOfPhone('+33123456789'), 'Europe/Paris')
    assert.equal(timeZoneOfPhone('+33612345678'), 'Europe/Paris')
    assert.equal(timeZoneOfPhone('+912223456789'), 'Asia/Kolkata')
    assert.equal(timeZoneOfPhone('+919812345678'), 'Asia/Kolkata')
    assert.equal(timeZoneOfPhone('+97714123456'), 'Asia/Kathmandu')
    assert.equal(timeZoneOfPhone('+9779812345678'), 'Asia/Kathmandu')
    assert.equal(timeZoneOfPhone('+81312345678'), 'Asia/Tokyo')
    assert.equal(timeZoneOfPhone('+819012345678'), 'Asia/Tokyo')
    assert.equal(timeZoneOfPhone('+390612345678'), 'Europe/Rome')
    assert.equal(timeZoneOfPhone('+393123456789'), 'Europe/Rome')
  })

  test('places fixed lines of multi-zone countries by prefix', () => {
    assert.equal(timeZoneOfPhone('+61212345678'), 'Australia/Sydney')
    assert.equal(timeZoneOfPhone('+61731234567'), 'Australia/Brisbane')
    assert.equal(timeZoneOfPhone('+34912345678'), 'Europe/Madrid')
    assert.equal(timeZoneOfPhone('+34922123456'), 'Atlantic/Canary')
    assert.equal(timeZoneOfPhone('+74951234567'), 'Europe/Moscow')
  })

  test('places mobiles by prefix only where libphonenumber ties them to an area (Brazil)', () => {
    assert.equal(timeZoneOfPhone('+5511912345678'), 'America/Sao_Paulo')
  })

  test('is undefined where the zones listed keep different clocks', () => {
    // Mobiles of multi-zone countries: the data lists 614 as Sydney, but an
    // Australian mobile may be anywhere in Australia.
    assert.equal(timeZoneOfPhone('+61412345678'), undefined)
    assert.equal(timeZoneOfPhone('+79161234567'), undefined)
    assert.equal(timeZoneOfPhone('+34612345678'), undefined)
    // Fixed lines whose prefix spans zones: Perth or Adelaide; Boise or Los Angeles.
    assert.equal(timeZoneOfPhone('+61891234567'), undefined)
    assert.equal(timeZoneOfPhone('+12082445000'), undefined)
  })

  test('is undefined for numbers tied to no place, unknown codes, invalid numbers and non-E.164 text', () => {
    assert.equal(timeZoneOfPhone('+18005550123'), undefined)
    assert.equal(timeZoneOfPhone('+80012345678'), undefined)
    assert.equal(timeZoneOfPhone('+441481123456'), undefined)
    assert.equal(timeZoneOfPhone('4930123456'), undefined)
    assert.equal(timeZoneOfPhone('+0123456789'), undefined)
    assert.equal(timeZoneOfPhone('+1 415 555 2671'), undefined)
    assert.equal(timeZoneOfPhone('not a phone'), undefined)
    assert.equal(timeZoneOfPhone(''), undefined)
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
