/**
 * The decision before each attempt (domain/contactability.ts), as tables over
 * the shipped profiles: the edges of each profile's hours in every candidate
 * zone and across DST changes, holidays in two years, caps across campaigns,
 * purposes, consent kinds, expiry, revocation, registries, effective dates.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type ConsentKind, type Purpose, shippedProfiles } from '../src/domain/callingLaw.ts'
import { WEEKDAYS, type Schedule } from '../src/domain/campaignSettings.ts'
import { CAPTURED_AHEAD_MS, type ConsentOnFile, consentTimingProblems } from '../src/domain/consent.ts'
import { type ContactabilityInput, type Decision, decideContactability, decisionNeeds, type PastAttempt, type RegistryListing } from '../src/domain/contactability.ts'
import { jurisdictionsOfNumber } from '../src/domain/jurisdictions.ts'
import { zonesOfPhone } from '../src/domain/timezones.ts'
import type { Channel } from '../src/domain/types.ts'

const PROFILES = shippedProfiles().profiles
const ALWAYS: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '00:00', end: '24:00' }] }

const NUMBERS = {
  florida: '+13057771234',
  oklahoma: '+14052221234',
  maryland: '+14102221234',
  washington: '+12062221234',
  texas: '+15122221234',
  toronto: '+14162221234',
  paris: '+33142221234',
  berlin: '+4930222123',
  london: '+442079460958',
  tollFree: '+18002221234',
  sanJuan: '+17872221234',
} as const

interface Ask {
  phone: string
  purpose?: Purpose
  channel?: Channel
  artificialVoice?: boolean
  zones?: string[]
  window?: Schedule
  requiredConsent?: ConsentKind[]
  consents?: ConsentOnFile[]
  registries?: RegistryListing[]
  pastAttempts?: PastAttempt[]
  subject?: string
  suppressed?: boolean
}

function inputOf(ask: Ask): ContactabilityInput {
  const zones = ask.zones ?? zonesOfPhone(ask.phone, undefined)?.zones ?? []
  return {
    suppressed: ask.suppressed ?? false,
    channel: ask.channel ?? 'voice',
    purpose: ask.purpose ?? 'marketing',
    subject: ask.subject ?? 'renewals',
    artificialVoice: ask.artificialVoice ?? false,
    jurisdictions: jurisdictionsOfNumber(ask.phone),
    zones,
    profiles: PROFILES,
    campaignWindow: { schedule: ask.window ?? ALWAYS, zones },
    requiredConsent: ask.requiredConsent ?? [],
    consents: ask.consents ?? [],
    registries: ask.registries ?? [],
    pastAttempts: ask.pastAttempts ?? [],
  }
}

function decide(ask: Ask, at: string): Decision {
  return decideContactability(inputOf(ask), Date.parse(at))
}

/** The decision in a line: "allowed", "deferred 2026-01-05T13:00:00.000Z outside_legal_hours:us-fl.hours", "blocked consent_missing:campaign.consent". */
function summary(decision: Decision): string {
  const codes = decision.reasons.filter((reason) => decision.decision !== 'allowed').map((reason) => `${reason.code}:${reason.rule ?? reason.registry_id ?? '-'}`)
  const notBefore = decision.notBefore === null ? [] : [new Date(decision.notBefore).toISOString()]
  return [decision.decision, ...notBefore, ...codes.sort()].join(' ')
}

const consent = (kind: ConsentKind, extra: Partial<ConsentOnFile> = {}): ConsentOnFile => ({
  id: `cns_${kind}`,
  channel: 'voice',
  purpose: 'marketing',
  kind,
  capturedAt: Date.parse('2026-01-01T00:00:00Z'),
  expiresAt: null,
  revokedAt: null,
  ...extra,
})

