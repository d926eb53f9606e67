/**
 * The growth sections of `npm run bench`: what a year in production does to
 * the service, on a PostgreSQL server of the benchmark's own set as a
 * production server is (bench/privatePostgres.ts), started once for all
 * three parts and removed at the end:
 *
 * - history (bench/growthHistory.ts): a year of history built by SQL
 *   (bench/history.ts), then end to end on it beside a fresh database, and
 *   the big organization's reads;
 * - storage (bench/retentionRun.ts, benchStorage): bytes per completed
 *   trigger after a run with autovacuum on, at a steady rate and in a burst;
 * - retention (bench/retentionRun.ts, benchRetentionRun): table sizes under
 *   steady load over several retention periods while the history sweep
 *   deletes what has passed.
 *
 * Environment: BENCH_GROWTH_ONLY, a comma-separated list of the parts to run
 * (history, storage, retention; all by default). The history's size:
 * BENCH_GROWTH_BIG (the big organization's triggers, default 1,000,000),
 * BENCH_GROWTH_OTHERS (each other organization's, default 10,000),
 * BENCH_GROWTH_ORGANIZATIONS (default 100, the big one among them),
 * BENCH_GROWTH_DAYS (default 360), BENCH_GROWTH_TEMPLATE (triggers the
 * template is made of through the service, default 2,000). End to end on it:
 * BENCH_GROWTH_ROUNDS (pairs of rounds, default 3), BENCH_GROWTH_TRIGGERS
 * (a round's, default 5,000), BENCH_GROWTH_WARM_UP (default 5,000),
 * BENCH_GROWTH_PLANS (a file to write every read's generic plan to). Storage:
 * BENCH_STORAGE_TRIGGERS (default 40,000), BENCH_STORAGE_RATE (the steady
 * run's triggers/s, default 150). Retention: BENCH_RETENTION_RATE
 * (triggers/s, default 150), BENCH_RETENTION_PERIOD (seconds a compressed
 * day, default 60), BENCH_RETENTION_PERIODS (default 4),
 * BENCH_RETENTION_NAPTIME (autovacuum_naptime in seconds for that run,
 * default 1; `server` leaves the server's minute), and for diagnosis
 * BENCH_RETENTION_SWEEP_OPTIONS (PostgreSQL options for the bench's sweep's
 * sessions, e.g. `-c enable_seqscan=off`).
 *
 * The full history takes about 7 minutes to build here (shared_buffers a quarter of memory) and 13 GiB of disk, the
 * whole section some 25 minutes (storage runs twice, at a steady rate and in a burst);
 * `BENCH_ONLY=growth npm run bench` runs these sections alone.
 */
import { writeFile } from 'node:fs/promises'
import { benchHistory, historySection, historyVerdicts, plansText } from './growthHistory.ts'
import { log, namedIn, positiveInteger, wholeNumber } from './harness.ts'
import { buildHistory } from './history.ts'
import { type PrivatePostgres, startPrivatePostgres } from './privatePostgres.ts'
import type { Section } from './report.ts'
import { benchRetentionRun, benchStorage, growthSection, keptUpWith, retentionVerdict, type StorageRuns, storageVerdict } from './retentionRun.ts'

export const GROWTH_PARTS = ['history', 'storage', 'retention'] as const

/** The parts BENCH_GROWTH_ONLY names, in GROWTH_PARTS' order; all of them when it is unset. */
export function growthPartsToRun() {
  return namedIn('BENCH_GROWTH_ONLY', GROWTH_PARTS)
}

/**
 * Whether the growth sections that `parts` make are whole: the history's is
 * made by its part alone, the one of what history keeps on disk by storage
 * and retention together.
 */
export function growthSectionsWhole(parts: readonly (typeof GROWTH_PARTS)[number][]): boolean {
  return parts.includes('storage') === parts.includes('retention')
}

