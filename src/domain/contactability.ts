/**
 * The one decision made before every attempt: may this organization contact
 * this number now, on this channel, for this purpose, and if not, why and
 * until when. `allowed`; `deferred` until an instant (the campaign's window,
 * a law's calling hours or holidays, a law's cap); or `blocked` (no consent
 * of a kind that is required, a consent revoked or expired, a do-not-call
 * registry). Every reason names the rule and its source, the profile's
 * version and the consent relied on, so that why a call was placed can be
 * shown afterwards.
 *
 * A pure function of what the dispatcher (and the dry run,
 * POST /api/v2/contactability) reads: the same input gives the same decision.
 * Every candidate jurisdiction's profile applies, and every candidate zone's
 * clock, so that the strictest reading of where the person may be holds.
 */
import type { CallingLawProfile, ConsentKind, Jurisdiction, LawRule, Purpose } from './callingLaw.ts'
import { WEEKDAYS, type Schedule } from './campaignSettings.ts'
import { type Compliance, type ConsentOnFile, consentLapse, kindSatisfies } from './consent.ts'
import { holidayDatesBetween } from './holidays.ts'
import { nextCommonOpening, nextOpening, type ScheduleInZones } from './schedule.ts'
import type { Channel } from './types.ts'

export const DECISIONS = ['allowed', 'deferred', 'blocked'] as const
export type DecisionKind = (typeof DECISIONS)[number]

export const REASON_CODES = [
  // allowed: what the attempt relied on
  'consent_on_file',
  'within_legal_hours',
  'under_legal_cap',
  'registry_overridden',
  // deferred
  'outside_campaign_window',
  'outside_legal_hours',
  'legal_holiday',
  'legal_cap_reached',
  // the campaign's learned timing chose the attempt's hour (domain/learnedTiming.ts): shown while the task
  // waits for it, and kept on the decision that allowed the attempt
  'learned_hour',
  // blocked
  'number_suppressed',
  'consent_missing',
  'consent_revoked',
  'consent_expired',
  'registry_listed',
] as const
export type ReasonCode = (typeof REASON_CODES)[number]

export interface DecisionReason {
  code: ReasonCode
  /** The rule: a profile's ("us-fl.hours"), or the campaign's own ("campaign.schedule", "campaign.consent"); null for a registry. */
  rule: string | null
  /** Where the rule comes from (a citation), or what it is (the campaign's setting, the registry's name). */
  source: string
  /** The profile and its version, "us-fl@2026-12-04", for a profile's rule. */
  profile?: string
  /** The consent relied on, revoked or expired. */
  consent_id?: string
  /** The registry listing the number. */
  registry_id?: string
  /** The holiday, for legal_holiday. */
  holiday?: string
}

export interface Decision {
  decision: DecisionKind
  /** deferred: the first instant every rule allows (null: none within the search, two years or the task's expiry). */
  notBefore: number | null
  reasons: DecisionReason[]
  /** The profiles that applied, "id@version": the jurisdictions the number may be in. */
  profiles: string[]
}

/** A registry that lists the number, with what it covers. */
export interface RegistryListing {
  id: string
  name: string
  purposes: Purpose[]
  /** Consent kinds that let a listed number be contacted all the same. */
  overriddenBy: ConsentKind[]
}

/** An earlier attempt to the number by the organization: when it started and what it was about. */
export interface PastAttempt {
  at: number
  subject: string
}

export interface ContactabilityInput {
  /** The number is on the organization's suppression list (it opted out): nothing else is asked. */
  suppressed: boolean
  channel: Channel
  purpose: Purpose
  /** The campaign's subject, for caps per subject. */
  subject: string
  /** The call speaks with an artificial voice (an AI agent, a recording). */
  artificialVoice: boolean
  /** The jurisdictions the number may be in (domain/jurisdictions.ts). */
  jurisdictions: readonly Jurisdiction[]
  /** The zones the person may be in: a law's hours hold in each. */
  zones: readonly string[]
  /** Every profile in force; those of the number's jurisdictions apply. */
  profiles: readonly CallingLawProfile[]
  /** The campaign's window and the zones it is read in; absent in a dry run by purpose. */
  campaignWindow?: ScheduleInZones
  /** Kinds, any one of which the campaign requires on file; empty: none of its own. */
  requiredConsent: readonly ConsentKind[]
  /** The organization's consents for the number (any channel or purpose: those that do not match are passed over). */
  consents: readonly ConsentOnFile[]
  /** The registries that list the number. */
  registries: readonly RegistryListing[]
  /** The organization's attempts to the number, as far back as the longest cap looks. */
  pastAttempts: readonly PastAttempt[]
  /** The search for an opening ends here (the task's expiry). */
  until?: number
}

