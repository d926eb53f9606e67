/**
 * Learned retry timing beside fixed delays, on one simulated population
 * (docs/reach.md): the same people, triggered at the same instants, called by
 * two campaigns that differ only in `attempts.timing`, through the service
 * on an injected clock that runs over simulated weeks in minutes.
 *
 * Each person answers by the hour (the simulator's reach model): seldom
 * during the working day, often in the evening. Both campaigns are open
 * 09:00-21:00 in the person's zone, every day, up to 3 attempts, 2 hours
 * after an unanswered call (the default delay). Triggers come in the working
 * day, so a fixed delay calls again in the same working day; learned timing
 * has to find the evening from what its own calls reach. The two campaigns
 * are of two organizations, so that neither learns from the other's calls.
 * The simulator draws each answer from the number and the local date and
 * hour, so a person called at one hour by both campaigns answers both alike.
 *
 * The figures are read back through GET /api/v2/reach-statistics: people
 * reached by attempt number, and the time from trigger to reach.
 */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.ts'
import { createChannels } from '../src/channels/index.ts'
import { type Database, openDatabase } from '../src/store/database.ts'
import { migrate } from '../src/store/migrate.ts'
import { withPostgresDatabase } from './harness.ts'
import { markdownTable, type Section } from './report.ts'

const OPERATOR = `bench-operator-${randomBytes(16).toString('hex')}`
/** Monday 1 June 2026, 00:00 UTC: the first simulated day. */
const START = Date.parse('2026-06-01T00:00:00Z')
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** The clock moves at least this far at a time: an attempt starts at most this much after it is due. */
const STEP_MS = 60_000

/** The people's answering: 9 % of calls in the working day, 40 % in the evening (17:00-20:59), by local hour 0-23. */
export const ANSWER_RATES = Array.from({ length: 24 }, (_, hour) => (hour >= 17 && hour < 21 ? 0.4 : hour >= 9 ? 0.09 : 0.02))
/** Weekends a little better, all day. */
const WEEKDAY_FACTORS = [1, 1, 1, 1, 1, 1.3, 1.3]

/** Area codes of three zones: New York, Chicago, Los Angeles. */
const AREAS = ['212', '312', '213']

export interface TimingResult {
  timing: 'fixed' | 'learned'
  people: number
  /** Reached at attempt 1, 2, 3. */
  reachedAt: number[]
  reached: number
  attempts: number
  meanTimeToReachS: number | null
}

export interface ReachTimingResult {
  people: number
  days: number
  results: [TimingResult, TimingResult]
  simulatedDays: number
  seconds: number
}

export async function benchReachTiming(people: number, days: number): Promise<ReachTimingResult> {
  return withPostgresDatabase(async (databaseUrl) => {
    const db = await openDatabase({ databaseUrl, dataDir: 'memory://' })
    try {
      await migrate(db)
      return await simulate(db, people, days)
    } finally {
      await db.close()
    }
  })
}

async function simulate(db: Database, people: number, days: number): Promise<ReachTimingResult> {
  let now = START
  const app = await buildApp(
    {
      operatorToken: OPERATOR,
      phoneHashKey: randomBytes(32),
      logLevel: 'warn',
      // Warnings and errors only, where the run's output shows them.
      logStream: process.stderr,
      rateLimit: { perSecond: 100_000, burst: 100_000 },
      metricsQueueReadIntervalMs: 0,
    },
    {
      db,
      now: () => now,
      channels: createChannels({ publicBaseUrl: 'http://service.invalid', twilioApiBaseUrl: 'http://127.0.0.1:9', whatsappApiBaseUrl: 'http://127.0.0.1:9' }, () => undefined),
    },
  )
  try {
    const keys = { fixed: await organization(app, 'fixed'), learned: await organization(app, 'learned') }
    // Person i is triggered on working day i % days (weekends skipped), between 09:00 and 15:00 in New York.
    const triggers = Array.from({ length: people }, (_, i) => {
      const workingDay = i % days
      const day = START + (Math.floor(workingDay / 5) * 7 + (workingDay % 5)) * DAY_MS
      return { at: day + 13 * HOUR_MS + Math.floor(((i * 7_919) % people) * ((6 * HOUR_MS) / people)), phone: `+1${AREAS[i % AREAS.length]}${String(2_000_000 + i).padStart(7, '0')}` }
    }).sort((a, b) => a.at - b.at)
    const started = performance.now()
    let next = 0
    for (;;) {
      while (next < triggers.length && triggers[next]!.at <= now) {
        const { phone } = triggers[next++]!
        for (const [timing, key] of Object.entries(keys)) {
          const response = await app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { authorization: `Bearer ${key}` }, payload: { campaign: timing, contact: { phone } } })
          if (response.statusCode !== 201) throw new Error(`a trigger was answered ${response.statusCode}: ${response.body}`)
        }
      }
      await app.workers!.dispatcher.runOnce()
      const [pending] = await db.query<{ due: Date | null; open: string }>(
        "SELECT min(due_at) FILTER (WHERE status = 'pending') AS due, count(*) FILTER (WHERE status <> 'completed') AS open FROM tasks",
      )
      const due = pending!.due?.getTime() ?? Infinity
      const nextTrigger = triggers[next]?.at ?? Infinity
      if (Number(pending!.open) === 0 && next === triggers.length) break
      now = Math.max(now + STEP_MS, Math.min(due, nextTrigger))
    }
    const seconds = (performance.now() - started) / 1000
    const simulatedDays = (now - START) / DAY_MS
    const to = new Date(now + DAY_MS).toISOString().slice(0, 10)
    const results = (await Promise.all(
      (['fixed', 'learned'] as const).map(async (timing) => {
        const response = await app.inject({ method: 'GET', url: `/api/v2/reach-statistics?from=2026-05-31&to=${to}`, headers: { authorization: `Bearer ${keys[timing]}` } })
        if (response.statusCode !== 200) throw new Error(`the statistics were answered ${response.statusCode}: ${response.body}`)
        const read = JSON.parse(response.body).data
        const reachedAt = [1, 2, 3].map((attempt) => read.by_attempt.find((row: { attempt: number }) => row.attempt === attempt)?.reached ?? 0)
        return { timing, people, reachedAt, reached: read.reached, attempts: read.attempts, meanTimeToReachS: read.time_to_reach.mean_s }
      }),
    )) as [TimingResult, TimingResult]
    return { people, days, results, simulatedDays, seconds }
  } finally {
    await app.close()
  }
}

