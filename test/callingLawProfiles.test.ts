/**
 * The calling-law profiles as shipped (src/domain/data/calling-law-profiles.json):
 * first their shape, rule by rule, as the dispatcher and callingLaw.ts's types
 * expect it; then the facts each profile states, pinned in a table, so that a
 * careless edit of the data (an hour, a cap, a purpose, a date) fails here
 * and has to be made in both places, on purpose.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { CONSENT_KINDS, type CallingLawProfiles, type HolidayRule, type Jurisdiction, PURPOSES } from '../src/domain/callingLaw.ts'
import { type ScheduleWindow, WEEKDAYS } from '../src/domain/campaignSettings.ts'
import { SCHEDULE_FIELD_RULES, windowProblems } from '../src/domain/schedule.ts'
import { CHANNELS } from '../src/domain/types.ts'

const data: CallingLawProfiles = JSON.parse(readFileSync(new URL('../src/domain/data/calling-law-profiles.json', import.meta.url), 'utf8'))

/** The day these profiles were reviewed: no version and no rule may be dated after it. */
const TODAY = '2026-12-04'

const isCalendarDate = (text: unknown): boolean => typeof text === 'string' && SCHEDULE_FIELD_RULES.blackout_date(text) === undefined
const duplicates = <T>(values: readonly T[]): T[] => values.filter((value, index) => values.indexOf(value) !== index)
const nonEmptyString = (value: unknown): boolean => typeof value === 'string' && value.trim().length > 0

const RULE_KEYS = ['id', 'kind', 'purposes', 'channels', 'applies_to', 'source', 'effective_from', 'note']
const KIND_KEYS: Record<string, string[]> = {
  hours: ['windows'],
  forbidden_dates: ['holidays'],
  cap: ['max_attempts', 'per_hours', 'scope'],
  consent: ['consent_kinds'],
}

const rules = data.profiles.flatMap((profile) => profile.rules.map((rule) => ({ profile, rule })))

