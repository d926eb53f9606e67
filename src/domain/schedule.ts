/**
 * When a campaign's schedule lets a conversation start for a contact: local
 * wall-clock windows on local weekdays, minus local blackout dates, between
 * two instants. Pure functions of their arguments (and of the time-zone rules
 * the runtime's Intl knows); the dispatcher asks once per task, so the
 * zone offsets they need are remembered rather than asked of Intl each time.
 */
import { IANAZone } from 'luxon'
import { type Schedule, type ScheduleWindow, WEEKDAYS } from './campaignSettings.ts'
import { isTimeZone } from './timezones.ts'

const MINUTE_MS = 60_000
const HOUR_MS = 60 * MINUTE_MS
const DAY_MS = 24 * HOUR_MS

/** How far ahead a schedule is searched before it is taken never to open again. */
const HORIZON_DAYS = 2 * 366

/** Local wall-clock span within a day, in ms from local midnight: start inclusive, end exclusive. */
interface Span {
  start: number
  end: number
}

/** A schedule compiled for searching. */
interface Plan {
  /** A campaign-wide zone, or undefined to use the contact's. */
  zone: string | undefined
  /** Merged spans for each weekday, Monday first. */
  spansByWeekday: Span[][]
  /** False when no weekday has a window, so there is nothing to search for. */
  opensAtAll: boolean
  /** Blacked-out local dates, as days since 1970-01-01. */
  blackoutDays: Set<number>
  startsAt: number
  endsAt: number
}

const TIME_OF_DAY = /^(\d{2}):(\d{2})$/

/** Minutes since midnight of "HH:MM", from 00:00 to 23:59, or to 24:00 where `endOfDay` is allowed. */
function minutesOfDay(text: string, endOfDay: boolean): number | undefined {
  const match = TIME_OF_DAY.exec(text)
  if (match === null) return undefined
  const hours = Number(match[1])
  const minutes = Number(match[2])
  if (minutes > 59) return undefined
  if (hours < 24) return hours * 60 + minutes
  return endOfDay && hours === 24 && minutes === 0 ? 24 * 60 : undefined
}

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Days since 1970-01-01 of a real "YYYY-MM-DD" date. */
function dayNumber(text: string): number | undefined {
  const match = CALENDAR_DATE.exec(text)
  if (match === null) return undefined
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(0)
  // setUTCFullYear, unlike Date.UTC, does not read years 0–99 as 1900–1999.
  date.setUTCFullYear(year, month - 1, day)
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined
  return date.getTime() / DAY_MS
}

/** An offset or Z is required: without one the instant would depend on the server's zone. */
const ISO_INSTANT = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/

function instant(text: string): number | undefined {
  const match = ISO_INSTANT.exec(text)
  if (match === null) return undefined
  const [, date = '', hours, minutes, seconds = '00', offsetHours = '00', offsetMinutes = '00'] = match
  const inRange =
    Number(hours) <= 23 &&
    Number(minutes) <= 59 &&
    Number(seconds) <= 59 &&
    Number(offsetHours) <= 23 &&
    Number(offsetMinutes) <= 59
  // Date.parse would roll 2026-02-30 over to March and read 24:00 as the next day.
  return inRange && dayNumber(date) !== undefined ? Date.parse(text) : undefined
}

const WEEKDAY_INDEX = new Map<string, number>(WEEKDAYS.map((day, index) => [day, index]))

