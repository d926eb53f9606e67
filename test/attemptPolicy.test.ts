import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type EndedInteraction, type FallbackPlan, stepAfterInteraction, stepAfterLateResult, stepWhenDue, type TaskTiming } from '../src/domain/attemptPolicy.ts'
import { type AttemptPolicy, DEFAULT_ATTEMPTS, DEFAULT_SCHEDULE, type Schedule, WEEKDAYS } from '../src/domain/campaignSettings.ts'
import { afterOpenMinutes, fallbackConditionOf, noReplyDeadline } from '../src/domain/fallback.ts'
import type { InteractionOutcome, TaskStatus } from '../src/domain/types.ts'

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number) => new Date(ms).toISOString()
const ALWAYS_OPEN: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '00:00', end: '24:00' }] }
// Monday 2026-06-01 12:00 in Madrid (CEST): inside the default 09:00–20:00 window.
const NOON_MADRID = at('2026-06-01T10:00:00.000Z')

function timing(overrides: Partial<TaskTiming> = {}): TaskTiming {
  return { schedule: DEFAULT_SCHEDULE, timezones: ['Europe/Madrid'], expiresAt: NOON_MADRID + 7 * 86_400_000, ...overrides }
}

describe('stepWhenDue', () => {
  const cases: { name: string; task: TaskTiming & { suppressed: boolean }; now: number; expected: ReturnType<typeof stepWhenDue> }[] = [
    { name: 'inside the window in its zone: start', task: { ...timing(), suppressed: false }, now: NOON_MADRID, expected: { kind: 'start' } },
    {
      name: 'a suppressed number closes as opted_out, even at night',
      task: { ...timing(), suppressed: true },
      now: at('2026-06-01T01:00:00.000Z'),
      expected: { kind: 'complete', outcome: 'opted_out' },
    },
    {
      name: 'at its expiry it expires',
      task: { ...timing({ expiresAt: NOON_MADRID }), suppressed: false },
      now: NOON_MADRID,
      expected: { kind: 'complete', outcome: 'expired' },
    },
    {
      name: 'at night it waits for 09:00 in the zone',
      task: { ...timing(), suppressed: false },
      now: at('2026-06-01T20:30:00.000Z'),
      expected: { kind: 'wait', until: at('2026-06-02T07:00:00.000Z') },
    },
    {
      name: 'with no opening before its expiry it waits for the expiry, so that it expires on time',
      task: { ...timing({ expiresAt: at('2026-06-02T06:00:00.000Z') }), suppressed: false },
      now: at('2026-06-01T20:30:00.000Z'),
      expected: { kind: 'wait', until: at('2026-06-02T06:00:00.000Z') },
    },
    {
      name: 'over two zones it waits for the hour open in both',
      task: { ...timing({ timezones: ['Europe/Madrid', 'Atlantic/Canary'] }), suppressed: false },
      // 08:30 in Canary, 09:30 in Madrid: Canary opens at 09:00 WEST = 08:00Z.
      now: at('2026-06-01T07:30:00.000Z'),
      expected: { kind: 'wait', until: at('2026-06-01T08:00:00.000Z') },
    },
    {
      name: 'a task left with no zone to call in fails',
      task: { ...timing({ schedule: { ...ALWAYS_OPEN, timezone: 'contact' }, timezones: [] }), suppressed: false },
      now: NOON_MADRID,
      expected: { kind: 'complete', outcome: 'failed' },
    },
  ]
  for (const { name, task, now, expected } of cases) {
    test(name, () => assert.deepEqual(stepWhenDue(task, now), expected))
  }
})