describe('calling-law profiles: shape', () => {
  test('the disclaimer says the profiles are a starting point for counsel, not legal advice', () => {
    assert.ok(nonEmptyString(data.disclaimer))
    assert.match(data.disclaimer, /not legal advice/i)
    assert.match(data.disclaimer, /counsel/i)
    assert.match(data.disclaimer, /starting point/i)
    assert.deepEqual(Object.keys(data).sort(), ['disclaimer', 'profiles'])
  })

  test('profile ids are unique, and so are their jurisdictions', () => {
    assert.deepEqual(duplicates(data.profiles.map((p) => p.id)), [])
    const keys = data.profiles.map((p) => `${p.jurisdiction.country}-${p.jurisdiction.region ?? ''}`)
    assert.deepEqual(duplicates(keys), [])
  })

  for (const profile of data.profiles) {
    test(`${profile.id}: a versioned profile of one jurisdiction, with rules`, () => {
      assert.deepEqual(Object.keys(profile).sort(), ['id', 'jurisdiction', 'name', 'rules', 'version'])
      assert.match(profile.id, /^[a-z]{2}(-[a-z0-9]+)?$/)
      assert.ok(isCalendarDate(profile.version), `version ${profile.version} is not a calendar date`)
      assert.ok(profile.version <= TODAY, `version ${profile.version} is after ${TODAY}`)
      assert.ok(nonEmptyString(profile.name))
      assert.match(profile.jurisdiction.country, /^[A-Z]{2}$/)
      if (profile.jurisdiction.region !== undefined) assert.match(profile.jurisdiction.region, /^[A-Z0-9]{1,3}$/)
      assert.deepEqual(Object.keys(profile.jurisdiction).filter((key) => key !== 'country' && key !== 'region'), [])
      // The id names the jurisdiction: "fr", "us-fl"; the country's own rules of a federation, "us-federal".
      const expected = [profile.jurisdiction.country, profile.jurisdiction.region].filter((part) => part !== undefined).join('-').toLowerCase()
      assert.ok(profile.id === expected || (profile.id === `${expected}-federal` && profile.jurisdiction.region === undefined), `${profile.id} does not name ${expected}`)
      assert.ok(Array.isArray(profile.rules) && profile.rules.length > 0)
    })
  }

  test('rule ids are unique across all profiles', () => {
    assert.deepEqual(duplicates(rules.map(({ rule }) => rule.id)), [])
  })

  for (const { profile, rule } of rules) {
    test(`${rule.id}: well-formed, with its source and the date it took effect`, () => {
      assert.ok(rule.id.startsWith(`${profile.id}.`), `${rule.id} is not prefixed by "${profile.id}."`)
      assert.match(rule.id.slice(profile.id.length + 1), /^[a-z0-9_]+$/)
      assert.ok(rule.kind in KIND_KEYS, `unknown kind ${rule.kind}`)
      const allowed = [...RULE_KEYS, ...(KIND_KEYS[rule.kind] ?? [])]
      assert.deepEqual(Object.keys(rule).filter((key) => !allowed.includes(key)), [], 'keys no rule of its kind has')
      for (const key of KIND_KEYS[rule.kind] ?? []) assert.ok(key in rule, `a ${rule.kind} rule has ${key}`)

      assert.ok(rule.purposes.length > 0, 'binds at least one purpose')
      for (const purpose of rule.purposes) assert.ok((PURPOSES as readonly string[]).includes(purpose), `unknown purpose ${purpose}`)
      assert.deepEqual(duplicates(rule.purposes), [])
      assert.ok(rule.channels.length > 0, 'binds at least one channel')
      for (const channel of rule.channels) assert.ok((CHANNELS as readonly string[]).includes(channel), `unknown channel ${channel}`)
      assert.deepEqual(duplicates(rule.channels), [])
      if (rule.applies_to !== undefined) {
        assert.equal(rule.applies_to, 'artificial_voice')
        assert.deepEqual(rule.channels, ['voice'], 'an artificial voice speaks on voice calls only')
      }

      assert.deepEqual(Object.keys(rule.source).sort(), ['citation', 'url'])
      assert.ok(nonEmptyString(rule.source.citation), 'has a citation')
      assert.equal(new URL(rule.source.url).protocol, 'https:', `${rule.source.url} is not an https URL`)
      assert.ok(isCalendarDate(rule.effective_from), `effective_from ${rule.effective_from} is not a calendar date`)
      assert.ok(rule.effective_from <= TODAY, `effective_from ${rule.effective_from} is in the future`)
      assert.ok(rule.effective_from <= profile.version, `effective_from ${rule.effective_from} is after the profile's version`)
      if (rule.note !== undefined) assert.ok(nonEmptyString(rule.note))

      switch (rule.kind) {
        case 'hours':
          assert.ok(rule.windows.length > 0, 'has at least one window')
          rule.windows.forEach((window) => assertWindow(window))
          assertNoOverlap(rule.windows)
          break
        case 'forbidden_dates':
          assert.ok(rule.holidays.length > 0, 'names at least one holiday')
          rule.holidays.forEach((holiday) => assertHoliday(holiday))
          assert.deepEqual(duplicates(rule.holidays.map((holiday) => holiday.name)), [])
          break
        case 'cap':
          assert.ok(Number.isInteger(rule.max_attempts) && rule.max_attempts > 0, `max_attempts ${rule.max_attempts}`)
          assert.ok(Number.isInteger(rule.per_hours) && rule.per_hours > 0, `per_hours ${rule.per_hours}`)
          assert.ok(rule.scope === 'subject' || rule.scope === 'any', `scope ${rule.scope}`)
          break
        case 'consent':
          assert.ok(rule.consent_kinds.length > 0, 'names at least one consent kind')
          for (const kind of rule.consent_kinds) assert.ok((CONSENT_KINDS as readonly string[]).includes(kind), `unknown consent kind ${kind}`)
          assert.deepEqual(duplicates(rule.consent_kinds), [])
          if (rule.consent_kinds.includes('whatsapp_opt_in')) assert.deepEqual(rule.channels, ['whatsapp'], 'a WhatsApp opt-in counts on WhatsApp only')
          break
      }
    })
  }
})