function compile(schedule: Schedule): Plan {
  const spansByWeekday: Span[][] = WEEKDAYS.map(() => [])
  for (const window of schedule.windows) {
    const start = minutesOfDay(window.start, false)
    const end = minutesOfDay(window.end, true)
    if (start === undefined || end === undefined || start >= end) {
      throw new RangeError(`schedule window ${window.start}–${window.end} is not a span of a day`)
    }
    for (const day of window.days) {
      const index = WEEKDAY_INDEX.get(day)
      if (index === undefined) throw new RangeError(`schedule window has an unknown day "${day}"`)
      spansByWeekday[index]?.push({ start: start * MINUTE_MS, end: end * MINUTE_MS })
    }
  }
  const blackoutDays = new Set<number>()
  for (const date of schedule.blackout_dates ?? []) {
    const day = dayNumber(date)
    if (day === undefined) throw new RangeError(`schedule blackout date "${date}" is not a calendar date`)
    blackoutDays.add(day)
  }
  const instantOf = (text: string | undefined, name: string, absent: number) => {
    if (text === undefined) return absent
    const value = instant(text)
    if (value === undefined) throw new RangeError(`schedule ${name} "${text}" is not an ISO instant with an offset`)
    return value
  }
  return {
    zone: schedule.timezone === 'contact' ? undefined : schedule.timezone,
    spansByWeekday: spansByWeekday.map(merge),
    opensAtAll: spansByWeekday.some((spans) => spans.length > 0),
    blackoutDays,
    startsAt: instantOf(schedule.starts_at, 'starts_at', -Infinity),
    endsAt: instantOf(schedule.ends_at, 'ends_at', Infinity),
  }
}

/** Overlapping or abutting spans as one, in order, so each day is scanned once. */
function merge(spans: Span[]): Span[] {
  const merged: Span[] = []
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    const last = merged.at(-1)
    if (last !== undefined && span.start <= last.end) last.end = Math.max(last.end, span.end)
    else merged.push({ ...span })
  }
  return merged
}

/**
 * Compiling costs more than searching, and tasks bring their campaign's
 * schedule as a fresh object each time (parsed from its row), so plans are
 * kept by content: a few hundred campaigns' schedules at most. A schedule
 * met again as the same object (a law's hours, one object per rule) is found
 * by the object, without serializing it. A schedule is a value: never
 * changed once made.
 */
const plans = new Map<string, Plan>()
const plansOfObjects = new WeakMap<Schedule, Plan>()
const MAX_PLANS = 1_000

function planOf(schedule: Schedule): Plan {
  const known = plansOfObjects.get(schedule)
  if (known !== undefined) return known
  const key = JSON.stringify(schedule)
  let plan = plans.get(key)
  if (plan === undefined) {
    plan = compile(schedule)
    if (plans.size >= MAX_PLANS) plans.clear()
    plans.set(key, plan)
  }
  plansOfObjects.set(schedule, plan)
  return plan
}

/**
 * A zone's UTC offset (ms) over one UTC day. Time-zone rules never
 * change a zone's offset twice within a day, so the two ends of the day and,
 * where they differ, the instant of the change describe the whole day.
 */
interface DayOffsets {
  before: number
  after: number
  changesAt: number
}

/** Intl's answer costs about 5 µs; a dispatcher meets the same few zones and days over and over. */
class ZoneClock {
  private readonly zone: IANAZone
  private readonly days = new Map<number, DayOffsets>()
  private static readonly MAX_DAYS = 4_096

  constructor(name: string) {
    this.zone = IANAZone.create(name)
  }

  offsetMs(at: number): number {
    const offsets = this.offsetsOn(Math.floor(at / DAY_MS))
    return at < offsets.changesAt ? offsets.before : offsets.after
  }

  private offsetsOn(day: number): DayOffsets {
    let offsets = this.days.get(day)
    if (offsets === undefined) {
      offsets = this.askIntl(day)
      if (this.days.size >= ZoneClock.MAX_DAYS) this.days.clear()
      this.days.set(day, offsets)
    }
    return offsets
  }

  private askIntl(day: number): DayOffsets {
    const start = day * DAY_MS
    const before = this.zone.offset(start) * MINUTE_MS
    const after = this.zone.offset(start + DAY_MS) * MINUTE_MS
    if (before === after) return { before, after, changesAt: Infinity }
    let unchanged = start
    let changed = start + DAY_MS
    while (changed - unchanged > 1) {
      const middle = Math.floor((unchanged + changed) / 2)
      if (this.zone.offset(middle) * MINUTE_MS === before) unchanged = middle
      else changed = middle
    }
    return { before, after, changesAt: changed }
  }