describe('stepAfterInteraction', () => {
  const ended = (outcome: InteractionOutcome, overrides: Partial<EndedInteraction> = {}): EndedInteraction => ({
    outcome,
    endedAt: NOON_MADRID,
    permanent: false,
    optedOut: false,
    callbackAt: null,
    startedAt: NOON_MADRID,
    notOnChannel: false,
    ...overrides,
  })
  const task = (attempts: number, overrides: Partial<TaskTiming> = {}) => ({ ...timing(overrides), attempts, policy: DEFAULT_ATTEMPTS, fallback: null })
  const cases: { name: string; ended: EndedInteraction; task: ReturnType<typeof task>; expected: string }[] = [
    { name: 'a completed call is a reach', ended: ended('completed'), task: task(1), expected: 'complete reached' },
    { name: 'a reply is a reach', ended: ended('replied'), task: task(1), expected: 'complete reached' },
    { name: 'an opt-out closes the task whatever the outcome', ended: ended('replied', { optedOut: true }), task: task(1), expected: 'complete opted_out' },
    { name: 'a permanent refusal fails the task', ended: ended('failed', { permanent: true }), task: task(1), expected: 'complete failed' },
    { name: 'the last attempt unanswered: unreachable', ended: ended('no_answer'), task: task(3), expected: 'complete unreachable' },
    { name: 'no answer: again after 2 h', ended: ended('no_answer'), task: task(1), expected: `retry ${iso(NOON_MADRID + 7_200_000)}` },
    { name: 'busy: again after 15 min', ended: ended('busy'), task: task(1), expected: `retry ${iso(NOON_MADRID + 900_000)}` },
    { name: 'voicemail: again after 4 h', ended: ended('voicemail'), task: task(2), expected: `retry ${iso(NOON_MADRID + 14_400_000)}` },
    { name: 'a message read but unanswered counts as no answer', ended: ended('read'), task: task(1), expected: `retry ${iso(NOON_MADRID + 7_200_000)}` },
    { name: 'an undelivered message counts as failed', ended: ended('undelivered'), task: task(1), expected: `retry ${iso(NOON_MADRID + 1_800_000)}` },
    {
      name: 'a delay that ends after the window waits for the next morning',
      ended: ended('voicemail', { endedAt: at('2026-06-01T16:00:00.000Z') }),
      task: task(1),
      expected: `retry ${iso(at('2026-06-02T07:00:00.000Z'))}`,
    },
    {
      name: 'no opening before expiry: pending until it expires',
      ended: ended('no_answer'),
      task: task(1, { expiresAt: NOON_MADRID + 3_600_000 }),
      expected: `retry ${iso(NOON_MADRID + 3_600_000)}`,
    },
    {
      name: 'a callback asked in the window: the next attempt is due then, though the person was reached',
      ended: ended('completed', { callbackAt: at('2026-06-03T14:30:00.000Z') }),
      task: task(1),
      expected: `retry ${iso(at('2026-06-03T14:30:00.000Z'))}`,
    },
    {
      name: "a callback asked for the contact's evening three days on: due at the next opening after it",
      // 21:30 in Madrid on Thursday: the window (09:00-20:00) opens again at 09:00 on Friday.
      ended: ended('completed', { callbackAt: at('2026-06-04T19:30:00.000Z') }),
      task: task(1),
      expected: `retry ${iso(at('2026-06-05T07:00:00.000Z'))}`,
    },
    {
      name: 'a callback overrides the retry delay of an outcome that is not a reach',
      ended: ended('voicemail', { callbackAt: NOON_MADRID + 600_000 }),
      task: task(1),
      expected: `retry ${iso(NOON_MADRID + 600_000)}`,
    },
    {
      name: 'a callback in the past is due at once (in the window)',
      ended: ended('completed', { callbackAt: NOON_MADRID - 3_600_000 }),
      task: task(1),
      expected: `retry ${iso(NOON_MADRID - 3_600_000)}`,
    },
    {
      name: 'a callback on the last attempt is not made: the reach completes the task',
      ended: ended('completed', { callbackAt: NOON_MADRID + 86_400_000 }),
      task: task(3),
      expected: 'complete reached',
    },
    {
      name: 'a callback on the last attempt after no answer: unreachable',
      ended: ended('no_answer', { callbackAt: NOON_MADRID + 86_400_000 }),
      task: task(3),
      expected: 'complete unreachable',
    },
    {
      name: 'a callback with no opening before the task expires is not made',
      ended: ended('completed', { callbackAt: NOON_MADRID + 2 * 86_400_000 }),
      task: task(1, { expiresAt: NOON_MADRID + 86_400_000 }),
      expected: 'complete reached',
    },
    {
      name: 'an opt-out wins over a callback',
      ended: ended('completed', { optedOut: true, callbackAt: NOON_MADRID + 600_000 }),
      task: task(1),
      expected: 'complete opted_out',
    },
  ]
  for (const { name, ended: interaction, task: state, expected } of cases) {
    test(name, () => {
      const step = stepAfterInteraction(interaction, state, NOON_MADRID)
      assert.equal(step.kind === 'complete' ? `complete ${step.outcome}` : `${step.kind} ${iso(step.dueAt)}`, expected)
    })
  }
})

