/**
 * Learned retry timing: the next attempt goes to the local hour where the
 * campaign has reached people most often, among the hours its schedule
 * leaves open, with room for hours it knows little
 * about. Thompson sampling over the 168 hours of the week: each hour's reach
 * rate is drawn from its Beta posterior (the campaign's attempts in that
 * hour, on a prior from the organization's), and the open hour with the
 * highest draw wins. An hour rarely tried draws widely, so it keeps being
 * tried until its rate is known; one known to be poor seldom wins. Pure:
 * the randomness is a generator seeded by the task and attempt, so that a
 * decision made again (a replay, a test) comes out the same.
 */
import { DateTime } from 'luxon'
import type { DecisionReason } from './contactability.ts'
import { nextCommonOpening, type ScheduleInZones } from './schedule.ts'

export const HOURS_OF_WEEK = 7 * 24
const HOUR_MS = 3_600_000

/**
 * How far past the retry delay the next attempt may go: three days hold
 * every hour of the day three times, on three weekdays. A week would hold
 * every hour of the week, and could keep a person waiting six days for a
 * rate a little higher than tomorrow's.
 */
export const LEARNED_HORIZON_H = 72

/**
 * How much the organization's history counts as a campaign's prior, in
 * attempts: enough to start a new campaign where the organization's people
 * answer, little enough that 20 of the campaign's own attempts in an hour
 * outweigh it.
 */
export const PRIOR_ATTEMPTS = 10

/**
 * What a day's wait costs: an hour a day later must draw a rate this much
 * higher to win (0.85: 18 % higher). Without it the same hour on each of the
 * three days drew alike, and a person reached at 18:00 was reached on the
 * second or third day as often as on the first (the bench's population of
 * 1,000: a mean time to reach of 39.5 hours without it, 12.2 with it;
 * reached within 3 attempts 50.0 % and 48.0 %).
 */
export const WAIT_DISCOUNT_PER_DAY = 0.85
const DAY_MS = 24 * HOUR_MS

/** Attempts made in one local hour of the week, and how many of them reached the person. */
export interface HourTally {
  attempts: number
  reached: number
}

/** The local hour of the week of an instant in a zone: Monday 00:00-00:59 is 0, Sunday 23:00-23:59 is 167. */
export function hourOfWeek(at: number, zone: string): number {
  const local = DateTime.fromMillis(at, { zone })
  return (local.weekday - 1) * 24 + local.hour
}

/**
 * The instants an attempt may start at, one per local hour: the first open
 * instant of each local hour (in `zone`: the zone the schedule is read in
 * first, scheduleZones(...)[0], which the reach counts are keyed by) from
 * `earliest` until `until`, inside every one of `windows` at once (the
 * campaign's schedule, and the hours and holidays of each law that binds
 * the attempt, each in its zones).
 */
export function openHours(windows: readonly ScheduleInZones[], zone: string, earliest: number, until: number): number[] {
  const hours: number[] = []
  let from = earliest
  while (from < until) {
    const open = nextCommonOpening(windows, from, until)
    if (open === null) break
    hours.push(open)
    // The start of the next local hour, across a change of the clocks too.
    from = DateTime.fromMillis(open, { zone }).startOf('hour').plus({ hours: 1 }).toMillis()
  }
  return hours
}

export interface LearnedChoice {
  at: number
  hourOfWeek: number
  /** The campaign's record in that hour (before the prior). */
  tally: HourTally
  /** The reach rate drawn for it, which won. */
  drawn: number
}

export interface LearnedTimingInput {
  /** Open instants to choose among (openHours), oldest first. */
  candidates: readonly number[]
  zone: string
  /** The campaign's attempts by local hour of the week (HOURS_OF_WEEK entries). */
  campaign: readonly HourTally[]
  /** The organization's, the prior. */
  organization: readonly HourTally[]
  /** Local hours of the day (0-23) already tried for this person: skipped while another is open. */
  triedHoursOfDay: ReadonlySet<number>
  /** Uniform in [0, 1). */
  random: () => number
}

/** The candidate whose hour draws the highest reach rate; null when there is none. Ties go to the earlier. */
export function chooseLearnedHour(input: LearnedTimingInput): LearnedChoice | null {
  const untried = input.candidates.filter((at) => !input.triedHoursOfDay.has(DateTime.fromMillis(at, { zone: input.zone }).hour))
  const candidates = untried.length > 0 ? untried : input.candidates
  let best: (LearnedChoice & { score: number }) | null = null
  const first = candidates[0]
  for (const at of candidates) {
    const hour = hourOfWeek(at, input.zone)
    const tally = input.campaign[hour] ?? { attempts: 0, reached: 0 }
    const [alpha, beta] = posterior(tally, input.organization[hour] ?? { attempts: 0, reached: 0 })
    const drawn = drawBeta(alpha, beta, input.random)
    const score = drawn * WAIT_DISCOUNT_PER_DAY ** ((at - first!) / DAY_MS)
    if (best === null || score > best.score) best = { at, hourOfWeek: hour, tally, drawn, score }
  }
  if (best === null) return null
  const { score: _score, ...choice } = best
  return choice
}