describe('calling hours, at their edges, in the called party’s zone', () => {
  const table: [string, Ask, string, string][] = [
    // Florida 08:00–20:00 (EST in January, UTC-5), stricter than the TCPA's 08:00–21:00.
    ['Florida 07:59 EST', { phone: NUMBERS.florida }, '2026-01-05T12:59:59.999Z', 'deferred 2026-01-05T13:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours'],
    ['Florida 08:00 EST', { phone: NUMBERS.florida }, '2026-01-05T13:00:00.000Z', 'allowed'],
    ['Florida 19:59:59 EST', { phone: NUMBERS.florida }, '2026-01-06T00:59:59.999Z', 'allowed'],
    ['Florida 20:00 EST: the state closes before the TCPA', { phone: NUMBERS.florida }, '2026-01-06T01:00:00.000Z', 'deferred 2026-01-06T13:00:00.000Z outside_legal_hours:us-fl.hours'],
    ['Florida 21:00 EST: both close', { phone: NUMBERS.florida }, '2026-01-06T02:00:00.000Z', 'deferred 2026-01-06T13:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours'],
    // DST: 2026-03-08 02:00 EST jumps to 03:00 EDT. 08:00 on the 7th is 13:00Z, on the 8th 12:00Z.
    ['Florida the night before spring forward', { phone: NUMBERS.florida }, '2026-03-08T01:30:00Z', 'deferred 2026-03-08T12:00:00.000Z outside_legal_hours:us-fl.hours'],
    ['Florida 07:59 EDT after spring forward', { phone: NUMBERS.florida }, '2026-03-08T11:59:00Z', 'deferred 2026-03-08T12:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours'],
    // Fall back on 2026-11-01: 20:00 EST that day is 01:00Z on the 2nd.
    ['Florida 19:59 EST on the day it falls back', { phone: NUMBERS.florida }, '2026-11-02T00:59:00Z', 'allowed'],
    ['Florida 20:00 EST on the day it falls back', { phone: NUMBERS.florida }, '2026-11-02T01:00:00Z', 'deferred 2026-11-02T13:00:00.000Z outside_legal_hours:us-fl.hours'],
    // A number that may be in two zones: the window holds in both (08:00 Central to 20:00 Eastern).
    ['two candidate zones, 08:30 Eastern = 07:30 Central', { phone: NUMBERS.florida, zones: ['America/New_York', 'America/Chicago'] }, '2026-01-05T13:30:00Z', 'deferred 2026-01-05T14:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours'],
    ['two candidate zones, 19:30 Eastern', { phone: NUMBERS.florida, zones: ['America/New_York', 'America/Chicago'] }, '2026-01-06T00:30:00Z', 'allowed'],
    // Puerto Rico (AST, UTC-4, no DST): a US territory, bound by the TCPA's 08:00–21:00 and by no state's.
    ['San Juan 07:59 AST', { phone: NUMBERS.sanJuan }, '2026-01-05T11:59:00Z', 'deferred 2026-01-05T12:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours'],
    ['San Juan 20:30 AST: no state closes it at 20:00', { phone: NUMBERS.sanJuan }, '2026-01-06T00:30:00Z', 'allowed'],
    ['San Juan 21:00 AST', { phone: NUMBERS.sanJuan }, '2026-01-06T01:00:00Z', 'deferred 2026-01-06T12:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours'],
    // Oklahoma, Maryland, Washington: 08:00–20:00.
    ['Oklahoma 07:59 CST', { phone: NUMBERS.oklahoma }, '2026-01-05T13:59:00Z', 'deferred 2026-01-05T14:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-ok.hours'],
    ['Oklahoma 20:00 CST', { phone: NUMBERS.oklahoma }, '2026-01-06T02:00:00Z', 'deferred 2026-01-06T14:00:00.000Z outside_legal_hours:us-ok.hours'],
    ['Maryland 20:00 EST', { phone: NUMBERS.maryland }, '2026-01-06T01:00:00Z', 'deferred 2026-01-06T13:00:00.000Z outside_legal_hours:us-md.hours'],
    ['Washington 07:59 PST', { phone: NUMBERS.washington }, '2026-01-05T15:59:00Z', 'deferred 2026-01-05T16:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-wa.hours'],
    ['Washington 20:00 PDT in June', { phone: NUMBERS.washington }, '2026-06-02T03:00:00Z', 'deferred 2026-06-02T15:00:00.000Z outside_legal_hours:us-wa.hours'],
    // Texas: 09:00–21:00 Monday to Saturday, 12:00–21:00 on Sunday (2026-01-04 is a Sunday).
    ['Texas Saturday 09:00 CST', { phone: NUMBERS.texas }, '2026-01-03T15:00:00Z', 'allowed'],
    ['Texas Sunday 11:59 CST', { phone: NUMBERS.texas }, '2026-01-04T17:59:00Z', 'deferred 2026-01-04T18:00:00.000Z outside_legal_hours:us-tx.hours'],
    ['Texas Sunday 20:59 CST', { phone: NUMBERS.texas }, '2026-01-05T02:59:00Z', 'allowed'],
    ['Texas Sunday 21:00 CST', { phone: NUMBERS.texas }, '2026-01-05T03:00:00Z', 'deferred 2026-01-05T15:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-tx.hours'],
    // Canada: weekdays 09:00–21:30, weekends 10:00–18:00.
    ['Toronto Friday 21:29 EST', { phone: NUMBERS.toronto }, '2026-01-10T02:29:00Z', 'allowed'],
    ['Toronto Friday 21:30 EST', { phone: NUMBERS.toronto }, '2026-01-10T02:30:00Z', 'deferred 2026-01-10T15:00:00.000Z outside_legal_hours:ca.hours'],
    ['Toronto Saturday 18:00 EST', { phone: NUMBERS.toronto }, '2026-01-10T23:00:00Z', 'deferred 2026-01-11T15:00:00.000Z outside_legal_hours:ca.hours'],
    ['Toronto Monday 08:59 EST', { phone: NUMBERS.toronto }, '2026-01-12T13:59:00Z', 'deferred 2026-01-12T14:00:00.000Z outside_legal_hours:ca.hours'],
    // France: weekdays 10:00–13:00 and 14:00–20:00 (CET in January, UTC+1).
    ['Paris 09:59 CET', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-01-05T08:59:00Z', 'deferred 2026-01-05T09:00:00.000Z outside_legal_hours:fr.hours'],
    ['Paris 13:00 CET: the lunch break', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-01-05T12:00:00Z', 'deferred 2026-01-05T13:00:00.000Z outside_legal_hours:fr.hours'],
    ['Paris 19:59 CET', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-01-05T18:59:00Z', 'allowed'],
    ['Paris Friday 20:00 CET: Monday 10:00', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-01-09T19:00:00Z', 'deferred 2026-01-12T09:00:00.000Z outside_legal_hours:fr.hours'],
    ['Paris Saturday', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-01-10T10:00:00Z', 'deferred 2026-01-12T09:00:00.000Z outside_legal_hours:fr.hours'],
    // Europe springs forward on 2026-03-29 (a Sunday): 10:00 on Monday the 30th is CEST, 08:00Z; on Friday the 27th, CET, 09:00Z.
    ['Paris Friday before the change, 09:30 CET', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-03-27T08:30:00Z', 'deferred 2026-03-27T09:00:00.000Z outside_legal_hours:fr.hours'],
    ['Paris Friday 20:00 CET: Monday 10:00 CEST', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-03-27T19:00:00Z', 'deferred 2026-03-30T08:00:00.000Z outside_legal_hours:fr.hours'],
    // And falls back on 2026-10-25: 20:00 on Monday the 26th is CET, 19:00Z.
    ['Paris Monday after falling back, 19:30 CET', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-10-26T18:30:00Z', 'allowed'],
    ['Paris Monday after falling back, 20:00 CET', { phone: NUMBERS.paris, consents: [consent('express')] }, '2026-10-26T19:00:00Z', 'deferred 2026-10-27T09:00:00.000Z outside_legal_hours:fr.hours'],
    // Canada springs forward with the US, on 2026-03-08 (a Sunday): 10:00 EDT is 14:00Z.
    ['Toronto Sunday of spring forward, 09:59 EDT', { phone: NUMBERS.toronto }, '2026-03-08T13:59:00Z', 'deferred 2026-03-08T14:00:00.000Z outside_legal_hours:ca.hours'],
    ['Toronto Sunday of spring forward, 17:59 EDT', { phone: NUMBERS.toronto }, '2026-03-08T21:59:00Z', 'allowed'],
  ]
  for (const [name, ask, at, expected] of table) test(name, () => assert.equal(summary(decide(ask, at)), expected))

  test("the campaign's window is intersected with the law's: a campaign open 07:00–22:00 calls Florida from 08:00 to 20:00", () => {
    const window: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '07:00', end: '22:00' }] }
    assert.equal(summary(decide({ phone: NUMBERS.florida, window }, '2026-01-05T12:00:00Z')), 'deferred 2026-01-05T13:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours')
    assert.equal(summary(decide({ phone: NUMBERS.florida, window }, '2026-01-06T01:00:00Z')), 'deferred 2026-01-06T13:00:00.000Z outside_legal_hours:us-fl.hours')
    // A campaign closed when the law is open: the campaign's reason.
    const mornings: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '09:00', end: '12:00' }] }
    assert.equal(summary(decide({ phone: NUMBERS.florida, window: mornings }, '2026-01-05T18:00:00Z')), 'deferred 2026-01-06T14:00:00.000Z outside_campaign_window:campaign.schedule')
  })
})

describe('holidays, computed per year', () => {
  const table: [string, string, string][] = [
    // 2026: Ascension Thursday 14 May, Whit Monday 25 May, Bastille Day Tuesday 14 July.
    ['Ascension 2026', '2026-05-14T10:00:00Z', 'deferred 2026-05-15T08:00:00.000Z legal_holiday:fr.public_holidays'],
    ['Whit Monday 2026', '2026-05-25T10:00:00Z', 'deferred 2026-05-26T08:00:00.000Z legal_holiday:fr.public_holidays'],
    ['14 July 2026', '2026-07-14T10:00:00Z', 'deferred 2026-07-15T08:00:00.000Z legal_holiday:fr.public_holidays'],
    ['the day after Ascension 2026', '2026-05-15T10:00:00Z', 'allowed'],
    // 2027: Easter 28 March, so Easter Monday 29 March and Ascension Thursday 6 May.
    ['Easter Monday 2027', '2027-03-29T10:00:00Z', 'deferred 2027-03-30T08:00:00.000Z legal_holiday:fr.public_holidays'],
    ['Ascension 2027', '2027-05-06T10:00:00Z', 'deferred 2027-05-07T08:00:00.000Z legal_holiday:fr.public_holidays'],
    ['Ascension 2026’s date in 2027 is a working Friday', '2027-05-14T10:00:00Z', 'allowed'],
  ]
  const ask = { phone: NUMBERS.paris, consents: [consent('express')] }
  for (const [name, at, expected] of table) {
    test(name, () => assert.equal(summary(decide(ask, at)), expected))
  }
  test('a holiday reason names the holiday and its local date', () => {
    const reason = decide(ask, '2026-07-14T10:00:00Z').reasons.find((each) => each.code === 'legal_holiday')
    assert.match(reason?.holiday ?? '', /2026-07-14/)
  })
})

describe('caps per number', () => {
  const hour = 3_600_000
  // Monday 13:00 in Florida, 12:00 in Oklahoma, 10:00 in Washington, 19:00 in Paris: inside every profile's hours.
  const at = '2026-01-05T18:00:00Z'
  const t = Date.parse(at)
  const past = (hoursAgo: number[], subject = 'renewals') => hoursAgo.map((ago) => ({ at: t - ago * hour, subject }))
  const table: [string, Ask, string][] = [
    ['Florida: a third in 24 hours is allowed', { phone: NUMBERS.florida, pastAttempts: past([1, 2]) }, 'allowed'],
    ['Florida: a fourth in 24 hours waits for the oldest to age out', { phone: NUMBERS.florida, pastAttempts: past([1, 2, 3]) }, 'deferred 2026-01-06T15:00:00.000Z legal_cap_reached:us-fl.cap'],
    // The first was 23 h ago: it ages out at 19:00Z, inside the day's hours.
    ['Florida: the oldest ages out within the day', { phone: NUMBERS.florida, pastAttempts: past([23, 2, 1]) }, 'deferred 2026-01-05T19:00:00.000Z legal_cap_reached:us-fl.cap'],
    // The oldest ages out at 06:00 EST: the cap allows it then, the hours at 08:00.
    ['Florida: the oldest ages out before the hours open', { phone: NUMBERS.florida, pastAttempts: past([13, 2, 1]) }, 'deferred 2026-01-06T13:00:00.000Z legal_cap_reached:us-fl.cap'],
    ['Florida: attempts of another subject do not count', { phone: NUMBERS.florida, pastAttempts: past([1, 2, 3], 'surveys') }, 'allowed'],
    ['Florida: an informational call is no solicitation', { phone: NUMBERS.florida, purpose: 'informational', pastAttempts: past([1, 2, 3]) }, 'allowed'],
    ['Oklahoma: a fourth waits', { phone: NUMBERS.oklahoma, pastAttempts: past([1, 2, 3]) }, 'deferred 2026-01-06T15:00:00.000Z legal_cap_reached:us-ok.cap'],
    ['Maryland: a fourth waits', { phone: NUMBERS.maryland, pastAttempts: past([1, 2, 3]) }, 'deferred 2026-01-06T15:00:00.000Z legal_cap_reached:us-md.cap'],
    ['Washington: no cap', { phone: NUMBERS.washington, pastAttempts: past([1, 2, 3, 4, 5]) }, 'allowed'],
    // France: 4 in 30 days, whatever the subject.
    ['France: a fifth in 30 days waits, across subjects', { phone: NUMBERS.paris, consents: [consent('express')], pastAttempts: [...past([24, 48], 'a'), ...past([72, 700], 'b')] }, 'deferred 2026-01-06T14:00:00.000Z legal_cap_reached:fr.cap'],
  ]
  for (const [name, ask, expected] of table) test(name, () => assert.equal(summary(decide(ask, at)), expected))

  test('what a decision reads: consents only when one is required, past attempts only under a cap', () => {
    const nature = (phone: string, purpose: Purpose, artificialVoice = false) => ({ profiles: PROFILES, jurisdictions: jurisdictionsOfNumber(phone), purpose, channel: 'voice' as const, artificialVoice })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.london, 'informational'), [], t), { consents: false, capHours: null })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.florida, 'marketing'), [], t), { consents: false, capHours: 24 })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.florida, 'informational', true), [], t), { consents: true, capHours: null })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.paris, 'marketing'), [], t), { consents: false, capHours: 720 })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.paris, 'marketing'), [], Date.parse('2026-09-01T10:00:00Z')), { consents: true, capHours: 720 })
    assert.deepEqual(decisionNeeds(nature(NUMBERS.london, 'informational'), ['express'], t), { consents: true, capHours: null })
  })
})