/** The input of a decision for an attempt of this nature (a campaign's compliance, or a purpose's defaults), with the facts of its number. */
export function contactabilityInput(
  compliance: Compliance,
  facts: Omit<ContactabilityInput, 'purpose' | 'subject' | 'artificialVoice' | 'requiredConsent'>,
): ContactabilityInput {
  return { ...facts, purpose: compliance.purpose, subject: compliance.subject, artificialVoice: compliance.artificialVoice, requiredConsent: compliance.requiredConsent }
}

const HOUR_MS = 3_600_000
const YEAR_MS = 366 * 24 * HOUR_MS
/** Each turn moves the candidate to a window's start or past a cap's oldest attempt; past this many, nothing opens. */
const MAX_TURNS = 64

const jurisdictionMatches = (profile: CallingLawProfile, jurisdictions: readonly Jurisdiction[]) =>
  jurisdictions.some((j) => j.country === profile.jurisdiction.country && j.region === profile.jurisdiction.region)

/** A rule is in effect from the start of its day in UTC+14, the earliest any place reaches that date: read once per rule object. */
const effectiveInstants = new WeakMap<LawRule, number>()
function effectiveFrom(rule: LawRule): number {
  let instant = effectiveInstants.get(rule)
  if (instant === undefined) {
    instant = Date.parse(`${rule.effective_from}T00:00:00+14:00`)
    effectiveInstants.set(rule, instant)
  }
  return instant
}

/** Whether a rule binds this attempt: in effect at `at`, of its purpose, its channel, its nature. */
function binds(rule: LawRule, input: Pick<ContactabilityInput, 'purpose' | 'channel' | 'artificialVoice'>, at: number): boolean {
  if (!rule.purposes.includes(input.purpose) || !rule.channels.includes(input.channel)) return false
  if (effectiveFrom(rule) > at) return false
  return rule.applies_to !== 'artificial_voice' || (input.channel === 'voice' && input.artificialVoice)
}

export interface BoundRule {
  rule: LawRule
  profile: CallingLawProfile
}

const profileTag = (profile: CallingLawProfile) => `${profile.id}@${profile.version}`
const lawReason = (code: ReasonCode, bound: BoundRule, extra: Partial<DecisionReason> = {}): DecisionReason => ({
  code,
  rule: bound.rule.id,
  source: bound.rule.source.citation,
  profile: profileTag(bound.profile),
  ...extra,
})

/** A consent that matches the attempt and counts now, of a kind that satisfies one of `kinds`; else why none does. */
function findConsent(input: ContactabilityInput, kinds: readonly ConsentKind[], at: number): { found: ConsentOnFile } | { lapsed: ConsentOnFile | undefined; why: 'revoked' | 'expired' | undefined } {
  const matching = input.consents.filter(
    (consent) => consent.channel === input.channel && consent.purpose === input.purpose && kinds.some((kind) => kindSatisfies(consent.kind, kind)),
  )
  const valid = matching.filter((consent) => consentLapse(consent, at) === undefined).sort((a, b) => b.capturedAt - a.capturedAt)
  if (valid[0] !== undefined) return { found: valid[0] }
  // The most recent lapse says why: a revocation of the last consent given is what the person last said.
  const lapsed = matching
    .map((consent) => ({ consent, why: consentLapse(consent, at) }))
    .filter((entry): entry is { consent: ConsentOnFile; why: 'revoked' | 'expired' } => entry.why === 'revoked' || entry.why === 'expired')
    .sort((a, b) => b.consent.capturedAt - a.consent.capturedAt)[0]
  return { lapsed: lapsed?.consent, why: lapsed?.why }
}