describe('stepAfterInteraction: a message left on a voicemail', () => {
  const ended: EndedInteraction = { outcome: 'voicemail_left', endedAt: NOON_MADRID, permanent: false, optedOut: false, callbackAt: null, startedAt: NOON_MADRID - 60_000, notOnChannel: false }
  const task = (attempts: number, voicemailLeft?: AttemptPolicy['voicemail_left'], overrides: Partial<TaskTiming> = {}) => ({
    ...timing(overrides),
    attempts,
    policy: voicemailLeft === undefined ? DEFAULT_ATTEMPTS : { ...DEFAULT_ATTEMPTS, voicemail_left: voicemailLeft },
    fallback: null,
  })
  const cases: { name: string; ended: EndedInteraction; task: ReturnType<typeof task>; expected: string }[] = [
    { name: 'no rule: stop, unreachable (nobody was reached)', ended, task: task(1), expected: 'complete unreachable' },
    { name: 'stop: unreachable, with attempts left', ended, task: task(1, { then: 'stop' }), expected: 'complete unreachable' },
    {
      name: 'retry without a delay: a day and two hours later, at another local hour',
      ended,
      task: task(1, { then: 'retry' }),
      expected: `retry ${iso(NOON_MADRID + 26 * 3_600_000)}`,
    },
    { name: 'retry after its own delay', ended, task: task(1, { then: 'retry', delay_s: 3_600 }), expected: `retry ${iso(NOON_MADRID + 3_600_000)}` },
    {
      name: 'retry whose delay lands at night: at the next opening',
      ended,
      task: task(1, { then: 'retry', delay_s: 10 * 3_600 }),
      expected: `retry ${iso(at('2026-06-02T07:00:00.000Z'))}`,
    },
    { name: 'retry on the last attempt: unreachable', ended, task: task(3, { then: 'retry' }), expected: 'complete unreachable' },
    {
      name: 'retry with no opening before the task expires: pending until it expires',
      ended,
      task: task(1, { then: 'retry' }, { expiresAt: NOON_MADRID + 86_400_000 }),
      expected: `retry ${iso(NOON_MADRID + 86_400_000)}`,
    },
    { name: 'an opt-out still wins', ended: { ...ended, optedOut: true }, task: task(1, { then: 'retry' }), expected: 'complete opted_out' },
    {
      name: 'a callback time still wins over stop',
      ended: { ...ended, callbackAt: NOON_MADRID + 600_000 },
      task: task(1, { then: 'stop' }),
      expected: `retry ${iso(NOON_MADRID + 600_000)}`,
    },
    { name: 'the rule applies to voicemail_left alone: a machine that got nothing follows retry_delays_s.voicemail', ended: { ...ended, outcome: 'voicemail' }, task: task(1, { then: 'stop' }), expected: `retry ${iso(NOON_MADRID + 14_400_000)}` },
  ]
  for (const { name, ended: interaction, task: state, expected } of cases) {
    test(name, () => {
      const step = stepAfterInteraction(interaction, state, NOON_MADRID)
      assert.equal(step.kind === 'complete' ? `complete ${step.outcome}` : `retry ${iso(step.dueAt)}`, expected)
    })
  }
})