/** The growth parts BENCH_GROWTH_ONLY names, on a private server in `workDir`: the history's section, then storage's. */
export async function benchGrowth(workDir: string): Promise<Section[]> {
  const parts = growthPartsToRun()
  const server = await startPrivatePostgres(workDir)
  log(`growth: a PostgreSQL server of its own at ${server.adminUrl} (${server.description})`)
  try {
    const sections: Section[] = []
    if (parts.includes('history')) sections.push(await historyPart(server, workDir))
    const storage = parts.includes('storage') ? await storageRuns(server, workDir) : undefined
    if (storage !== undefined) log(`growth: ${storageVerdict(storage).measured}`)
    const retention = parts.includes('retention') ? await retentionPart(server, workDir) : undefined
    if (storage !== undefined || retention !== undefined) sections.push(growthSection(storage, retention))
    return sections
  } finally {
    server.stop()
  }
}

/** The same triggers at a steady rate, then as fast as the service takes them, each on a fresh database. */
async function storageRuns(server: PrivatePostgres, workDir: string): Promise<StorageRuns> {
  const triggers = positiveInteger('BENCH_STORAGE_TRIGGERS', 40_000)
  const steady = await benchStorage({ server, workDir, triggers, ratePerSecond: positiveInteger('BENCH_STORAGE_RATE', 150) })
  const burst = await benchStorage({ server, workDir, triggers })
  return { steady, burst }
}

async function historyPart(server: PrivatePostgres, workDir: string): Promise<Section> {
  const grownUrl = await server.createDatabase('history')
  const history = await buildHistory({
    databaseUrl: grownUrl,
    organizations: positiveInteger('BENCH_GROWTH_ORGANIZATIONS', 100),
    bigOrganizationTriggers: positiveInteger('BENCH_GROWTH_BIG', 1_000_000),
    otherOrganizationTriggers: wholeNumber('BENCH_GROWTH_OTHERS', 10_000),
    days: positiveInteger('BENCH_GROWTH_DAYS', 360),
    templateTriggers: positiveInteger('BENCH_GROWTH_TEMPLATE', 2_000),
    workDir,
    log: (message) => log(`history: ${message}`),
  })
  const freshUrl = await server.createDatabase('fresh')
  const result = await benchHistory({
    server,
    workDir,
    grownUrl,
    freshUrl,
    history,
    rounds: positiveInteger('BENCH_GROWTH_ROUNDS', 3),
    triggersPerRound: positiveInteger('BENCH_GROWTH_TRIGGERS', 5_000),
    warmUpTriggers: wholeNumber('BENCH_GROWTH_WARM_UP', 5_000),
  })
  const plansFile = process.env.BENCH_GROWTH_PLANS
  if (plansFile !== undefined && plansFile !== '') await writeFile(plansFile, `${plansText(result)}\n`)
  for (const verdict of historyVerdicts(result)) log(`growth: ${verdict.goal}: ${verdict.measured}, ${verdict.met ? 'met' : 'NOT MET'}`)
  return historySection(result)
}

async function retentionPart(server: PrivatePostgres, workDir: string) {
  const naptime = process.env.BENCH_RETENTION_NAPTIME
  const result = await benchRetentionRun({
    server,
    workDir,
    ratePerSecond: positiveInteger('BENCH_RETENTION_RATE', 150),
    periodSeconds: positiveInteger('BENCH_RETENTION_PERIOD', 60),
    periods: positiveInteger('BENCH_RETENTION_PERIODS', 4),
    autovacuumNaptimeSeconds: naptime === 'server' ? undefined : positiveInteger('BENCH_RETENTION_NAPTIME', 1),
    sweepSessionOptions: process.env.BENCH_RETENTION_SWEEP_OPTIONS || undefined,
  })
  const verdict = retentionVerdict(result)
  log(`growth: ${verdict.goal}: ${verdict.measured}, ${verdict.met ? 'met' : 'NOT MET'}; the sweep ${keptUpWith(result) ? 'kept up' : 'did NOT keep up'}`)
  return result
}
