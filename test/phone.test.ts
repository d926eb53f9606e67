/** Spec 2.4: phone numbers carry their calling code, are stored as E.164, and must be assigned in their country. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { normalizePhone } from '../src/domain/contact.ts'

const ACCEPTED: [input: string, e164: string, why: string][] = [
  ['+442079460958', '+442079460958', 'GB, E.164 as sent'],
  ['+44 20 7946 0958', '+442079460958', 'GB, spaces'],
  ['+44 (0)20 7946 0958', '+442079460958', 'GB, bracketed trunk 0'],
  ['+44 [0]20 7946 0958', '+442079460958', 'GB, square-bracketed trunk 0'],
  ['+1 415 555 2671', '+14155552671', 'US, spaces'],
  ['+1 (212) 555-0100', '+12125550100', 'US, brackets and dash'],
  ['+1.415.555.2671', '+14155552671', 'US, dots'],
  ['+1/415/555/2671', '+14155552671', 'US, slashes'],
  ['+1 604 555 0199', '+16045550199', 'CA'],
  ['+39 06 6982 0000', '+390669820000', 'IT/VA, leading 0 belongs to the number'],
  ['+39 02 1234 5678', '+390212345678', 'IT, Milan, leading 0 kept'],
  ['+39 312 345 6789', '+393123456789', 'IT mobile'],
  ['+49 30 901820', '+4930901820', 'DE'],
  ['+49 (0)30 901820', '+4930901820', 'DE, bracketed trunk 0'],
  ['+49 030 901820', '+4930901820', 'DE, bare trunk 0'],
  ['+49 151 23456789', '+4915123456789', 'DE mobile'],
  ['+33 1 42 68 53 00', '+33142685300', 'FR'],
  ['+33 (0)1 42 68 53 00', '+33142685300', 'FR, bracketed trunk 0'],
  ['+33 6 12 34 56 78', '+33612345678', 'FR mobile'],
  ['+91 98765 43210', '+919876543210', 'IN mobile'],
  ['+91 (0)98765 43210', '+919876543210', 'IN, trunk 0'],
  ['+61 2 9374 4000', '+61293744000', 'AU'],
  ['+61 (0)4 1234 5678', '+61412345678', 'AU mobile, trunk 0'],
  ['+81 3-1234-5678', '+81312345678', 'JP, dashes'],
  ['+81 (0)90-1234-5678', '+819012345678', 'JP mobile, trunk 0'],
  ['+55 11 91234-5678', '+5511912345678', 'BR mobile'],
  ['+55 (21) 2555-1234', '+552125551234', 'BR'],
  ['+34 612 34 56 78', '+34612345678', 'ES mobile'],
  ['+34 91 123 45 67', '+34911234567', 'ES'],
  ['+7 495 123-45-67', '+74951234567', 'RU'],
  ['+86 10 1234 5678', '+861012345678', 'CN'],
  ['+86 138 0013 8000', '+8613800138000', 'CN mobile'],
  ['+977 1 4411111', '+97714411111', 'NP'],
  ['+52 55 1234 5678', '+525512345678', 'MX'],
  ['+31 20 123 4567', '+31201234567', 'NL'],
  ['+31 (0)6 12345678', '+31612345678', 'NL mobile, trunk 0'],
  ['+27 21 123 4567', '+27211234567', 'ZA'],
  ['+234 802 123 4567', '+2348021234567', 'NG mobile'],
  ['+65 6123 4567', '+6561234567', 'SG'],
  ['+41 44 668 18 00', '+41446681800', 'CH'],
  ['+46 8 123 456 78', '+46812345678', 'SE'],
  ['+353 1 234 5678', '+35312345678', 'IE'],
  ['+82 2-312-3456', '+8223123456', 'KR'],
  ['+54 9 11 2345-6789', '+5491123456789', 'AR mobile'],
  [' +44 20 7946 0958 ', '+442079460958', 'surrounding white space'],
]

const REFUSED: [input: string, why: string][] = [
  ['020 7946 0958', 'national number, no calling code'],
  ['4155552671', 'no calling code'],
  ['0044 20 7946 0958', '00 instead of +'],
  ['00442079460958', '00 instead of +, no spaces'],
  ['+1 555 555 5555', 'US, unassigned 555 exchange'],
  ['+44 7700 900123', 'GB, range reserved for drama, unassigned'],
  ['+1 415 555 267', 'US, too short'],
  ['+44 20 7946 09589999', 'GB, too long'],
  ['+33 0 00 00 00 00', 'FR, impossible'],
  ['+49 0000000', 'DE, impossible'],
  ['+91 12345', 'IN, too short'],
  ['+999 1234 5678', 'no such calling code'],
  ['+0 123', 'no such calling code'],
  ['+', 'nothing after +'],
  ['++442079460958', 'doubled +'],
  ['+44 20 7946 0958 ext. 12', 'extension'],
  ['+1-415-555-2671 x2', 'extension'],
  ['+1 800 FLOWERS', 'letters'],
  ['phone', 'not a number'],
  ['', 'empty'],
]

describe('phone numbers', () => {
  test(`the table covers at least 40 inputs across at least 10 countries`, () => {
    assert.ok(ACCEPTED.length + REFUSED.length >= 40)
    assert.ok(new Set(ACCEPTED.map(([, e164]) => e164.slice(0, 3))).size >= 10)
  })

  for (const [input, e164, why] of ACCEPTED) {
    test(`accepts ${JSON.stringify(input)} as ${e164} (${why})`, () => {
      assert.equal(normalizePhone(input), e164)
    })
  }

  for (const [input, why] of REFUSED) {
    test(`refuses ${JSON.stringify(input)} (${why})`, () => {
      assert.equal(normalizePhone(input), null)
    })
  }
})