describe('consent', () => {
  const at = '2026-01-05T15:00:00Z'
  const written: ConsentKind[] = ['express_written']
  const table: [string, Ask, string][] = [
    ['required and none on file', { phone: NUMBERS.florida, requiredConsent: written }, 'blocked consent_missing:campaign.consent'],
    ['express does not satisfy written', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express')] }, 'blocked consent_missing:campaign.consent'],
    ['written satisfies written', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written')] }, 'allowed'],
    ['written satisfies express', { phone: NUMBERS.florida, requiredConsent: ['express'], consents: [consent('express_written')] }, 'allowed'],
    ['a consent of another channel does not count', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { channel: 'whatsapp' })] }, 'blocked consent_missing:campaign.consent'],
    ['a consent of another purpose does not count', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { purpose: 'informational' })] }, 'blocked consent_missing:campaign.consent'],
    ['expired', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { expiresAt: Date.parse('2026-01-05T14:59:59Z') })] }, 'blocked consent_expired:campaign.consent'],
    ['expiring after now still counts', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { expiresAt: Date.parse('2026-01-05T15:00:01Z') })] }, 'allowed'],
    ['revoked', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { revokedAt: Date.parse('2026-01-04T00:00:00Z') })] }, 'blocked consent_revoked:campaign.consent'],
    ['revoked, then given again', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { revokedAt: Date.parse('2026-01-03T00:00:00Z') }), consent('express_written', { id: 'cns_again', capturedAt: Date.parse('2026-01-04T00:00:00Z') })] }, 'allowed'],
    ['captured after the instant asked', { phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written', { capturedAt: Date.parse('2026-01-06T00:00:00Z') })] }, 'blocked consent_missing:campaign.consent'],
    // The TCPA: an artificial voice needs consent even for an informational call.
    ['US informational by an artificial voice, no consent', { phone: NUMBERS.washington, purpose: 'informational', artificialVoice: true }, 'blocked consent_missing:us-federal.artificial_voice_consent'],
    ['US informational by an artificial voice, express on file', { phone: NUMBERS.washington, purpose: 'informational', artificialVoice: true, consents: [consent('express', { purpose: 'informational' })] }, 'allowed'],
    ['US informational by a live voice: nothing required', { phone: NUMBERS.washington, purpose: 'informational' }, 'allowed'],
    ['US marketing by an artificial voice needs written', { phone: NUMBERS.washington, artificialVoice: true, consents: [consent('express')] }, 'blocked consent_missing:us-federal.artificial_voice_marketing_consent'],
    // A toll-free number may be anywhere in the US: every state's hours, in every US zone (08:00 in Pago Pago is 19:00Z).
    ['a toll-free number is bound by every state', { phone: NUMBERS.tollFree }, 'deferred 2026-01-05T19:00:00.000Z outside_legal_hours:us-federal.telephone_solicitation_hours outside_legal_hours:us-fl.hours outside_legal_hours:us-md.hours outside_legal_hours:us-ok.hours outside_legal_hours:us-tx.hours outside_legal_hours:us-wa.hours'],
    // Germany: telephone advertising needs prior express consent whatever the campaign asks.
    ['Germany marketing, nothing on file', { phone: NUMBERS.berlin }, 'blocked consent_missing:de.telephone_consent'],
    ['Germany marketing, express on file', { phone: NUMBERS.berlin, consents: [consent('express')] }, 'allowed'],
    ['Germany informational', { phone: NUMBERS.berlin, purpose: 'informational' }, 'allowed'],
    ['UK marketing by a live voice', { phone: NUMBERS.london }, 'allowed'],
    ['UK marketing by an artificial voice', { phone: NUMBERS.london, artificialVoice: true }, 'blocked consent_missing:gb.automated_calls_consent'],
    ['UK marketing on WhatsApp, an opt-in on file', { phone: NUMBERS.london, channel: 'whatsapp', consents: [consent('whatsapp_opt_in', { channel: 'whatsapp' })] }, 'allowed'],
    ['a suppressed number is blocked before anything else', { phone: NUMBERS.florida, suppressed: true, consents: [consent('express_written')] }, 'blocked number_suppressed:-'],
  ]
  for (const [name, ask, expected] of table) test(name, () => assert.equal(summary(decide(ask, at)), expected))

  test('an allowed decision names the consent, hours and cap it relied on, and the profiles', () => {
    const decision = decide({ phone: NUMBERS.florida, requiredConsent: written, consents: [consent('express_written')] }, at)
    assert.equal(decision.decision, 'allowed')
    assert.deepEqual(decision.profiles, ['us-federal@2026-12-04', 'us-fl@2026-12-04'])
    assert.deepEqual(
      decision.reasons.map((reason) => `${reason.code}:${reason.rule}:${reason.consent_id ?? reason.profile ?? ''}`),
      ['consent_on_file:campaign.consent:cns_express_written', 'within_legal_hours:us-federal.telephone_solicitation_hours:us-federal@2026-12-04', 'within_legal_hours:us-fl.hours:us-fl@2026-12-04', 'under_legal_cap:us-fl.cap:us-fl@2026-12-04'],
    )
    assert.match(decision.reasons[2]!.source, /501\.616/)
  })

  test("France's prior consent binds from its effective date, 2026-08-11, not before", () => {
    assert.equal(summary(decide({ phone: NUMBERS.paris }, '2026-06-01T10:00:00Z')), 'allowed')
    assert.equal(summary(decide({ phone: NUMBERS.paris }, '2026-09-01T10:00:00Z')), 'blocked consent_missing:fr.prior_consent')
    // The rules that bind are kept per nature between effective instants: asked in any order, each side of the edge
    // (the start of 2026-08-11 in UTC+14, a Monday noon in Paris) answers its own.
    for (const [at, expected] of [
      ['2026-08-10T10:00:00.000Z', 'blocked consent_missing:fr.prior_consent'],
      ['2026-08-10T09:59:59.999Z', 'allowed'],
      ['2026-06-01T10:00:00Z', 'allowed'],
      ['2026-08-10T10:00:00.000Z', 'blocked consent_missing:fr.prior_consent'],
    ]) {
      assert.equal(summary(decide({ phone: NUMBERS.paris }, at!)), expected, at)
    }
  })
})