/**
 * Beta(alpha, beta) of an hour: the campaign's reached and missed attempts on
 * a prior of the organization's rate in that hour (Laplace's rule: 1 of 2
 * where it has none), weighted as 2 attempts more than the organization's
 * there, up to PRIOR_ATTEMPTS + 2.
 */
export function posterior(campaign: HourTally, organization: HourTally): [alpha: number, beta: number] {
  const rate = (organization.reached + 1) / (organization.attempts + 2)
  const weight = Math.min(organization.attempts, PRIOR_ATTEMPTS) + 2
  return [rate * weight + campaign.reached, (1 - rate) * weight + campaign.attempts - campaign.reached]
}

/** A draw of Beta(alpha, beta), as X / (X + Y) of two Gamma draws. */
export function drawBeta(alpha: number, beta: number, random: () => number): number {
  const x = drawGamma(alpha, random)
  const y = drawGamma(beta, random)
  return x / (x + y)
}

/**
 * A draw of Gamma(shape, 1) by Marsaglia and Tsang's method (ACM TOMS 26(3),
 * 2000), shape below 1 boosted by U^(1/shape). Written here rather than taken
 * from a library: it needs this generator, seeded, and is a dozen lines.
 */
function drawGamma(shape: number, random: () => number): number {
  if (shape < 1) return drawGamma(shape + 1, random) * random() ** (1 / shape)
  const d = shape - 1 / 3
  const c = 1 / Math.sqrt(9 * d)
  for (;;) {
    let x: number
    let v: number
    do {
      x = drawNormal(random)
      v = 1 + c * x
    } while (v <= 0)
    v = v * v * v
    const u = random()
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v
  }
}

/** A standard normal draw (Box-Muller). */
function drawNormal(random: () => number): number {
  const u = 1 - random()
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random())
}

/**
 * A generator of uniform draws in [0, 1) from a text (the task's id and the
 * attempt's number): sfc32 on a seed from the text's FNV-1a hashes. The same
 * text gives the same draws on every process and run.
 */
export function seededRandom(seed: string): () => number {
  const words = [0x811c9dc5, 0x01000193, 0x9e3779b9, 0x85ebca6b].map((basis) => {
    let hash = basis >>> 0
    for (let i = 0; i < seed.length; i++) hash = Math.imul(hash ^ seed.charCodeAt(i), 0x01000193) >>> 0
    return hash
  })
  let [a, b, c, d] = words as [number, number, number, number]
  const next = () => {
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
    return (t >>> 0) / 4_294_967_296
  }
  // The first draws of a fresh sfc32 follow its seed closely: they are passed over.
  for (let i = 0; i < 12; i++) next()
  return next
}

/** When the next attempt goes under learned timing: null when the windows open no hour before `until`. */
export function learnedAttemptTime(
  input: Omit<LearnedTimingInput, 'candidates' | 'random'> & { windows: readonly ScheduleInZones[]; earliest: number; until: number; seed: string },
): LearnedChoice | null {
  const until = Math.min(input.until, input.earliest + LEARNED_HORIZON_H * HOUR_MS)
  const candidates = openHours(input.windows, input.zone, input.earliest, until)
  return chooseLearnedHour({ ...input, candidates, random: seededRandom(input.seed) })
}

const WEEKDAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']

/**
 * Why attempt `attempt` goes when it does, as the task's story tells it:
 * "attempt 2 at 18:00 local (Tue): reach rate 41 % over 1,200 attempts in
 * that hour of the week", or, for an hour the campaign has not tried,
 * that it is being explored.
 */
export function learnedReason(choice: LearnedChoice, attempt: number, zone: string): DecisionReason {
  const local = DateTime.fromMillis(choice.at, { zone })
  const when = `attempt ${attempt} at ${local.toFormat('HH:mm')} local (${WEEKDAY_NAMES[local.weekday - 1]})`
  const { attempts, reached } = choice.tally
  const record =
    attempts === 0
      ? 'no attempts yet in that hour of the week: explored'
      : `reach rate ${Math.round((100 * reached) / attempts)} % over ${attempts.toLocaleString('en-US')} attempt${attempts === 1 ? '' : 's'} in that hour of the week`
  return { code: 'learned_hour', rule: 'campaign.attempts.timing', source: `${when}: ${record}` }
}