describe('stepAfterInteraction with a fallback step', () => {
  // The voice campaign calls 14:00-18:00 on weekdays in the contact's zones; Madrid is UTC+2 in June.
  const AFTERNOONS: Schedule = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '14:00', end: '18:00' }] }
  const plan = (overrides: Partial<FallbackPlan> = {}): FallbackPlan => ({
    campaignId: 'campaign_voice',
    when: ['undelivered', 'not_on_whatsapp', 'no_reply'],
    noReplyMinutes: 0,
    schedule: AFTERNOONS,
    ...overrides,
  })
  const ended = (outcome: InteractionOutcome, overrides: Partial<EndedInteraction> = {}): EndedInteraction => ({
    outcome,
    endedAt: NOON_MADRID,
    permanent: false,
    optedOut: false,
    callbackAt: null,
    startedAt: NOON_MADRID - 3_600_000,
    notOnChannel: false,
    ...overrides,
  })
  const task = (fallback: FallbackPlan | null, overrides: Partial<TaskTiming> = {}) => ({ ...timing(overrides), attempts: 1, policy: DEFAULT_ATTEMPTS, fallback })
  const TWO_PM_MADRID = at('2026-06-01T12:00:00.000Z')
  const cases: { name: string; ended: EndedInteraction; task: ReturnType<typeof task>; expected: string }[] = [
    { name: 'a reply does not fall back', ended: ended('replied'), task: task(plan()), expected: 'complete reached' },
    { name: 'an opt-out does not fall back', ended: ended('read', { optedOut: true }), task: task(plan()), expected: 'complete opted_out' },
    {
      name: 'not on WhatsApp: on to the call at the fallback campaign\'s next opening',
      ended: ended('failed', { permanent: true, notOnChannel: true }),
      task: task(plan()),
      expected: `fall_back not_on_whatsapp campaign_voice ${iso(TWO_PM_MADRID)}`,
    },
    {
      name: 'not on WhatsApp inside the fallback campaign\'s window: at once',
      ended: ended('failed', { permanent: true, notOnChannel: true, endedAt: at('2026-06-01T13:00:00.000Z') }),
      task: task(plan()),
      expected: `fall_back not_on_whatsapp campaign_voice ${iso(at('2026-06-01T13:00:00.000Z'))}`,
    },
    {
      name: 'not on WhatsApp when only undelivered is named: the permanent refusal fails the task',
      ended: ended('failed', { permanent: true, notOnChannel: true }),
      task: task(plan({ when: ['undelivered'] })),
      expected: 'complete failed',
    },
    {
      name: 'an undelivered message falls back before any retry of its own',
      ended: ended('undelivered'),
      task: task(plan()),
      expected: `fall_back undelivered campaign_voice ${iso(TWO_PM_MADRID)}`,
    },
    {
      name: 'read without a reply, no wait named: at the next opening after the interaction ended',
      ended: ended('read'),
      task: task(plan()),
      expected: `fall_back no_reply campaign_voice ${iso(TWO_PM_MADRID)}`,
    },
    {
      name: 'no reply within 6 open hours of a message sent at 11:00: 17:00, inside the afternoon window',
      ended: ended('delivered'),
      task: task(plan({ noReplyMinutes: 360 })),
      expected: `fall_back no_reply campaign_voice ${iso(at('2026-06-01T15:00:00.000Z'))}`,
    },
    {
      name: 'no reply within 10 open hours counts only the contact\'s open hours (09:00-20:00): Tuesday 10:00, then the afternoon',
      ended: ended('delivered'),
      task: task(plan({ noReplyMinutes: 600 })),
      expected: `fall_back no_reply campaign_voice ${iso(at('2026-06-02T12:00:00.000Z'))}`,
    },
    {
      name: 'a no-reply condition not named: the step\'s own retry',
      ended: ended('read'),
      task: task(plan({ when: ['not_on_whatsapp'] })),
      expected: `retry ${iso(NOON_MADRID + 7_200_000)}`,
    },
    {
      name: 'no fallback step (none, or taken already): the step\'s own retry',
      ended: ended('undelivered'),
      task: task(null),
      expected: `retry ${iso(NOON_MADRID + 1_800_000)}`,
    },
    {
      name: 'no opening of the fallback campaign before expiry: pending until it expires',
      ended: ended('undelivered'),
      task: task(plan(), { expiresAt: NOON_MADRID + 3_600_000 }),
      expected: `fall_back undelivered campaign_voice ${iso(NOON_MADRID + 3_600_000)}`,
    },
  ]
  for (const { name, ended: interaction, task: state, expected } of cases) {
    test(name, () => {
      const step = stepAfterInteraction(interaction, state, NOON_MADRID)
      const said = step.kind === 'complete' ? `complete ${step.outcome}` : step.kind === 'retry' ? `retry ${iso(step.dueAt)}` : `fall_back ${step.condition} ${step.campaignId} ${iso(step.dueAt)}`
      assert.equal(said, expected)
    })
  }
})