  /** Local wall-clock time (as ms since a local 1970-01-01) at an instant. */
  local(at: number): number {
    return at + this.offsetMs(at)
  }

  /**
   * The instant a local wall-clock time happens. A time skipped by a change
   * (02:30 when clocks jump from 02:00 to 03:00) happens when the change
   * does; a time lived twice (01:30 when clocks fall back) happens the first
   * time.
   */
  instantOf(local: number): number {
    // Offsets lie within -12 h…+14 h: the offsets 14 h either side bracket the one that applies.
    const offsetBefore = this.offsetMs(local - 14 * HOUR_MS)
    const offsetAfter = this.offsetMs(local + 14 * HOUR_MS)
    const byOffsetBefore = local - offsetBefore
    if (offsetBefore === offsetAfter) return byOffsetBefore
    const byOffsetAfter = local - offsetAfter
    const beforeFits = this.offsetMs(byOffsetBefore) === offsetBefore
    const afterFits = this.offsetMs(byOffsetAfter) === offsetAfter
    if (beforeFits && afterFits) return Math.min(byOffsetBefore, byOffsetAfter)
    if (beforeFits) return byOffsetBefore
    if (afterFits) return byOffsetAfter
    // Skipped: the clocks jumped at an instant in (byOffsetAfter, byOffsetBefore].
    const change = this.offsetsOn(Math.floor(byOffsetBefore / DAY_MS)).changesAt
    return change > byOffsetAfter && change <= byOffsetBefore
      ? change
      : this.offsetsOn(Math.floor(byOffsetAfter / DAY_MS)).changesAt
  }
}

const clocks = new Map<string, ZoneClock>()
/** Above the ~600 IANA names, in case callers spell zones in many cases. */
const MAX_CLOCKS = 1_000

function clockOf(zone: string): ZoneClock {
  let clock = clocks.get(zone)
  if (clock === undefined) {
    if (!isTimeZone(zone)) throw new RangeError(`"${zone}" is not an IANA time zone`)
    clock = new ZoneClock(zone)
    if (clocks.size >= MAX_CLOCKS) clocks.clear()
    clocks.set(zone, clock)
  }
  return clock
}

/** 1970-01-01 was a Thursday, index 3 from Monday. */
function weekdayIndex(day: number): number {
  return (((day + 3) % 7) + 7) % 7
}

/**
 * The zones a task's schedule is read in: the campaign's own zone, or else
 * the contact's candidate zones (the campaign's fallback when there are none:
 * a task accepted while the campaign kept a zone of its own).
 */
export function scheduleZones(schedule: Schedule, candidateZones: readonly string[]): readonly string[] {
  if (schedule.timezone !== 'contact') return [schedule.timezone]
  if (candidateZones.length > 0) return candidateZones
  return schedule.fallback_timezone === undefined ? [] : [schedule.fallback_timezone]
}

/**
 * The earliest instant (ms since the epoch) at or after `from`, and before
 * `until` (by default two years on), at which the schedule is open in every
 * one of `zones` at once, or null if there is none (past `ends_at`, too
 * late, or never: zones whose windows never meet). `zones` are the contact's
 * candidate zones, used when the schedule's timezone is "contact"; a
 * campaign-wide zone overrides them. Bounding the search by a task's expiry
 * bounds its cost: zones that never meet are searched opening by opening.
 *
 * In each zone, each window opens on each of its local days from the instant
 * its local start happens to the instant its local end happens (24:00 is the
 * next midnight), so a window lasts as long as the wall clock says, even
 * across a DST change. A start skipped by a spring-forward change opens when
 * the clocks jump; a start or end lived twice in a fall-back change counts
 * the first time. Windows that overlap or abut act as one.
 *
 * Throws a RangeError for no zones, or for a zone or schedule that
 * `isTimeZone` or `scheduleProblems` would refuse.
 */