/** The reasons a required consent blocks, or the reason it is on file. */
function consentReason(input: ContactabilityInput, kinds: readonly ConsentKind[], at: number, rule: Omit<DecisionReason, 'code'>): DecisionReason {
  const consent = findConsent(input, kinds, at)
  if ('found' in consent) return { code: 'consent_on_file', ...rule, consent_id: consent.found.id }
  if (consent.lapsed === undefined) return { code: 'consent_missing', ...rule }
  return { code: consent.why === 'revoked' ? 'consent_revoked' : 'consent_expired', ...rule, consent_id: consent.lapsed.id }
}

const ALL_DAY: Schedule['windows'] = [{ days: [...WEEKDAYS], start: '00:00', end: '24:00' }]

/**
 * A law's hours as a schedule, one object per rule: the schedule's plan is
 * kept by the object (domain/schedule.ts), where a fresh object each decision
 * had it serialized to be found, the largest cost of a decision (a tenth).
 */
const hoursSchedules = new WeakMap<LawRule, Schedule>()
function hoursSchedule(rule: Extract<LawRule, { kind: 'hours' }>): Schedule {
  let schedule = hoursSchedules.get(rule)
  if (schedule === undefined) {
    schedule = { timezone: 'contact', windows: rule.windows }
    hoursSchedules.set(rule, schedule)
  }
  return schedule
}

/**
 * Forbidden dates as a schedule: open all day but on them, in the years a
 * search may reach. Kept by the rule object and the year: an operator's
 * override of a rule is a new object, never answered from its old dates.
 */
const holidaySchedules = new WeakMap<LawRule, Map<number, { schedule: Schedule; names: Map<string, string> }>>()
function holidaySchedule(rule: Extract<LawRule, { kind: 'forbidden_dates' }>, at: number) {
  const year = new Date(at).getUTCFullYear()
  let years = holidaySchedules.get(rule)
  if (years === undefined) {
    years = new Map()
    holidaySchedules.set(rule, years)
  }
  let entry = years.get(year)
  if (entry === undefined) {
    // A year before (a local date behind UTC's) to two after (the search's horizon).
    const dates = holidayDatesBetween(rule.holidays, year - 1, year + 2)
    entry = { schedule: { timezone: 'contact', windows: ALL_DAY, blackout_dates: dates.map((d) => d.date) }, names: new Map(dates.map((d) => [d.date, d.name])) }
    years.set(year, entry)
  }
  return entry
}

/** The first instant from `at` at which fewer than `max` of `times` fall in the `perMs` before it. */
function capAllows(times: readonly number[], max: number, perMs: number, at: number): number {
  const inWindow = times.filter((time) => time > at - perMs && time <= at).sort((a, b) => a - b)
  if (inWindow.length < max) return at
  return inWindow[inWindow.length - max]! + perMs
}

const capTimes = (input: ContactabilityInput, rule: Extract<LawRule, { kind: 'cap' }>) =>
  input.pastAttempts.filter((attempt) => rule.scope === 'any' || attempt.subject === input.subject).map((attempt) => attempt.at)

/** The local date in one of `zones` at `at` that is a holiday of the schedule, if any. */
function holidayAt(entry: { names: Map<string, string> }, zones: readonly string[], at: number): string | undefined {
  for (const zone of zones) {
    const date = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at)
    const name = entry.names.get(date)
    if (name !== undefined) return `${name} (${date})`
  }
  return undefined
}

/** What of the law binds an attempt: the profiles of the number's jurisdictions, and their rules that bind its purpose, channel and voice. */
export type AttemptNature = Pick<ContactabilityInput, 'profiles' | 'jurisdictions' | 'purpose' | 'channel' | 'artificialVoice'>

export interface RulesBinding {
  applicable: readonly CallingLawProfile[]
  bound: readonly BoundRule[]
}

/**
 * What binds is the same for every attempt of one nature between two of its
 * profiles' effective instants: kept by the profiles in force (a new array
 * when they change) and the nature, with the span of instants it holds for.
 * Found so, rather than filtered per attempt, a dispatch batch's two calls a
 * task (decisionNeeds, decideContactability) cost 0.2 µs rather than 1.6.
 */
const bindings = new WeakMap<readonly CallingLawProfile[], Map<string, RulesBinding & { from: number; until: number }>>()