/** An organization with one campaign of the timing, routed by its name; answers its API key. */
async function organization(app: FastifyInstance, timing: 'fixed' | 'learned'): Promise<string> {
  const admin = { authorization: `Bearer ${OPERATOR}` }
  const post = async (url: string, payload: object) => {
    const response = await app.inject({ method: 'POST', url, headers: admin, payload })
    if (response.statusCode !== 201) throw new Error(`${url} was answered ${response.statusCode}: ${response.body}`)
    return JSON.parse(response.body).data
  }
  const org = await post('/admin/v1/organizations', { name: `Reach ${timing}` })
  await post(`/admin/v1/organizations/${org.id}/campaigns`, {
    routing_key: timing,
    channel: 'voice',
    schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '21:00' }] },
    attempts: { max: 3, timing },
    provider_config: { duration_ms: 0, reach: { answer_rates: ANSWER_RATES, weekday_factors: WEEKDAY_FACTORS } },
  })
  return (await post(`/admin/v1/organizations/${org.id}/api-keys`, { name: 'bench' })).key
}

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`

export function reachTimingSection(result: ReachTimingResult): Section {
  const [fixed, learned] = result.results
  const within3 = (r: TimingResult) => r.reachedAt.reduce((sum, n) => sum + n, 0)
  const gain = within3(fixed) === 0 ? null : within3(learned) / within3(fixed) - 1
  const rows = result.results.map((r) => [
    r.timing,
    r.people.toLocaleString('en'),
    ...r.reachedAt.map((n) => `${n.toLocaleString('en')} (${percent(n, r.people)})`),
    `${within3(r).toLocaleString('en')} (${percent(within3(r), r.people)})`,
    r.attempts.toLocaleString('en'),
    r.meanTimeToReachS === null ? '-' : `${(r.meanTimeToReachS / 3600).toFixed(1)} h`,
  ])
  const body = `
Fixed delays beside learned timing (\`attempts.timing\`, docs/reach.md), on one simulated population, in one run (bench/reachTiming.ts).

Method: ${result.people.toLocaleString('en')} people with US numbers of three zones (New York, Chicago, Los Angeles), each triggered once, on one of ${result.days} working days from Monday 1 June 2026, between 09:00 and 15:00 New York time; the same people at the same instants to two campaigns of two organizations, which differ only in their timing. Both are simulator campaigns open 09:00-21:00 in the person's zone every day, 3 attempts at most, the next 2 hours after an unanswered call (the default delay). Each person answers by the local hour their call starts at (the simulator's \`reach\` model): ${percent(ANSWER_RATES[10]!, 1)} of calls from 09:00 to 16:59, ${percent(ANSWER_RATES[18]!, 1)} from 17:00 to 20:59, ×${WEEKDAY_FACTORS[6]} at weekends; drawn from the number and the local date and hour, so that both campaigns calling a person at one hour meet the same answer. The learned campaign starts knowing nothing: it learns from its own calls as the history sweep counts them. The service runs in the benchmark's process on PostgreSQL, its dispatcher run on a clock that moves on to the next due task or trigger (at least ${STEP_MS / 1000} s at a time): ${result.simulatedDays.toFixed(1)} simulated days took ${result.seconds.toFixed(0)} s. The figures are GET /api/v2/reach-statistics' for each organization.

${markdownTable(['timing', 'people', 'reached at attempt 1', 'at attempt 2', 'at attempt 3', 'within 3 attempts', 'attempts', 'mean time to reach'], rows)}

Learned timing reached ${gain === null ? '-' : `${(100 * gain).toFixed(1)} %`} more people within 3 attempts than fixed delays (the goal: at least 15 %), taking longer to do it: it waits for the evening where a fixed delay calls again the same afternoon.
`
  return { heading: 'Learned retry timing beside fixed delays', body }
}