export function nextOpening(schedule: Schedule, zones: readonly string[], from: number, until = from + HORIZON_DAYS * DAY_MS): number | null {
  const { plan, clocks } = searchOf(schedule, zones, from)
  return commonOpening(plan, clocks, Math.max(from, plan.startsAt), until)
}

/** A schedule and the zones it is read in: one of the windows an attempt must be inside at once. */
export interface ScheduleInZones {
  schedule: Schedule
  zones: readonly string[]
}

/**
 * The earliest instant at or after `from`, and before `until`, at which
 * every one of `parts` is open (each in every one of its zones), or null if
 * there is none: a campaign's window intersected with the calling hours of
 * each law that binds the attempt. Each part's next opening from a candidate
 * moves it to a window's start; the search ends when none moves it.
 */
export function nextCommonOpening(parts: readonly ScheduleInZones[], from: number, until = from + HORIZON_DAYS * DAY_MS): number | null {
  let candidate = from
  while (candidate < until) {
    let latest = candidate
    for (const part of parts) {
      const opening = nextOpening(part.schedule, part.zones, latest, until)
      if (opening === null) return null
      latest = opening
    }
    if (latest === candidate) return candidate
    candidate = latest
  }
  return null
}

/** The compiled schedule and the clocks it is read on: the campaign's zone, or else the contact's. */
function searchOf(schedule: Schedule, zones: readonly string[], from: number): { plan: Plan; clocks: ZoneClock[] } {
  if (!Number.isFinite(from)) throw new RangeError(`from must be a finite instant, got ${from}`)
  const plan = planOf(schedule)
  const clocks = plan.zone === undefined ? zones.map(clockOf) : [clockOf(plan.zone)]
  if (clocks.length === 0) throw new RangeError('a schedule is read in at least one zone')
  return { plan, clocks }
}

/**
 * The earliest instant in [earliest, until) open on every clock: each
 * clock's next opening at or after a candidate instant; when one opens
 * later, the others are asked again from there. Every round moves the
 * candidate to a window's start, so the search ends, at the latest at `until`.
 */
function commonOpening(plan: Plan, clocks: readonly ZoneClock[], earliest: number, until: number): number | null {
  let candidate = earliest
  while (candidate < until) {
    let latest = candidate
    for (const clock of clocks) {
      const opening = openingIn(plan, clock, candidate)
      if (opening === null) return null
      latest = Math.max(latest, opening)
    }
    if (latest === candidate) return candidate
    candidate = latest
  }
  return null
}

/** A stretch of time in which a schedule is open in every zone at once. */
export interface OpenPeriod {
  opensAt: number
  /** Null when it is still open at the end of the search (two years on). */
  closesAt: number | null
}

/**
 * The next `count` periods, at or after `from`, in which the schedule is open
 * in every one of `zones` at once (a period under way at `from` counts from
 * `from`): what a campaign's schedule means for one contact, for an operator
 * to read before saving it. Windows that abut across midnight make one
 * period. Throws as {@link nextOpening} does.
 */
export function openPeriods(schedule: Schedule, zones: readonly string[], from: number, count: number): OpenPeriod[] {
  const { plan, clocks } = searchOf(schedule, zones, from)
  const until = from + HORIZON_DAYS * DAY_MS
  const periods: OpenPeriod[] = []
  let earliest = Math.max(from, plan.startsAt)
  while (periods.length < count) {
    const opensAt = commonOpening(plan, clocks, earliest, until)
    if (opensAt === null) break
    const closesAt = Math.min(plan.endsAt, ...clocks.map((clock) => closingIn(plan, clock, opensAt, until)))
    periods.push({ opensAt, closesAt: closesAt >= until ? null : closesAt })
    if (closesAt >= until) break
    earliest = closesAt
  }
  return periods
}