describe('afterOpenMinutes', () => {
  const EVENINGS: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '09:00', end: '20:00' }] }
  const cases: { name: string; from: string; minutes: number; until?: string; expected: string | null }[] = [
    { name: 'zero minutes: at once', from: '2026-06-01T10:00:00.000Z', minutes: 0, expected: '2026-06-01T10:00:00.000Z' },
    { name: 'inside the window: plain minutes', from: '2026-06-01T10:00:00.000Z', minutes: 90, expected: '2026-06-01T11:30:00.000Z' },
    { name: 'across the night: 10 minutes at 19:50, 50 the next morning', from: '2026-06-01T17:50:00.000Z', minutes: 60, expected: '2026-06-02T07:50:00.000Z' },
    { name: 'sent at night: counted from the opening', from: '2026-06-01T22:00:00.000Z', minutes: 30, expected: '2026-06-02T07:30:00.000Z' },
    { name: 'more open time than is left before the limit: none', from: '2026-06-01T10:00:00.000Z', minutes: 600, until: '2026-06-01T18:00:00.000Z', expected: null },
    { name: 'two whole days of open time', from: '2026-06-01T07:00:00.000Z', minutes: 2 * 11 * 60, expected: '2026-06-02T18:00:00.000Z' },
  ]
  for (const { name, from, minutes, until, expected } of cases) {
    test(name, () => {
      const deadline = afterOpenMinutes(EVENINGS, ['Europe/Madrid'], at(from), minutes, until === undefined ? at(from) + 30 * 86_400_000 : at(until))
      assert.equal(deadline === null ? null : iso(deadline), expected)
    })
  }
})

describe('noReplyDeadline', () => {
  const MESSAGES: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '09:00', end: '20:00' }] }
  const task = (overrides: { channel?: 'voice' | 'whatsapp'; expiresAt?: number; timezones?: string[] } = {}) => ({
    channel: overrides.channel ?? ('whatsapp' as const),
    schedule: MESSAGES,
    timezones: overrides.timezones ?? ['Europe/Madrid'],
    expiresAt: overrides.expiresAt ?? NOON_MADRID + 7 * 86_400_000,
  })
  const waiting = { campaign_id: 'campaign_voice', when: ['no_reply' as const], no_reply_minutes: 600 }
  const cases: { name: string; fallback: Parameters<typeof noReplyDeadline>[0]; task: ReturnType<typeof task>; expected: string | null }[] = [
    { name: 'no fallback step: the reply window', fallback: null, task: task(), expected: null },
    { name: 'no no_reply_minutes: the reply window', fallback: { campaign_id: 'campaign_voice', when: ['no_reply'] }, task: task(), expected: null },
    { name: 'no_reply not named: the reply window', fallback: { ...waiting, when: ['undelivered'] }, task: task(), expected: null },
    { name: 'a call is over when it ends', fallback: waiting, task: task({ channel: 'voice' }), expected: null },
    // Sent at 12:00 in Madrid: 8 open hours that day, 2 the next morning.
    { name: '10 open hours from noon: 11:00 the next day', fallback: waiting, task: task(), expected: '2026-06-02T09:00:00.000Z' },
    { name: 'not that much open time before expiry: the expiry', fallback: waiting, task: task({ expiresAt: NOON_MADRID + 86_400_000 / 2 }), expected: iso(NOON_MADRID + 86_400_000 / 2) },
  ]
  for (const { name, fallback, task: state, expected } of cases) {
    test(name, () => {
      const deadline = noReplyDeadline(fallback, state, NOON_MADRID)
      assert.equal(deadline === null ? null : iso(deadline), expected)
    })
  }
})