function assertWindow(window: ScheduleWindow): void {
  assert.deepEqual(Object.keys(window).sort(), ['days', 'end', 'start'])
  for (const day of window.days) assert.equal(SCHEDULE_FIELD_RULES.day(day), undefined, `day ${day}`)
  assert.deepEqual(duplicates(window.days), [])
  assert.equal(SCHEDULE_FIELD_RULES.start(window.start), undefined, `start ${window.start}`)
  assert.equal(SCHEDULE_FIELD_RULES.end(window.end), undefined, `end ${window.end}`)
  assert.deepEqual(windowProblems(window), [], `${window.start}–${window.end}`)
}

/** Windows of one rule that overlap on a day say the same hours twice: a sign of an edit gone wrong. */
function assertNoOverlap(windows: readonly ScheduleWindow[]): void {
  for (const day of WEEKDAYS) {
    const spans = windows.filter((w) => w.days.includes(day)).sort((a, b) => (a.start < b.start ? -1 : 1))
    for (let i = 1; i < spans.length; i++) assert.ok(spans[i - 1]!.end <= spans[i]!.start, `${day}: ${spans[i - 1]!.start}–${spans[i - 1]!.end} overlaps ${spans[i]!.start}`)
  }
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function assertHoliday(holiday: HolidayRule): void {
  assert.ok(nonEmptyString(holiday.name), 'a holiday has a name')
  const keys = Object.keys(holiday).sort().join(',')
  if ('easter_offset' in holiday) {
    assert.equal(keys, 'easter_offset,name')
    assert.ok(Number.isInteger(holiday.easter_offset), `${holiday.name}: easter_offset ${holiday.easter_offset}`)
    return
  }
  assert.ok(Number.isInteger(holiday.month) && holiday.month >= 1 && holiday.month <= 12, `${holiday.name}: month ${holiday.month}`)
  if ('nth' in holiday) {
    assert.equal(keys, 'month,name,nth,weekday')
    assert.ok((WEEKDAYS as readonly string[]).includes(holiday.weekday), `${holiday.name}: weekday ${holiday.weekday}`)
    assert.ok(holiday.nth === -1 || (Number.isInteger(holiday.nth) && holiday.nth >= 1 && holiday.nth <= 5), `${holiday.name}: nth ${holiday.nth}`)
    return
  }
  assert.equal(keys, 'day,month,name')
  assert.ok(Number.isInteger(holiday.day) && holiday.day >= 1 && holiday.day <= DAYS_IN_MONTH[holiday.month - 1]!, `${holiday.name}: ${holiday.month}/${holiday.day}`)
}

// ---------------------------------------------------------------------------
// The facts: what each profile says, rule by rule (all but its source's
// wording and its note), and where its source lives.

const EVERY_DAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const WEEKDAYS_ONLY = ['mon', 'tue', 'wed', 'thu', 'fri']
const NON_MARKETING = ['informational', 'transactional', 'healthcare']

interface Fact {
  /** What the rule says, in words: the test's name. */
  says: string
  /** The rule without its id, source and note. */
  rule: Record<string, unknown>
  /** A piece of the citation, and the host of the source's URL. */
  cites: string
  host: string
}

const FACTS: Record<string, { jurisdiction: Jurisdiction; rules: Record<string, Fact> }> = {
  'us-federal': {
    jurisdiction: { country: 'US' },
    rules: {
      'us-federal.telephone_solicitation_hours': {
        says: 'marketing calls and texts only 08:00–21:00 local, every day',
        rule: { kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '1992-12-20', windows: [{ days: EVERY_DAY, start: '08:00', end: '21:00' }] },
        cites: '64.1200(c)(1)',
        host: 'www.ecfr.gov',
      },
      'us-federal.artificial_voice_consent': {
        says: 'an artificial (AI or prerecorded) voice needs prior express consent for non-marketing calls',
        rule: { kind: 'consent', purposes: NON_MARKETING, channels: ['voice'], applies_to: 'artificial_voice', effective_from: '1992-12-20', consent_kinds: ['express', 'express_written'] },
        cites: '64.1200(a)(1)(iii)',
        host: 'docs.fcc.gov',
      },
      'us-federal.artificial_voice_marketing_consent': {
        says: 'an artificial voice needs prior express written consent for marketing calls',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['voice'], applies_to: 'artificial_voice', effective_from: '2013-10-16', consent_kinds: ['express_written'] },
        cites: '64.1200(a)(2)',
        host: 'www.ecfr.gov',
      },
    },
  },
  'us-fl': {
    jurisdiction: { country: 'US', region: 'FL' },
    rules: {
      'us-fl.hours': {
        says: 'marketing only 08:00–20:00 local, every day',
        rule: { kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2021-07-01', windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }] },
        cites: '501.616(6)(a)',
        host: 'www.flsenate.gov',
      },
      'us-fl.cap': {
        says: 'at most 3 marketing attempts in 24 hours on the same subject',
        rule: { kind: 'cap', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2021-07-01', max_attempts: 3, per_hours: 24, scope: 'subject' },
        cites: '501.616(6)(b)',
        host: 'www.flsenate.gov',
      },
    },
  },
  'us-ok': {
    jurisdiction: { country: 'US', region: 'OK' },
    rules: {
      'us-ok.hours': {
        says: 'marketing only 08:00–20:00 local, every day',
        rule: { kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2022-11-01', windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }] },
        cites: '775C.4',
        host: 'www.oklegislature.gov',
      },
      'us-ok.cap': {
        says: 'at most 3 marketing attempts in 24 hours on the same subject',
        rule: { kind: 'cap', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2022-11-01', max_attempts: 3, per_hours: 24, scope: 'subject' },
        cites: '775C.4',
        host: 'www.oklegislature.gov',
      },
    },
  },
  'us-md': {
    jurisdiction: { country: 'US', region: 'MD' },
    rules: {
      'us-md.hours': {
        says: 'marketing only 08:00–20:00 local, every day',
        rule: { kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2024-01-01', windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }] },
        cites: '14-4502',
        host: 'mgaleg.maryland.gov',
      },
      'us-md.cap': {
        says: 'at most 3 marketing attempts in 24 hours on the same subject',
        rule: { kind: 'cap', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2024-01-01', max_attempts: 3, per_hours: 24, scope: 'subject' },
        cites: '14-4502',
        host: 'mgaleg.maryland.gov',
      },
    },
  },
  'us-wa': {
    jurisdiction: { country: 'US', region: 'WA' },
    rules: {
      'us-wa.hours': {
        says: 'marketing only 08:00–20:00 local, every day',
        rule: { kind: 'hours', purposes: ['marketing'], channels: ['voice', 'whatsapp', 'sms'], effective_from: '2022-06-09', windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }] },
        cites: 'RCW 80.36.390',
        host: 'app.leg.wa.gov',
      },
    },
  },
  'us-tx': {
    jurisdiction: { country: 'US', region: 'TX' },
    rules: {
      'us-tx.hours': {
        says: 'marketing 09:00–21:00 Monday to Saturday, 12:00–21:00 on Sunday',
        rule: {
          kind: 'hours',
          purposes: ['marketing'],
          channels: ['voice', 'whatsapp', 'sms'],
          effective_from: '2009-04-01',
          windows: [
            { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'], start: '09:00', end: '21:00' },
            { days: ['sun'], start: '12:00', end: '21:00' },
          ],
        },
        cites: '301.051',
        host: 'statutes.capitol.texas.gov',
      },
    },
  },
  ca: {
    jurisdiction: { country: 'CA' },
    rules: {
      'ca.hours': {
        says: 'telemarketing calls 09:00–21:30 on weekdays, 10:00–18:00 on weekends',
        rule: {
          kind: 'hours',
          purposes: ['marketing'],
          channels: ['voice'],
          effective_from: '2008-09-30',
          windows: [
            { days: WEEKDAYS_ONLY, start: '09:00', end: '21:30' },
            { days: ['sat', 'sun'], start: '10:00', end: '18:00' },
          ],
        },
        cites: 'Part III',
        host: 'crtc.gc.ca',
      },
      'ca.adad_consent': {
        says: 'a marketing call by a synthesized or recorded voice needs express consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['voice'], applies_to: 'artificial_voice', effective_from: '2008-09-30', consent_kinds: ['express', 'express_written'] },
        cites: 'Part IV',
        host: 'crtc.gc.ca',
      },
    },
  },
  gb: {
    jurisdiction: { country: 'GB' },
    rules: {
      'gb.automated_calls_consent': {
        says: 'a marketing call by an automated (AI) voice needs prior consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['voice'], applies_to: 'artificial_voice', effective_from: '2003-12-11', consent_kinds: ['express', 'express_written'] },
        cites: 'reg. 19',
        host: 'www.legislation.gov.uk',
      },
      'gb.electronic_mail_consent': {
        says: 'marketing messages need prior consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['whatsapp'], effective_from: '2003-12-11', consent_kinds: ['express', 'express_written', 'whatsapp_opt_in'] },
        cites: 'reg. 22',
        host: 'www.legislation.gov.uk',
      },
      'gb.text_message_consent': {
        says: 'marketing texts need prior consent, a WhatsApp opt-in not counting',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['sms'], effective_from: '2003-12-11', consent_kinds: ['express', 'express_written'] },
        cites: 'reg. 22',
        host: 'www.legislation.gov.uk',
      },
    },
  },
  fr: {
    jurisdiction: { country: 'FR' },
    rules: {
      'fr.hours': {
        says: 'canvassing calls only Monday to Friday, 10:00–13:00 and 14:00–20:00',
        rule: {
          kind: 'hours',
          purposes: ['marketing'],
          channels: ['voice'],
          effective_from: '2023-03-01',
          windows: [
            { days: WEEKDAYS_ONLY, start: '10:00', end: '13:00' },
            { days: WEEKDAYS_ONLY, start: '14:00', end: '20:00' },
          ],
        },
        cites: 'D. 223-9',
        host: 'www.legifrance.gouv.fr',
      },
      'fr.public_holidays': {
        says: 'no canvassing calls on the public holidays of Code du travail L. 3133-1',
        rule: {
          kind: 'forbidden_dates',
          purposes: ['marketing'],
          channels: ['voice'],
          effective_from: '2023-03-01',
          holidays: [
            { name: "Jour de l'an", month: 1, day: 1 },
            { name: 'Lundi de Pâques', easter_offset: 1 },
            { name: 'Fête du Travail', month: 5, day: 1 },
            { name: 'Victoire 1945', month: 5, day: 8 },
            { name: 'Ascension', easter_offset: 39 },
            { name: 'Lundi de Pentecôte', easter_offset: 50 },
            { name: 'Fête nationale', month: 7, day: 14 },
            { name: 'Assomption', month: 8, day: 15 },
            { name: 'Toussaint', month: 11, day: 1 },
            { name: 'Armistice 1918', month: 11, day: 11 },
            { name: 'Noël', month: 12, day: 25 },
          ],
        },
        cites: 'L. 3133-1',
        host: 'www.legifrance.gouv.fr',
      },
      'fr.cap': {
        says: 'at most 4 canvassing attempts in 30 days by one professional, whatever the subject',
        rule: { kind: 'cap', purposes: ['marketing'], channels: ['voice'], effective_from: '2023-03-01', max_attempts: 4, per_hours: 720, scope: 'any' },
        cites: 'D. 223-9',
        host: 'www.legifrance.gouv.fr',
      },
      'fr.prior_consent': {
        says: 'from 11 August 2026, canvassing calls need the consumer’s prior consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['voice'], effective_from: '2026-08-11', consent_kinds: ['express', 'express_written'] },
        cites: '2025-594',
        host: 'www.legifrance.gouv.fr',
      },
      'fr.electronic_mail_consent': {
        says: 'marketing messages need prior consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['whatsapp'], effective_from: '2016-07-01', consent_kinds: ['express', 'express_written', 'whatsapp_opt_in'] },
        cites: 'L. 34-5',
        host: 'www.legifrance.gouv.fr',
      },
      'fr.text_message_consent': {
        says: 'marketing texts need prior consent, a WhatsApp opt-in not counting',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['sms'], effective_from: '2016-07-01', consent_kinds: ['express', 'express_written'] },
        cites: 'L. 34-5',
        host: 'www.legifrance.gouv.fr',
      },
    },
  },
  de: {
    jurisdiction: { country: 'DE' },
    rules: {
      'de.telephone_consent': {
        says: 'advertising calls need prior express consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['voice'], effective_from: '2022-05-28', consent_kinds: ['express', 'express_written'] },
        cites: '§ 7 Abs. 2 Nr. 1',
        host: 'www.gesetze-im-internet.de',
      },
      'de.electronic_mail_consent': {
        says: 'advertising messages need prior express consent',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['whatsapp'], effective_from: '2022-05-28', consent_kinds: ['express', 'express_written', 'whatsapp_opt_in'] },
        cites: '§ 7 Abs. 2 Nr. 2',
        host: 'www.gesetze-im-internet.de',
      },
      'de.text_message_consent': {
        says: 'marketing texts need prior consent, a WhatsApp opt-in not counting',
        rule: { kind: 'consent', purposes: ['marketing'], channels: ['sms'], effective_from: '2022-05-28', consent_kinds: ['express', 'express_written'] },
        cites: '§ 7 Abs. 2 Nr. 2',
        host: 'www.gesetze-im-internet.de',
      },
    },
  },
}

describe('calling-law profiles: the facts', () => {
  test('every profile shipped is one the table states, and every one it states is shipped', () => {
    assert.deepEqual(data.profiles.map((p) => p.id).sort(), Object.keys(FACTS).sort())
  })

  for (const [profileId, facts] of Object.entries(FACTS)) {
    const profile = data.profiles.find((p) => p.id === profileId)
    test(`${profileId}: its jurisdiction, its version, and exactly the rules stated`, () => {
      assert.ok(profile !== undefined, `no profile ${profileId}`)
      assert.deepEqual(profile.jurisdiction, facts.jurisdiction)
      assert.equal(profile.version, TODAY)
      assert.deepEqual(profile.rules.map((r) => r.id).sort(), Object.keys(facts.rules).sort())
    })
    for (const [ruleId, fact] of Object.entries(facts.rules)) {
      test(`${ruleId}: ${fact.says}`, () => {
        const rule = profile?.rules.find((r) => r.id === ruleId)
        assert.ok(rule !== undefined, `no rule ${ruleId}`)
        const { id: _id, source, note: _note, ...said } = rule
        assert.deepEqual(said, fact.rule)
        assert.ok(source.citation.includes(fact.cites), `${source.citation} does not cite ${fact.cites}`)
        assert.equal(new URL(source.url).host, fact.host)
      })
    }
  }

  test('gb and de: no statutory calling hours, so no hours rule is invented', () => {
    for (const id of ['gb', 'de']) {
      const profile = data.profiles.find((p) => p.id === id)
      assert.deepEqual(profile?.rules.filter((r) => r.kind === 'hours' || r.kind === 'forbidden_dates' || r.kind === 'cap'), [])
    }
  })

  test('every rule of a US state binds marketing only, and every US hours rule is at least as strict as the federal one', () => {
    const federal = hoursOf('us-federal.telephone_solicitation_hours')
    for (const { profile, rule } of rules) {
      if (profile.jurisdiction.country !== 'US' || profile.jurisdiction.region === undefined) continue
      assert.deepEqual(rule.purposes, ['marketing'], rule.id)
      if (rule.kind !== 'hours') continue
      for (const window of rule.windows) {
        for (const day of window.days) {
          const outer = federal.find((w) => w.days.includes(day))
          assert.ok(outer !== undefined && outer.start <= window.start && window.end <= outer.end, `${rule.id} ${day} ${window.start}–${window.end}`)
        }
      }
    }
  })

  test('fr: the public holidays fall on the official dates of 2026 and 2027 (Easter 5 April 2026, 28 March 2027)', () => {
    const rule = data.profiles.find((p) => p.id === 'fr')?.rules.find((r) => r.id === 'fr.public_holidays')
    assert.ok(rule?.kind === 'forbidden_dates')
    assert.deepEqual(datesIn(rule.holidays, 2026), [
      '2026-01-01', '2026-04-06', '2026-05-01', '2026-05-08', '2026-05-14', '2026-05-25',
      '2026-07-14', '2026-08-15', '2026-11-01', '2026-11-11', '2026-12-25',
    ])
    assert.deepEqual(datesIn(rule.holidays, 2027), [
      '2027-01-01', '2027-03-29', '2027-05-01', '2027-05-06', '2027-05-08', '2027-05-17',
      '2027-07-14', '2027-08-15', '2027-11-01', '2027-11-11', '2027-12-25',
    ])
  })

  test('fr: no canvassing window on a Saturday or a Sunday, none over lunch', () => {
    const windows = hoursOf('fr.hours')
    assert.deepEqual(windows.filter((w) => w.days.includes('sat') || w.days.includes('sun')), [])
    assert.ok(windows.every((w) => w.end <= '13:00' || w.start >= '14:00'))
  })
})

function hoursOf(ruleId: string): ScheduleWindow[] {
  const rule = rules.find(({ rule }) => rule.id === ruleId)?.rule
  assert.ok(rule?.kind === 'hours', `${ruleId} is an hours rule`)
  return rule.windows
}

/** The dates of holiday rules in a year, sorted: worked out here, independently of the dispatcher's own resolver. */
function datesIn(holidays: readonly HolidayRule[], year: number): string[] {
  const DAY = 86_400_000
  const dates = holidays.map((holiday) => {
    if ('easter_offset' in holiday) return easterSunday(year) + holiday.easter_offset * DAY
    if ('nth' in holiday) throw new Error('no nth-weekday holiday is expected here')
    return Date.UTC(year, holiday.month - 1, holiday.day)
  })
  return dates.sort((a, b) => a - b).map((day) => new Date(day).toISOString().slice(0, 10))
}

/** Western Easter Sunday, by the anonymous Gregorian computus (Meeus/Jones/Butcher), as a UTC midnight. */
function easterSunday(year: number): number {
  const a = year % 19
  const b = Math.floor(year / 100)
  const c = year % 100
  const h = (19 * a + b - Math.floor(b / 4) - Math.floor((b - Math.floor((b + 8) / 25) + 1) / 3) + 15) % 30
  const l = (32 + 2 * (b % 4) + 2 * Math.floor(c / 4) - h - (c % 4)) % 7
  const m = Math.floor((a + 11 * h + 22 * l) / 451)
  const n = h + l - 7 * m + 114
  return Date.UTC(year, Math.floor(n / 31) - 1, (n % 31) + 1)
}