describe("a consent's instants, as the API and a trigger's consent take them", () => {
  const now = Date.parse('2026-01-05T15:00:00Z')
  const table: [string, number | undefined, number | undefined, string[]][] = [
    ['captured in the past, no expiry', now - 86_400_000, undefined, []],
    ['captured a little ahead of the clock (a client clock)', now + CAPTURED_AHEAD_MS, undefined, []],
    ['captured further ahead', now + CAPTURED_AHEAD_MS + 1, undefined, ['captured_at']],
    ['expiring after the capture', now - 1000, now + 1000, []],
    ['expiring at the capture', now - 1000, now - 1000, ['expires_at']],
    ['expiring before the capture, captured ahead', now + CAPTURED_AHEAD_MS + 1, now, ['captured_at', 'expires_at']],
    ['no capture to judge the expiry by', undefined, now, []],
  ]
  for (const [name, capturedAt, expiresAt, fields] of table) {
    test(name, () => assert.deepEqual(consentTimingProblems(capturedAt, expiresAt, now).map((problem) => problem.field), fields))
  }
})

describe('registries', () => {
  const at = '2026-01-05T18:00:00Z'
  const dnc: RegistryListing = { id: 'reg_us_dnc', name: 'US National Do Not Call Registry', purposes: ['marketing'], overriddenBy: ['express_written'] }
  const table: [string, Ask, string][] = [
    ['listed, marketing', { phone: NUMBERS.washington, registries: [dnc] }, 'blocked registry_listed:reg_us_dnc'],
    ['listed, informational', { phone: NUMBERS.washington, purpose: 'informational', registries: [dnc] }, 'allowed'],
    ['listed, overridden by written consent', { phone: NUMBERS.washington, registries: [dnc], consents: [consent('express_written')] }, 'allowed'],
    ['listed, express consent does not override', { phone: NUMBERS.washington, registries: [dnc], consents: [consent('express')] }, 'blocked registry_listed:reg_us_dnc'],
  ]
  for (const [name, ask, expected] of table) test(name, () => assert.equal(summary(decide(ask, at)), expected))
})