export function rulesBinding(nature: AttemptNature, at: number): RulesBinding {
  let ofProfiles = bindings.get(nature.profiles)
  if (ofProfiles === undefined) {
    ofProfiles = new Map()
    bindings.set(nature.profiles, ofProfiles)
  }
  const key = `${nature.purpose} ${nature.channel} ${nature.artificialVoice} ${nature.jurisdictions.map((j) => `${j.country}-${j.region ?? ''}`).join(' ')}`
  const kept = ofProfiles.get(key)
  if (kept !== undefined && kept.from <= at && at < kept.until) return kept
  const applicable = nature.profiles.filter((profile) => jurisdictionMatches(profile, nature.jurisdictions))
  const bound = applicable.flatMap((profile) => profile.rules.filter((rule) => binds(rule, nature, at)).map((rule) => ({ rule, profile })))
  const instants = applicable.flatMap((profile) => profile.rules.map(effectiveFrom))
  // Shared by every decision of the nature: frozen, so that none can change what the next one reads.
  const entry = {
    applicable: Object.freeze(applicable),
    bound: Object.freeze(bound),
    from: Math.max(-Infinity, ...instants.filter((instant) => instant <= at)),
    until: Math.min(Infinity, ...instants.filter((instant) => instant > at)),
  }
  ofProfiles.set(key, entry)
  return entry
}

/** How far back any cap of the profiles looks (hours; 0 for none): how long an attempt a cap counted is remembered. */
export function longestCapHours(profiles: readonly CallingLawProfile[]): number {
  return Math.max(0, ...profiles.flatMap((profile) => profile.rules.flatMap((rule) => (rule.kind === 'cap' ? [rule.per_hours] : []))))
}

/**
 * What a decision about an attempt of this nature reads beyond the task:
 * the number's consents (when anything requires one), and its past
 * attempts for the longest cap that binds (hours; null when none does).
 * The dispatcher reads neither for an attempt that needs neither.
 */
export function decisionNeeds(nature: AttemptNature, requiredConsent: readonly ConsentKind[], at: number): { consents: boolean; capHours: number | null } {
  const { bound } = rulesBinding(nature, at)
  const caps = bound.flatMap(({ rule }) => (rule.kind === 'cap' ? [rule.per_hours] : []))
  return { consents: requiredConsent.length > 0 || bound.some(({ rule }) => rule.kind === 'consent'), capHours: caps.length === 0 ? null : Math.max(...caps) }
}

/** A window an attempt must be inside, and the reasons it gives: when it holds the attempt at an instant, and when it let it through. */
interface LawWindow {
  part: ScheduleInZones
  reason: (at: number) => DecisionReason
  applied?: DecisionReason
}

/** The hours and forbidden dates of the rules that bind, each read in the person's zones. */
function lawWindowsOf(bound: readonly BoundRule[], zones: readonly string[], now: number): LawWindow[] {
  const windows: LawWindow[] = []
  for (const entry of bound) {
    if (entry.rule.kind === 'hours') {
      windows.push({
        part: { schedule: hoursSchedule(entry.rule), zones },
        reason: () => lawReason('outside_legal_hours', entry),
        applied: lawReason('within_legal_hours', entry),
      })
    } else if (entry.rule.kind === 'forbidden_dates') {
      const holidays = holidaySchedule(entry.rule, now)
      windows.push({ part: { schedule: holidays.schedule, zones }, reason: (at) => lawReason('legal_holiday', entry, { holiday: holidayAt(holidays, zones, at) }) })
    }
  }
  return windows
}

/**
 * The law's windows for an attempt of this nature at `at` in the person's
 * zones: the calling hours and forbidden dates of each rule that binds it,
 * as the decision reads them (caps, which depend on the number's past
 * attempts, are left to the decision itself). What learned timing chooses
 * an hour inside.
 */
export function lawWindows(nature: AttemptNature, zones: readonly string[], at: number): ScheduleInZones[] {
  return lawWindowsOf(rulesBinding(nature, at).bound, zones, at).map((window) => window.part)
}