/**
 * When the plan, open on one clock at `at`, closes there: the end of the
 * window `at` is in, carried over the windows that open as it closes (a
 * night across midnight), or `until` if it is still open then.
 */
function closingIn(plan: Plan, clock: ZoneClock, at: number, until: number): number {
  let end = at
  for (;;) {
    const next = endOfWindowAt(plan, clock, end)
    if (next === undefined) return end
    if (next >= until) return until
    end = next
  }
}

/** The close of the window open on one clock at `at`, or undefined if none is. */
function endOfWindowAt(plan: Plan, clock: ZoneClock, at: number): number | undefined {
  const today = Math.floor(clock.local(at) / DAY_MS)
  for (let day = today - 1; day <= today + 1; day++) {
    if (plan.blackoutDays.has(day)) continue
    for (const span of plan.spansByWeekday[weekdayIndex(day)] ?? []) {
      const opensAt = clock.instantOf(day * DAY_MS + span.start)
      const closesAt = clock.instantOf(day * DAY_MS + span.end)
      if (opensAt <= at && at < closesAt) return closesAt
    }
  }
  return undefined
}

/** The earliest instant at or after `earliest` at which the plan is open on one clock. */
function openingIn(plan: Plan, clock: ZoneClock, earliest: number): number | null {
  if (!plan.opensAtAll || earliest >= plan.endsAt) return null
  // A window of the previous local date may still be open; so may, after a
  // fall-back change at midnight, one of the next date.
  const firstDay = Math.floor(clock.local(earliest) / DAY_MS) - 1
  for (let day = firstDay; day <= firstDay + HORIZON_DAYS; day++) {
    if (plan.blackoutDays.has(day)) continue
    for (const span of plan.spansByWeekday[weekdayIndex(day)] ?? []) {
      const opensAt = clock.instantOf(day * DAY_MS + span.start)
      if (opensAt >= plan.endsAt) return null
      const closesAt = clock.instantOf(day * DAY_MS + span.end)
      const candidate = Math.max(opensAt, earliest)
      if (candidate < closesAt) return candidate
    }
  }
  return null
}

/** How far ahead a trigger's candidate zones must share an open window. */
export const COMMON_WINDOW_DAYS = 14

/**
 * Whether the schedule's windows are open in all of `zones` at once at some
 * instant within COMMON_WINDOW_DAYS of `from`: what a contact with several
 * candidate zones needs to be reached at all. Only the weekly windows count:
 * blackout dates and the campaign's start and end are the campaign's own
 * business, and would refuse a contact with one zone as much. Remembered per
 * schedule, zones and hour.
 */
export function windowsMeet(schedule: Schedule, zones: readonly string[], from: number): boolean {
  if (schedule.timezone !== 'contact' || zones.length < 2) return true
  const key = `${JSON.stringify(schedule.windows)}|${zones.join('&')}|${Math.floor(from / HOUR_MS)}`
  let meet = meetings.get(key)
  if (meet === undefined) {
    const weekly = planOf({ timezone: 'contact', windows: schedule.windows })
    meet = commonOpening(weekly, zones.map(clockOf), from, from + COMMON_WINDOW_DAYS * DAY_MS) !== null
    if (meetings.size >= MAX_MEETINGS) meetings.clear()
    meetings.set(key, meet)
  }
  return meet
}

const meetings = new Map<string, boolean>()
const MAX_MEETINGS = 1_000

export interface ScheduleProblem {
  /** Where, from the object checked: ['windows', 0, 'end'] from a schedule, ['end'] from a window. */
  path: (string | number)[]
  message: string
}

/**
 * The rule of each field of a schedule on its own: why a value is refused,
 * or undefined. The admin API's schema applies them field by field, and the
 * relations below model by model, so that one 422 lists every problem of a
 * schedule with the rest of the body's.
 */
