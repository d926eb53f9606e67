/**
 * Holidays: the local dates on which a calling law's `forbidden_dates` rules
 * fall in a given year. The rules recur (callingLaw.ts's HolidayRule), the
 * dates do not: a moved holiday (the nth Thursday, Easter Monday) is worked
 * out for each year the dispatcher may defer an attempt into.
 */
import { WEEKDAYS } from './campaignSettings.ts'
import type { HolidayRule } from './callingLaw.ts'

/** A holiday on one local date, "YYYY-MM-DD". */
export interface HolidayDate {
  date: string
  name: string
}

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * The date of each rule in `year`, sorted by date (rules of one date in their
 * order: the sort is stable). A rule that has no date that year yields none:
 * the 5th Monday of a month with four, a 29 February outside leap years.
 */
export function holidayDates(rules: readonly HolidayRule[], year: number): HolidayDate[] {
  const found: HolidayDate[] = []
  for (const rule of rules) {
    const day = dayOf(rule, year)
    if (day !== undefined) found.push({ date: isoDate(day), name: rule.name })
  }
  return found.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0))
}

/** The dates of every year from `fromYear` to `toYear` inclusive, sorted: a deferral may run into the next year or the one after. */
export function holidayDatesBetween(rules: readonly HolidayRule[], fromYear: number, toYear: number): HolidayDate[] {
  const found: HolidayDate[] = []
  // Each year's dates are sorted and lie within it, so the years in order keep the whole sorted.
  for (let year = fromYear; year <= toYear; year++) found.push(...holidayDates(rules, year))
  return found
}

/** The rule's date in `year` as a UTC midnight (ms since the epoch), or undefined where it has none. */
function dayOf(rule: HolidayRule, year: number): number | undefined {
  if ('easter_offset' in rule) return easterSunday(year) + rule.easter_offset * DAY_MS
  if ('nth' in rule) return nthWeekday(year, rule.month, WEEKDAYS.indexOf(rule.weekday), rule.nth)
  const day = Date.UTC(year, rule.month - 1, rule.day)
  // Date.UTC rolls 29 February over into March: such a date does not exist that year.
  return new Date(day).getUTCDate() === rule.day ? day : undefined
}

/**
 * The nth `weekday` (0 = Monday) of a month: counted from its first day for
 * nth ≥ 1, from its last for nth ≤ -1 (-1, the last one).
 */
function nthWeekday(year: number, month: number, weekday: number, nth: number): number | undefined {
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  let dayOfMonth: number
  if (nth > 0) {
    const first = mondayBased(Date.UTC(year, month - 1, 1))
    dayOfMonth = 1 + ((weekday - first + 7) % 7) + 7 * (nth - 1)
  } else {
    const last = mondayBased(Date.UTC(year, month - 1, daysInMonth))
    dayOfMonth = daysInMonth - ((last - weekday + 7) % 7) - 7 * (-nth - 1)
  }
  return dayOfMonth >= 1 && dayOfMonth <= daysInMonth ? Date.UTC(year, month - 1, dayOfMonth) : undefined
}

/** The weekday of a UTC midnight, 0 = Monday as in WEEKDAYS (getUTCDay counts from Sunday). */
function mondayBased(day: number): number {
  return (new Date(day).getUTCDay() + 6) % 7
}

/** Western Easter Sunday of a Gregorian year, by the anonymous Gregorian computus (Meeus/Jones/Butcher). */
function easterSunday(year: number): number {
  const a = year % 19
  const b = Math.floor(year / 100)
  const c = year % 100
  const d = Math.floor(b / 4)
  const e = b % 4
  const f = Math.floor((b + 8) / 25)
  const g = Math.floor((b - f + 1) / 3)
  const h = (19 * a + b - d - g + 15) % 30
  const i = Math.floor(c / 4)
  const k = c % 4
  const l = (32 + 2 * e + 2 * i - h - k) % 7
  const m = Math.floor((a + 11 * h + 22 * l) / 451)
  const n = h + l - 7 * m + 114
  return Date.UTC(year, Math.floor(n / 31) - 1, (n % 31) + 1)
}

function isoDate(day: number): string {
  return new Date(day).toISOString().slice(0, 10)
}