export function decideContactability(input: ContactabilityInput, now: number): Decision {
  const { applicable, bound } = rulesBinding(input, now)
  const profiles = applicable.map(profileTag)
  const zones = input.zones.length > 0 ? input.zones : input.campaignWindow?.zones ?? ['UTC']
  if (input.suppressed) {
    return { decision: 'blocked', notBefore: null, reasons: [{ code: 'number_suppressed', rule: null, source: "the organization's suppression list" }], profiles }
  }

  // Blocked: consent required and not on file, or a registry in the way.
  const relied: DecisionReason[] = []
  const blocking: DecisionReason[] = []
  const sort = (reason: DecisionReason) => (reason.code === 'consent_on_file' ? relied : blocking).push(reason)
  if (input.requiredConsent.length > 0) {
    sort(consentReason(input, input.requiredConsent, now, { rule: 'campaign.consent', source: `the campaign requires ${input.requiredConsent.join(' or ')} consent for ${input.purpose} on ${input.channel}` }))
  }
  for (const entry of bound) {
    if (entry.rule.kind !== 'consent') continue
    const reason = consentReason(input, entry.rule.consent_kinds, now, { rule: entry.rule.id, source: entry.rule.source.citation, profile: profileTag(entry.profile) })
    sort(reason)
  }
  for (const registry of input.registries) {
    if (!registry.purposes.includes(input.purpose)) continue
    const override = registry.overriddenBy.length === 0 ? undefined : findConsent(input, registry.overriddenBy, now)
    const base = { rule: null, source: registry.name, registry_id: registry.id }
    if (override !== undefined && 'found' in override) relied.push({ code: 'registry_overridden', ...base, consent_id: override.found.id })
    else blocking.push({ code: 'registry_listed', ...base })
  }
  if (blocking.length > 0) return { decision: 'blocked', notBefore: null, reasons: blocking, profiles }

  // Deferred: the first instant inside the campaign's window and every law's hours and holidays, and under every cap.
  const windows: LawWindow[] = []
  if (input.campaignWindow !== undefined) {
    windows.push({ part: input.campaignWindow, reason: () => ({ code: 'outside_campaign_window', rule: 'campaign.schedule', source: "the campaign's schedule" }) })
  }
  windows.push(...lawWindowsOf(bound, zones, now))
  const caps = bound.flatMap((entry) => (entry.rule.kind === 'cap' ? [{ entry, rule: entry.rule, times: capTimes(input, entry.rule) }] : []))
  const until = input.until ?? now + 2 * YEAR_MS
  let at: number | null = now
  for (let turn = 0; at !== null; turn++) {
    if (turn >= MAX_TURNS) {
      at = null
      break
    }
    const opening = nextCommonOpening(windows.map((w) => w.part), at, until)
    if (opening === null) {
      at = null
      break
    }
    const allowed = Math.max(opening, ...caps.map((cap) => capAllows(cap.times, cap.rule.max_attempts, cap.rule.per_hours * HOUR_MS, opening)))
    if (allowed === opening) {
      at = opening
      break
    }
    at = allowed < until ? allowed : null
  }
  if (at === now) {
    const applied = [...windows.flatMap((w) => (w.applied === undefined ? [] : [w.applied])), ...caps.map((cap) => lawReason('under_legal_cap', cap.entry))]
    return { decision: 'allowed', notBefore: null, reasons: [...relied, ...applied], profiles }
  }
  // What holds it now: each window closed at `now`, each cap at its limit.
  const holding = [
    ...windows.filter((w) => nextOpening(w.part.schedule, w.part.zones, now, now + 1) === null).map((w) => w.reason(now)),
    ...caps.filter((cap) => capAllows(cap.times, cap.rule.max_attempts, cap.rule.per_hours * HOUR_MS, now) > now).map((cap) => lawReason('legal_cap_reached', cap.entry)),
  ]
  return { decision: 'deferred', notBefore: at, reasons: holding, profiles }
}

/** A decision as it is kept (with the interaction or the task), shown on the task's story and carried by task.completed. */
export interface RecordedDecision {
  decision: DecisionKind
  /** When it was made. */
  at: string
  not_before: string | null
  reasons: DecisionReason[]
  profiles: string[]
}

export function recordedDecision(decision: Decision, at: number): RecordedDecision {
  return {
    decision: decision.decision,
    at: new Date(at).toISOString(),
    not_before: decision.notBefore === null ? null : new Date(decision.notBefore).toISOString(),
    reasons: decision.reasons,
    profiles: decision.profiles,
  }
}