export const SCHEDULE_FIELD_RULES = {
  timezone: (zone: string) =>
    zone === 'contact' || isTimeZone(zone) ? undefined : 'timezone must be "contact" or an IANA time zone such as Europe/Berlin',
  fallback_timezone: (zone: string) => (isTimeZone(zone) ? undefined : 'fallback_timezone must be an IANA time zone such as Europe/Berlin'),
  day: (day: string) => (WEEKDAY_INDEX.has(day) ? undefined : `day must be one of ${WEEKDAYS.join(', ')}`),
  start: (time: string) => (minutesOfDay(time, false) === undefined ? 'start must be a time from 00:00 to 23:59' : undefined),
  end: (time: string) => (minutesOfDay(time, true) === undefined ? 'end must be a time from 00:00 to 24:00' : undefined),
  blackout_date: (date: string) => (dayNumber(date) === undefined ? 'blackout date must be a calendar date (YYYY-MM-DD)' : undefined),
  starts_at: (text: string) => (instant(text) === undefined ? 'starts_at must be an ISO 8601 instant with an offset or Z' : undefined),
  ends_at: (text: string) => (instant(text) === undefined ? 'ends_at must be an ISO 8601 instant with an offset or Z' : undefined),
} as const

/**
 * What relates a window's fields, or a field to itself as a whole; paths from
 * the window. A field that is missing (refused on its own) is not related.
 */
export function windowProblems(window: Partial<ScheduleWindow>): ScheduleProblem[] {
  const problems: ScheduleProblem[] = []
  if (window.days?.length === 0) problems.push({ path: ['days'], message: 'days must name at least one day' })
  const start = window.start === undefined ? undefined : minutesOfDay(window.start, false)
  const end = window.end === undefined ? undefined : minutesOfDay(window.end, true)
  if (start !== undefined && end !== undefined && end <= start) problems.push({ path: ['end'], message: 'end must be after start' })
  return problems
}

/** What relates a schedule's own fields (its windows' relations apart); paths from the schedule. */
export function scheduleRelationProblems(schedule: Partial<Schedule>): ScheduleProblem[] {
  const problems: ScheduleProblem[] = []
  if (schedule.windows?.length === 0) problems.push({ path: ['windows'], message: 'windows must have at least one window' })
  const startsAt = schedule.starts_at === undefined ? undefined : instant(schedule.starts_at)
  const endsAt = schedule.ends_at === undefined ? undefined : instant(schedule.ends_at)
  if (startsAt !== undefined && endsAt !== undefined && endsAt <= startsAt) {
    problems.push({ path: ['ends_at'], message: 'ends_at must be after starts_at' })
  }
  return problems
}

/**
 * Every problem of a schedule by the rules above, each field's and each
 * relation's: what a campaign's schedule must pass however the campaign is made.
 */
export function scheduleProblems(schedule: Schedule): ScheduleProblem[] {
  const problems: ScheduleProblem[] = []
  const check = (path: (string | number)[], rule: (value: string) => string | undefined, value: string | undefined) => {
    const message = value === undefined ? undefined : rule(value)
    if (message !== undefined) problems.push({ path, message })
  }
  const rules = SCHEDULE_FIELD_RULES
  check(['timezone'], rules.timezone, schedule.timezone)
  check(['fallback_timezone'], rules.fallback_timezone, schedule.fallback_timezone)
  schedule.windows.forEach((window, index) => {
    window.days.forEach((day, dayIndex) => check(['windows', index, 'days', dayIndex], rules.day, day))
    check(['windows', index, 'start'], rules.start, window.start)
    check(['windows', index, 'end'], rules.end, window.end)
    for (const { path, message } of windowProblems(window)) problems.push({ path: ['windows', index, ...path], message })
  })
  schedule.blackout_dates?.forEach((date, index) => check(['blackout_dates', index], rules.blackout_date, date))
  check(['starts_at'], rules.starts_at, schedule.starts_at)
  check(['ends_at'], rules.ends_at, schedule.ends_at)
  problems.push(...scheduleRelationProblems(schedule))
  return problems
}