describe('fallbackConditionOf', () => {
  const cases: { outcome: InteractionOutcome; notOnChannel: boolean; expected: string | null }[] = [
    { outcome: 'replied', notOnChannel: false, expected: null },
    { outcome: 'completed', notOnChannel: false, expected: null },
    { outcome: 'failed', notOnChannel: true, expected: 'not_on_whatsapp' },
    { outcome: 'undelivered', notOnChannel: true, expected: 'not_on_whatsapp' },
    { outcome: 'undelivered', notOnChannel: false, expected: 'undelivered' },
    { outcome: 'failed', notOnChannel: false, expected: 'undelivered' },
    { outcome: 'delivered', notOnChannel: false, expected: 'no_reply' },
    { outcome: 'read', notOnChannel: false, expected: 'no_reply' },
    { outcome: 'no_answer', notOnChannel: false, expected: 'no_reply' },
    { outcome: 'voicemail', notOnChannel: false, expected: 'no_reply' },
  ]
  for (const { outcome, notOnChannel, expected } of cases) {
    test(`${outcome}${notOnChannel ? ', not on the channel' : ''}: ${expected ?? 'no fallback'}`, () => assert.equal(fallbackConditionOf(outcome, notOnChannel), expected))
  }
})

describe('stepAfterLateResult', () => {
  const task = (status: TaskStatus, attempts = 1, overrides: Partial<TaskTiming> = {}) => ({ ...timing(overrides), status, attempts, policy: DEFAULT_ATTEMPTS })
  const result = (overrides: { optOut?: boolean; callbackAt?: number } = {}) => ({ optOut: overrides.optOut ?? false, callbackAt: overrides.callbackAt ?? null })
  const cases: { name: string; result: ReturnType<typeof result>; task: ReturnType<typeof task> | null; expected: ReturnType<typeof stepAfterLateResult> }[] = [
    { name: 'an interaction without a task: nothing', result: result({ optOut: true }), task: null, expected: { kind: 'none' } },
    { name: 'a completed task is not reopened by an opt-out', result: result({ optOut: true }), task: task('completed'), expected: { kind: 'none' } },
    { name: 'a completed task is not reopened by a callback', result: result({ callbackAt: NOON_MADRID }), task: task('completed'), expected: { kind: 'none' } },
    { name: 'an opt-out closes a task waiting for its retry', result: result({ optOut: true }), task: task('pending'), expected: { kind: 'complete', outcome: 'opted_out' } },
    { name: 'an opt-out closes a task whose next attempt runs', result: result({ optOut: true }), task: task('in_progress'), expected: { kind: 'complete', outcome: 'opted_out' } },
    {
      name: 'a callback moves a task waiting for its retry to the callback',
      result: result({ callbackAt: NOON_MADRID + 600_000 }),
      task: task('pending'),
      expected: { kind: 'reschedule', dueAt: NOON_MADRID + 600_000 },
    },
    {
      name: 'a callback in the night moves it to the next opening',
      result: result({ callbackAt: at('2026-06-01T21:00:00.000Z') }),
      task: task('pending'),
      expected: { kind: 'reschedule', dueAt: at('2026-06-02T07:00:00.000Z') },
    },
    { name: 'a callback does not move a task whose next attempt runs', result: result({ callbackAt: NOON_MADRID }), task: task('in_progress'), expected: { kind: 'none' } },
    { name: 'a callback with no attempt left: nothing', result: result({ callbackAt: NOON_MADRID }), task: task('pending', 3), expected: { kind: 'none' } },
    {
      name: 'a callback after the expiry: nothing',
      result: result({ callbackAt: NOON_MADRID + 2 * 86_400_000 }),
      task: task('pending', 1, { expiresAt: NOON_MADRID + 86_400_000 }),
      expected: { kind: 'none' },
    },
    { name: 'neither: nothing', result: result(), task: task('pending'), expected: { kind: 'none' } },
  ]
  for (const { name, result: late, task: state, expected } of cases) {
    test(name, () => assert.deepEqual(stepAfterLateResult(late, state), expected))
  }
})
