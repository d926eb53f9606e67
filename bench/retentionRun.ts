/**
 * Growth: what the service's history costs on disk, on a PostgreSQL server
 * set as production sets one (autovacuum on; bench/privatePostgres.ts), with
 * the service's real processes: an API process (`serve --no-workers`) and a
 * worker process (`worker`), pinned to CPU 0, as the end-to-end bench's
 * PostgreSQL layout runs them; this process (the clients, the webhook
 * receiver and, for the second measurement, a history sweep of its own) on
 * CPU 1.
 *
 * 1. benchStorage: bytes per completed trigger. One organization, CAMPAIGN
 *    (calls complete as they start, open all week), one webhook endpoint on
 *    a receiver here answering 200 at once; `triggers` distinct people
 *    posted by CLIENTS clients as fast as the service takes them, until both
 *    webhooks of each have arrived and nothing is left to do. Then every
 *    table's size (heap, TOAST, indexes) over the triggers completed: (a) as
 *    the run left it, autovacuum on as the server has it (a naptime of a
 *    minute: a run shorter than that may end before its first visit, and
 *    the report says when it did); (b) after a plain
 *    VACUUM (the dead rows' space made reusable, which is what autovacuum
 *    would have done next); (c) after VACUUM FULL (the live rows alone).
 *    The contact directory (contacts, contact_ids: a row per person and per
 *    id, not per trigger) is counted apart from the pipeline's tables; here
 *    every trigger is a person of their own, its worst case.
 *
 * 2. benchRetentionRun: whether the tables level off under steady load while
 *    history is deleted. An organization with retention_days 1 takes
 *    triggers at a steady rate for `periods` retention periods of
 *    `periodSeconds` each: a day compressed into P seconds by a clock handed
 *    to a HistorySweep run here on the same database, which reads the time
 *    as Date.now() + 1 day - P, so that what completed more than P seconds
 *    ago is more than a day old to it. It sweeps every second with a tenth of
 *    a second's budget, as a worker's dispatcher does; the service's own
 *    workers sweep too, by the real clock, and find nothing a day old (they
 *    still move the daily counts). At each period's end every table's size
 *    and the tasks kept are read.
 *
 * benchGrowth (bench/growth.ts) runs both on a private PostgreSQL server
 * (bench/privatePostgres.ts).
 */
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import pg from 'pg'
import pino from 'pino'
import { DAY_MS, DEFAULT_HISTORY_BOUNDS } from '../src/domain/retention.ts'
import { HistorySweep, type SweepReport } from '../src/services/history.ts'
import { ServiceMetrics } from '../src/services/metrics.ts'
import { openDatabase } from '../src/store/database.ts'
import { generateBodies } from './bodies.ts'
import { hasExited, stopChild } from './children.ts'
import { addressedTo, CAMPAIGN, CLIENTS, EVENT_TYPES, type Intake, postAll, type Receiver, startReceiver } from './endToEnd.ts'
import {
  LOAD_CPU,
  log,
  OPERATOR_TOKEN,
  PHONE_HASH_KEY,
  percentile,
  pinnedTo,
  postCreating,
  postTriggerWith,
  provision,
  type Server,
  sleep,
  startServer,
  tail,
  waitUntilReady,
  withClient,
} from './harness.ts'
import type { PrivatePostgres } from './privatePostgres.ts'
import type { Section } from './report.ts'

/** A row per person and per id, not per trigger: counted apart from the pipeline's tables. */
export const CONTACT_DIRECTORY = ['contacts', 'contact_ids'] as const
/** The project's goal: the pipeline's tables keep at most this many bytes per completed trigger after a run with autovacuum on. */
export const PIPELINE_BYTES_GOAL = 4_000
/** The project's goal: total size at the end of the third period within this fraction of the second's. */
export const FLAT_WITHIN = 0.1
/** A worker's dispatcher sweeps every second for at most a tenth of one (src/workers/dispatcher.ts). */
const SWEEP_EVERY_MS = 1_000
const SWEEP_BUDGET_MS = 100
/** generateBodies cannot make many more distinct bodies (some id kinds run out of values). */
export const MAX_DISTINCT_BODIES = 50_000
/** How long after the last POST the webhooks may take to arrive, at least; more for a larger run (below). */
const MIN_WEBHOOKS_TIMEOUT_MS = 600_000
/** How long the database may take, once every webhook has arrived, to have nothing left to do (deliveries' results, daily counts moved). */
const SETTLE_TIMEOUT_MS = 60_000
const PROGRESS_EVERY_MS = 15_000
/** pino's level for warn. */
const WARN = 40

// ---------------------------------------------------------------------------------------------------------------
// What both measurements share: the service's processes, the receiver, the readings.

interface Service {
  api: Server
  servers: Server[]
}

/** The API process, then the worker process, on `databaseUrl`, each ready; the API applies the migrations first. */
async function startService(name: string, databaseUrl: string, workDir: string): Promise<Service> {
  const env = { DATABASE_URL: databaseUrl, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'info', ALLOW_PRIVATE_WEBHOOK_URLS: 'true' }
  const servers: Server[] = []
  try {
    for (const [role, args] of [
      ['API', ['dist/cli.js', 'serve', '--no-workers']],
      ['worker', ['dist/cli.js', 'worker']],
    ] as const) {
      const server = await startServer(`${name} ${role}`, [...args], env, workDir)
      servers.push(server)
      await waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
    }
  } catch (error) {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    throw error
  }
  return { api: servers[0]!, servers }
}

async function stopService(service: Service): Promise<void> {
  await Promise.all(service.servers.map((server) => stopChild(server.child)))
}

/** Log lines of the service's processes at warn level or above, or not written by its logger. */
async function logProblems(service: Service): Promise<string[]> {
  const problems: string[] = []
  for (const server of service.servers) {
    const lines = (await readFile(server.logFile, 'utf8')).split('\n').filter((line) => line !== '')
    for (const line of lines) {
      const level = /^\{"level":(\d+)/.exec(line)?.[1]
      if (level === undefined || Number(level) >= WARN) problems.push(`${server.name}: ${line}`)
    }
  }
  return problems
}

/** An organization with CAMPAIGN and one endpoint on the receiver, subscribed to both event types. */
async function provisionOrganization(api: Server, receiverUrl: string): Promise<{ orgId: string; apiKey: string }> {
  const { orgId, apiKey } = await provision(api.baseUrl, [CAMPAIGN], ['triggers:write', 'webhooks:manage'])
  await postCreating(api.baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiverUrl, events: EVENT_TYPES })
  return { orgId, apiKey }
}

/** Waits until the receiver holds one webhook of each type per trigger, or `timeoutMs`, or a process exits; answers whether all came. */
async function untilDelivered(receiver: Receiver, triggers: number, service: Service, timeoutMs: number, label: string): Promise<boolean> {
  const deadline = performance.now() + timeoutMs
  let progressAt = performance.now()
  while (EVENT_TYPES.some((type) => receiver.received(type) < triggers)) {
    const exited = service.servers.find((server) => hasExited(server.child))
    if (exited !== undefined) throw new Error(`${label}: ${exited.name} exited:\n${await tail(exited.logFile)}`)
    const now = performance.now()
    if (now > deadline) {
      log(`${label}: timed out with ${receiver.distinct()} of ${2 * triggers} webhooks`)
      return false
    }
    if (now - progressAt >= PROGRESS_EVERY_MS) {
      progressAt = now
      log(`${label}: ${EVENT_TYPES.map((type) => `${receiver.received(type)} ${type}`).join(', ')} of ${triggers} each`)
    }
    await sleep(100)
  }
  return true
}

/** A table's size in bytes: its main fork (heap), its TOAST table with its index, its indexes, and all of it (the free space and visibility maps too). */
export interface TableSize {
  table: string
  heap: number
  toast: number
  indexes: number
  total: number
}

/** The statistics autovacuum keeps of a table (pg_stat_user_tables). */
export interface TableStats {
  table: string
  liveRows: number
  deadRows: number
  autovacuumRuns: number
  autoanalyzeRuns: number
}

async function readSizes(client: pg.Client): Promise<TableSize[]> {
  const { rows } = await client.query<{ table: string; heap: string; toast: string; indexes: string; total: string }>(
    `SELECT c.relname AS table, pg_relation_size(c.oid) AS heap,
            CASE WHEN c.reltoastrelid = 0 THEN 0 ELSE pg_total_relation_size(c.reltoastrelid) END AS toast,
            pg_indexes_size(c.oid) AS indexes, pg_total_relation_size(c.oid) AS total
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
     ORDER BY c.relname`,
  )
  return rows.map((row) => ({ table: row.table, heap: Number(row.heap), toast: Number(row.toast), indexes: Number(row.indexes), total: Number(row.total) }))
}

/** An index's size in bytes (its main fork). */
export interface IndexSize {
  index: string
  table: string
  bytes: number
}

async function readIndexSizes(client: pg.Client): Promise<IndexSize[]> {
  const { rows } = await client.query<{ index: string; table: string; bytes: string }>(
    `SELECT i.relname AS index, t.relname AS table, pg_relation_size(i.oid) AS bytes
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = current_schema()
     ORDER BY t.relname, i.relname`,
  )
  return rows.map((row) => ({ index: row.index, table: row.table, bytes: Number(row.bytes) }))
}

async function readStats(client: pg.Client): Promise<TableStats[]> {
  const { rows } = await client.query<{ table: string; live: string; dead: string; vacuums: string; analyzes: string }>(
    `SELECT relname AS table, n_live_tup AS live, n_dead_tup AS dead, autovacuum_count AS vacuums, autoanalyze_count AS analyzes
     FROM pg_stat_user_tables WHERE schemaname = current_schema() ORDER BY relname`,
  )
  return rows.map((row) => ({
    table: row.table,
    liveRows: Number(row.live),
    deadRows: Number(row.dead),
    autovacuumRuns: Number(row.vacuums),
    autoanalyzeRuns: Number(row.analyzes),
  }))
}

async function countRows(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(table)}`)
  return Number(rows[0]!.n)
}

async function setting(client: pg.Client, name: string): Promise<string> {
  const { rows } = await client.query<{ value: string }>('SELECT current_setting($1) AS value', [name])
  return rows[0]!.value
}

async function dropDatabase(server: PrivatePostgres, name: string): Promise<void> {
  await withClient(server.adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`)).catch((error: Error) =>
    log(`could not drop ${name}: ${error.message}`),
  )
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Bytes per completed trigger.

/** Of a table's heap (pgstattuple): bytes of live rows, of dead rows, and free. */
export interface HeapSpace {
  table: string
  liveBytes: number
  deadBytes: number
  freeBytes: number
}

export interface StorageResult {
  triggers: number
  /** Posted at this steady rate (triggers/s); undefined: as fast as the service took them. */
  ratePerSecond: number | undefined
  /** Tasks completed when the sizes were read: what each figure is divided by. */
  completed: number
  clients: number
  /** From the first POST to the last answered, and to the last webhook. */
  intakeSeconds: number
  seconds: number
  intakeP99Ms: number
  webhooksExpected: number
  webhooksReceived: number
  duplicates: number
  /** Whether the database had nothing left to do (no pending task, call or delivery, the daily counts moved) when read. */
  settled: boolean
  postgresVersion: string
  /** The server's settings (PrivatePostgres.description). */
  serverSettings: string
  autovacuumNaptime: string
  /** Exact rows of each table after the run. */
  rows: Record<string, number>
  /** (a) right after the run, (b) after VACUUM, (c) after VACUUM FULL. */
  afterRun: TableSize[]
  afterVacuum: TableSize[]
  afterVacuumFull: TableSize[]
  /** Autovacuum's work during the run, as read at (a). */
  stats: TableStats[]
  /** The heap's live, dead and free bytes at (a) and after VACUUM; undefined without pgstattuple. */
  heapSpace: { afterRun: HeapSpace[]; afterVacuum: HeapSpace[] } | undefined
  serviceLogProblems: string[]
}

/** `triggers` distinct triggers through the service on a fresh database of `server`, then the tables' sizes; this process on LOAD_CPU. */
export async function benchStorage(options: { server: PrivatePostgres; workDir: string; triggers: number; ratePerSecond?: number }): Promise<StorageResult> {
  if (options.triggers > MAX_DISTINCT_BODIES) throw new Error(`at most ${MAX_DISTINCT_BODIES} distinct triggers (bench/bodies.ts)`)
  const bodies = generateBodies(options.triggers).bodies.map((text) => addressedTo(text, CAMPAIGN))
  const database = `storage_${Date.now()}`
  const databaseUrl = await options.server.createDatabase(database)
  try {
    return await pinnedTo(LOAD_CPU, () => measureStorage(databaseUrl, bodies, options.workDir, options.server.description, options.ratePerSecond))
  } finally {
    await dropDatabase(options.server, database)
  }
}

async function measureStorage(
  databaseUrl: string,
  bodies: readonly string[],
  workDir: string,
  serverSettings: string,
  ratePerSecond: number | undefined,
): Promise<StorageResult> {
  const receiver = await startReceiver()
  let service: Service | undefined
  try {
    service = await startService('storage', databaseUrl, workDir)
    const { apiKey } = await provisionOrganization(service.api, receiver.url)
    log(`storage: ${bodies.length} triggers from ${CLIENTS} clients, ${ratePerSecond === undefined ? 'as fast as the service takes them' : `at ${ratePerSecond}/s`}`)
    const intake = ratePerSecond === undefined ? await postAll(service.api, apiKey, bodies, 'storage') : await postSteadily(service.api, apiKey, bodies, ratePerSecond)
    if (intake.refusals.length > 0) {
      throw new Error(`storage: ${intake.refusals.length} of ${bodies.length} POSTs were not answered 201, e.g.\n${intake.refusals.slice(0, 5).join('\n')}`)
    }
    log(`storage: all answered 201 in ${intake.seconds.toFixed(1)} s; waiting for ${2 * bodies.length} webhooks`)
    const timeoutMs = Math.max(MIN_WEBHOOKS_TIMEOUT_MS, bodies.length * 20)
    const complete = await untilDelivered(receiver, bodies.length, service, timeoutMs, 'storage')
    const seconds = (performance.now() - intake.startedAt) / 1000
    if (!complete) throw new Error(`storage: only ${receiver.distinct()} of ${2 * bodies.length} webhooks arrived within ${timeoutMs / 1000} s`)
    return await withClient(databaseUrl, async (client) => {
      const settled = await untilSettled(client)
      // (a): as the run left it, with autovacuum's work so far.
      const afterRun = await readSizes(client)
      const stats = await readStats(client)
      const completed = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM tasks WHERE status = 'completed'`)).rows[0]!.n)
      const rows: Record<string, number> = {}
      for (const { table } of afterRun) rows[table] = await countRows(client, table)
      // The service stops before the vacuums, so that nothing of its own is in their way (or they in its).
      await stopService(service!)
      const heapSpace = await readHeapSpace(client, afterRun)
      log('storage: VACUUM')
      await client.query('VACUUM')
      const afterVacuum = await readSizes(client)
      const heapSpaceAfterVacuum = heapSpace === undefined ? undefined : await readHeapSpace(client, afterRun)
      log('storage: VACUUM FULL')
      await client.query('VACUUM FULL')
      const afterVacuumFull = await readSizes(client)
      return {
        triggers: bodies.length,
        ratePerSecond,
        completed,
        clients: CLIENTS,
        intakeSeconds: intake.seconds,
        seconds,
        intakeP99Ms: percentile(intake.latenciesMs, 99),
        webhooksExpected: 2 * bodies.length,
        webhooksReceived: receiver.distinct(),
        duplicates: receiver.duplicates(),
        settled,
        postgresVersion: await setting(client, 'server_version'),
        serverSettings,
        autovacuumNaptime: await setting(client, 'autovacuum_naptime'),
        rows,
        afterRun,
        afterVacuum,
        afterVacuumFull,
        stats,
        heapSpace: heapSpace === undefined || heapSpaceAfterVacuum === undefined ? undefined : { afterRun: heapSpace, afterVacuum: heapSpaceAfterVacuum },
        serviceLogProblems: await logProblems(service!),
      }
    })
  } finally {
    if (service !== undefined) await stopService(service)
    await receiver.close()
  }
}

/** Each body once, at a steady rate: postAtRate, read as postAll's intake. */
async function postSteadily(api: Server, apiKey: string, bodies: readonly string[], ratePerSecond: number): Promise<Intake> {
  const startedAt = performance.now()
  const { latenciesMs, refusals } = await postAtRate(api, apiKey, bodies, bodies.length, ratePerSecond, startedAt).done
  return { startedAt, seconds: (performance.now() - startedAt) / 1000, latenciesMs, refusals }
}

/** Until no task, call or delivery is left to finish and the daily counts have been moved; answers whether that came before the timeout. */
async function untilSettled(client: pg.Client): Promise<boolean> {
  const deadline = performance.now() + SETTLE_TIMEOUT_MS
  for (;;) {
    const { rows } = await client.query<{ open: string }>(
      `SELECT (SELECT count(*) FROM tasks WHERE status <> 'completed') + (SELECT count(*) FROM interactions WHERE status <> 'finalized')
              + (SELECT count(*) FROM deliveries WHERE status = 'pending') + (SELECT count(*) FROM daily_count_changes) AS open`,
    )
    if (rows[0]!.open === '0') return true
    if (performance.now() > deadline) {
      log(`storage: ${rows[0]!.open} rows still open ${SETTLE_TIMEOUT_MS / 1000} s after the last webhook; read as they are`)
      return false
    }
    await sleep(250)
  }
}

/** The heap's live, dead and free bytes of every table (pgstattuple, which reads each whole); undefined where the extension is not installed. */
async function readHeapSpace(client: pg.Client, tables: readonly TableSize[]): Promise<HeapSpace[] | undefined> {
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pgstattuple')
  } catch (error) {
    log(`storage: no pgstattuple (${(error as Error).message}): the heap's dead and free space is not reported`)
    return undefined
  }
  const space: HeapSpace[] = []
  for (const { table } of tables) {
    const { rows } = await client.query<{ tuple_len: string; dead_tuple_len: string; free_space: string }>(
      'SELECT tuple_len, dead_tuple_len, free_space FROM pgstattuple($1::regclass)',
      [ident(table)],
    )
    space.push({ table, liveBytes: Number(rows[0]!.tuple_len), deadBytes: Number(rows[0]!.dead_tuple_len), freeBytes: Number(rows[0]!.free_space) })
  }
  return space
}

/** In the report, tables with fewer rows than this per trigger are summed on one line. */
const MINOR_ROWS_PER_TRIGGER = 0.01

/** The pipeline's tables: every one but the contact directory's. */
export function isPipelineTable(table: string): boolean {
  return !(CONTACT_DIRECTORY as readonly string[]).includes(table)
}

/** The sums of a reading's sizes over the tables `which` takes. */
function summed(sizes: readonly TableSize[], which: (table: string) => boolean): Omit<TableSize, 'table'> {
  const sum = { heap: 0, toast: 0, indexes: 0, total: 0 }
  for (const size of sizes.filter((candidate) => which(candidate.table))) {
    sum.heap += size.heap
    sum.toast += size.toast
    sum.indexes += size.indexes
    sum.total += size.total
  }
  return sum
}

/** The pipeline's bytes per completed trigger at (a): what the goal is read from. */
export function pipelineBytesPerTrigger(result: StorageResult): number {
  return summed(result.afterRun, isPipelineTable).total / result.completed
}

/**
 * The two storage runs of the same triggers: at a steady rate, for long
 * enough that autovacuum does its work during the run as it does in
 * production (what the target reads), and as fast as the service takes them,
 * over before autovacuum's first visit: every row version the pipeline wrote,
 * the worst case.
 */
export interface StorageRuns {
  steady: StorageResult
  burst: StorageResult
}

export function storageVerdict(runs: StorageRuns): { goal: string; measured: string; met: boolean } {
  const bytes = pipelineBytesPerTrigger(runs.steady)
  const live = (result: StorageResult) => thousands(summed(result.afterVacuumFull, isPipelineTable).total / result.completed)
  return {
    goal: `the pipeline's tables keep at most ${thousands(PIPELINE_BYTES_GOAL)} bytes per completed trigger after a run with autovacuum on`,
    measured: `${thousands(bytes)} bytes per trigger right after the steady run at ${runs.steady.ratePerSecond}/s (${live(runs.steady)} of live rows alone); after the burst, before any vacuum, ${thousands(pipelineBytesPerTrigger(runs.burst))} (${live(runs.burst)} of live rows)`,
    met: bytes <= PIPELINE_BYTES_GOAL,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Table sizes under steady load while history is deleted.

/** What the bench's sweep did over one period: the sum of its runs' reports. */
export interface SweepTotals {
  runs: number
  tasks: number
  rows: number
  countChanges: number
  /** Runs that ended for want of time with history still due. */
  unfinished: number
  /** The longest run that ended in the period, wall clock. */
  longestMs: number
  /** How long the run still going at the period's end had been running; 0 when none was. */
  inProgressMs: number
  /** Runs that failed (their error). */
  errors: string[]
}

/** One run of the bench's sweep. */
export interface SweepRun extends SweepReport {
  /** Since the first POST. */
  atSeconds: number
  ms: number
}

export interface PeriodReading {
  period: number
  /** Since the first POST. */
  atSeconds: number
  /** Triggers posted (answered) by then. */
  posted: number
  /** Rows of tasks (every status): the tasks kept. */
  tasksKept: number
  /** Every table's size (pg_total_relation_size), and its parts. */
  sizes: TableSize[]
  /** Every index's. */
  indexes: IndexSize[]
  stats: TableStats[]
  /** conversation_trigger_retention_backlog_age_seconds, as the bench's sweep's metrics show it after its last run. */
  backlogSeconds: number
  /** What the bench's sweep did during the period. */
  sweep: SweepTotals
}

export interface RetentionRunResult {
  ratePerSecond: number
  periodSeconds: number
  periods: number
  /** Distinct bodies, posted in turn; `wrapped`: more triggers were posted than there are, so bodies came round again. */
  distinctBodies: number
  wrapped: boolean
  autovacuumNaptime: string
  /** How the naptime was set for the run: the server's own, or lowered for it. */
  naptimeSetForRun: boolean
  /** PostgreSQL options of the bench's sweep's sessions, set for diagnosis (undefined: none, as the service's). */
  sweepSessionOptions: string | undefined
  /** When the bench's sweep started, after the first POST: once the first task.completed had come. */
  sweepStartedAtSeconds: number
  /** Before the first POST (the organization provisioned). */
  baseline: TableSize[]
  readings: PeriodReading[]
  /** Every run of the bench's sweep. */
  sweepRuns: SweepRun[]
  posted: number
  refusals: number
  refusalExamples: string[]
  /** How far behind its schedule the latest POST was sent, and the POSTs' p99. */
  maxLateMs: number
  intakeP99Ms: number
  webhooksExpected: number
  webhooksReceived: number
  allWebhooksArrived: boolean
  duplicates: number
  /** Warnings the bench's sweep logged (a batch that met another transaction). */
  sweepWarnings: string[]
  serviceLogProblems: string[]
}

/**
 * Triggers at `ratePerSecond` for `periods` periods of `periodSeconds`, on a
 * fresh database of `server`, the history past a compressed day (P seconds)
 * deleted by a sweep here; every table's size at each period's end. With
 * `autovacuumNaptimeSeconds`, the server's autovacuum_naptime is set to it for
 * this run only (see naptimeArgument), and put back after.
 */
export async function benchRetentionRun(options: {
  server: PrivatePostgres
  workDir: string
  ratePerSecond: number
  periodSeconds: number
  periods: number
  autovacuumNaptimeSeconds?: number
  /**
   * For diagnosis only: PostgreSQL options for the bench's sweep's sessions
   * (e.g. `-c enable_seqscan=off`), to see what the run does with a plan of
   * the sweep's changed; the service's processes are left as they are. The
   * report says so.
   */
  sweepSessionOptions?: string
}): Promise<RetentionRunResult> {
  const total = Math.round(options.ratePerSecond * options.periodSeconds * options.periods)
  const distinct = Math.min(total, MAX_DISTINCT_BODIES)
  const bodies = generateBodies(distinct).bodies.map((text) => addressedTo(text, CAMPAIGN))
  const database = `retention_${Date.now()}`
  const databaseUrl = await options.server.createDatabase(database)
  const naptime = options.autovacuumNaptimeSeconds
  try {
    if (naptime !== undefined) await setNaptime(options.server, `${naptime}s`)
    return await pinnedTo(LOAD_CPU, () =>
      measureRetention(databaseUrl, bodies, total, { ...options, naptimeSetForRun: naptime !== undefined, sweepSessionOptions: options.sweepSessionOptions }),
    )
  } finally {
    if (naptime !== undefined) await setNaptime(options.server, undefined).catch((error: Error) => log(`could not reset autovacuum_naptime: ${error.message}`))
    await dropDatabase(options.server, database)
  }
}

/**
 * Why the second run lowers autovacuum_naptime, by default to 1 s
 * (BENCH_RETENTION_NAPTIME; `server` keeps the server's minute): compressing
 * a day into P seconds does not compress autovacuum. A table is vacuumed
 * once its dead rows pass its threshold (migration 031: 1,000 rows and a
 * fiftieth of the live ones), and autovacuum looks at a database once a
 * naptime. In production, with a day of history at 150 triggers/s (13
 * million tasks, 26 million events and deliveries), that threshold is some
 * 260,000 to 520,000 dead rows, from 8 minutes of rewrites and deletions
 * (deliveries: about 7 dead rows a trigger) to half an hour (events: 2), and
 * a naptime of a minute is nothing beside it: the threshold decides when a
 * table is vacuumed. Here a period holds P seconds of tasks (9,000 at the
 * defaults), the threshold is passed within seconds, and a naptime of a
 * minute (one visit per period at P = 60 s) alone would decide: each table
 * would carry up to a period's dead rows and rewrites beside its live ones
 * before a vacuum freed them, a proportion no production table reaches. At 1
 * s the threshold decides again, as in production. Measured side by side
 * (defaults, the sweep's lookup plan fixed for diagnosis as
 * BENCH_RETENTION_SWEEP_OPTIONS allows): with a minute's naptime the tables
 * grew by 17.5 % from the second period's end to the third and held 13,350
 * bytes per task kept at the end; with 1 s, by 0.8 %, and 7,253 bytes.
 */
function naptimeArgument(result: RetentionRunResult): string {
  return `compressing a day into ${result.periodSeconds} s does not compress autovacuum. A table is vacuumed once its dead rows pass its threshold (migration 031: 1,000 rows and a fiftieth of the live ones), and autovacuum looks at the database once a naptime. In production, with a day of history at ${result.ratePerSecond} triggers/s, that threshold is minutes of rewrites and deletions (a day at 150/s: from 8 minutes for \`deliveries\` to half an hour for \`events\`), beside which a naptime of a minute is nothing: the threshold decides when a table is vacuumed. Here a period holds ${thousands(result.ratePerSecond * result.periodSeconds)} tasks, the threshold is passed within seconds, and a naptime of a minute would alone decide, each table carrying up to a minute's dead rows and rewrites beside ${result.periodSeconds} s of live ones before a vacuum freed them, a proportion no production table reaches. At 1 s, the threshold decides again, as in production`
}

async function setNaptime(server: PrivatePostgres, value: string | undefined): Promise<void> {
  await withClient(server.adminUrl, async (client) => {
    await client.query(value === undefined ? 'ALTER SYSTEM RESET autovacuum_naptime' : `ALTER SYSTEM SET autovacuum_naptime = '${value}'`)
    await client.query('SELECT pg_reload_conf()')
  })
  // The launcher reads the new setting at its next wake-up.
  await sleep(1_500)
}

async function measureRetention(
  databaseUrl: string,
  bodies: readonly string[],
  total: number,
  options: { workDir: string; ratePerSecond: number; periodSeconds: number; periods: number; naptimeSetForRun: boolean; sweepSessionOptions: string | undefined },
): Promise<RetentionRunResult> {
  const receiver = await startReceiver()
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  let service: Service | undefined
  let db: Awaited<ReturnType<typeof openDatabase>> | undefined
  let sweeper: Sweeper | undefined
  try {
    service = await startService('retention', databaseUrl, options.workDir)
    const { orgId, apiKey } = await provisionOrganization(service.api, receiver.url)
    const patched = await fetch(`${service.api.baseUrl}/admin/v1/organizations/${orgId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ retention_days: 1 }),
    })
    if (patched.status !== 200) throw new Error(`PATCH retention_days answered ${patched.status}: ${await patched.text()}`)
    const autovacuumNaptime = await setting(client, 'autovacuum_naptime')

    // The bench's own sweep, a day ahead but for P seconds: to it, what completed more than P seconds ago is a day old.
    db = await openDatabase({ databaseUrl: withSessionOptions(databaseUrl, options.sweepSessionOptions), dataDir: 'memory://' })
    const shift = DAY_MS - options.periodSeconds * 1000
    const now = () => Date.now() + shift
    const metrics = new ServiceMetrics(db, now)
    const sweepWarnings: string[] = []
    const sweepLog = pino({ level: 'warn' }, { write: (line: string) => void sweepWarnings.push(line.trim()) }) as unknown as FastifyBaseLogger
    const sweep = new HistorySweep({ db, now, phoneHashKey: Buffer.from(PHONE_HASH_KEY), bounds: DEFAULT_HISTORY_BOUNDS, metrics, log: sweepLog })
    const baseline = await readSizes(client)

    log(`retention: ${total} triggers at ${options.ratePerSecond}/s for ${options.periods} periods of ${options.periodSeconds} s (autovacuum_naptime ${autovacuumNaptime})`)
    const startedAt = performance.now()
    const intake = postAtRate(service.api, apiKey, bodies, total, options.ratePerSecond, startedAt)
    // The sweep starts once the first task.completed is committed (its webhook has come). A sweep that finds none of
    // an organization's events looks at it again when whatever is written from its now on can first be due: its now
    // + 1 day, which for this clock, a day ahead of the events' timestamps, is a day late; in the service, whose clock
    // is the events', that is right. With history written all along, the sweep then always stops at an event not yet
    // due, and looks again when that one is.
    await untilFirstCompleted(receiver, service)
    sweeper = startSweeper(sweep, startedAt)
    const sweepStartedAtSeconds = (performance.now() - startedAt) / 1000
    const readings: PeriodReading[] = []
    for (let period = 1; period <= options.periods; period++) {
      await sleep(startedAt + period * options.periodSeconds * 1000 - performance.now())
      const exited = service.servers.find((server) => hasExited(server.child))
      if (exited !== undefined) throw new Error(`retention: ${exited.name} exited:\n${await tail(exited.logFile)}`)
      const atSeconds = (performance.now() - startedAt) / 1000
      const sweepTotals = sweeper.takePeriod()
      const sizes = await readSizes(client)
      const indexes = await readIndexSizes(client)
      const stats = await readStats(client)
      const tasksKept = await countRows(client, 'tasks')
      const backlogSeconds = (await metrics.retentionBacklog.get()).values[0]?.value ?? 0
      const reading: PeriodReading = { period, atSeconds, posted: intake.answered(), tasksKept, sizes, indexes, stats, backlogSeconds, sweep: sweepTotals }
      readings.push(reading)
      log(
        `retention: period ${period} at ${atSeconds.toFixed(0)} s: ${reading.posted} posted, ${tasksKept} tasks kept, ${mib(summed(sizes, () => true).total)} MiB in all; ` +
          `the sweep deleted ${sweepTotals.tasks} tasks in ${sweepTotals.runs} runs (${sweepTotals.unfinished} unfinished, longest ${sweepTotals.longestMs.toFixed(0)} ms` +
          `${sweepTotals.inProgressMs === 0 ? '' : `, one going for ${(sweepTotals.inProgressMs / 1000).toFixed(1)} s`}), backlog ${backlogSeconds.toFixed(1)} s`,
      )
    }
    const posted = await intake.done
    const timeoutMs = Math.max(MIN_WEBHOOKS_TIMEOUT_MS, total * 20)
    const allWebhooksArrived = await untilDelivered(receiver, total, service, timeoutMs, 'retention')
    const sweepRuns = await sweeper.stop()
    await stopService(service)
    return {
      ratePerSecond: options.ratePerSecond,
      periodSeconds: options.periodSeconds,
      periods: options.periods,
      distinctBodies: bodies.length,
      wrapped: total > bodies.length,
      autovacuumNaptime,
      naptimeSetForRun: options.naptimeSetForRun,
      sweepSessionOptions: options.sweepSessionOptions,
      sweepStartedAtSeconds,
      baseline,
      readings,
      sweepRuns,
      posted: total,
      refusals: posted.refusals.length,
      refusalExamples: posted.refusals.slice(0, 5),
      maxLateMs: posted.maxLateMs,
      intakeP99Ms: percentile(posted.latenciesMs, 99),
      webhooksExpected: 2 * total,
      webhooksReceived: receiver.distinct(),
      allWebhooksArrived,
      duplicates: receiver.duplicates(),
      sweepWarnings,
      serviceLogProblems: await logProblems(service),
    }
  } finally {
    if (sweeper !== undefined) await sweeper.stop()
    if (service !== undefined) await stopService(service)
    await db?.close()
    await client.end()
    await receiver.close()
  }
}

/** Until the receiver has the first task.completed. */
async function untilFirstCompleted(receiver: Receiver, service: Service): Promise<void> {
  const deadline = performance.now() + 60_000
  while (receiver.received('task.completed') === 0) {
    const exited = service.servers.find((server) => hasExited(server.child))
    if (exited !== undefined) throw new Error(`retention: ${exited.name} exited:\n${await tail(exited.logFile)}`)
    if (performance.now() > deadline) throw new Error('retention: no task.completed within a minute of the first POST')
    await sleep(10)
  }
}

/** The URL with `options` (PostgreSQL's startup options) added to any it has. */
function withSessionOptions(databaseUrl: string, options: string | undefined): string {
  if (options === undefined) return databaseUrl
  const url = new URL(databaseUrl)
  url.searchParams.set('options', [url.searchParams.get('options'), options].filter(Boolean).join(' '))
  return url.toString()
}

interface Sweeper {
  /** What the sweep did since the last call (or its start). */
  takePeriod(): SweepTotals
  /** Stops after the run in progress; answers every run. */
  stop(): Promise<SweepRun[]>
}

function emptyTotals(): SweepTotals {
  return { runs: 0, tasks: 0, rows: 0, countChanges: 0, unfinished: 0, longestMs: 0, inProgressMs: 0, errors: [] }
}

/** sweep(SWEEP_BUDGET_MS) every SWEEP_EVERY_MS, as a worker's dispatcher runs it, each run recorded. */
function startSweeper(sweep: HistorySweep, startedAt: number): Sweeper {
  const runs: SweepRun[] = []
  let current = emptyTotals()
  let stopped = false
  let runningSince: number | undefined
  const loop = (async () => {
    for (let next = performance.now(); !stopped; ) {
      const began = performance.now()
      runningSince = began
      try {
        const report = await sweep.sweep(SWEEP_BUDGET_MS)
        const ms = performance.now() - began
        runs.push({ ...report, atSeconds: (began - startedAt) / 1000, ms })
        current.runs++
        current.tasks += report.tasks
        current.rows += report.rows
        current.countChanges += report.countChanges
        if (report.unfinished) current.unfinished++
        current.longestMs = Math.max(current.longestMs, ms)
      } catch (error) {
        current.runs++
        current.errors.push((error as Error).message)
        log(`retention: a sweep failed: ${(error as Error).message}`)
      }
      runningSince = undefined
      next += SWEEP_EVERY_MS
      // A run that overran its second is followed at once, as the dispatcher's next round would.
      next = Math.max(next, performance.now())
      while (!stopped && performance.now() < next) await sleep(Math.min(100, next - performance.now()))
    }
  })()
  return {
    takePeriod() {
      const taken = current
      if (runningSince !== undefined) taken.inProgressMs = performance.now() - runningSince
      current = emptyTotals()
      return taken
    },
    async stop() {
      stopped = true
      await loop
      return runs
    },
  }
}

interface PacedIntake {
  /** Requests answered so far. */
  answered(): number
  done: Promise<{ latenciesMs: Float64Array; refusals: string[]; maxLateMs: number }>
}

/**
 * `total` POSTs, the i-th sent at `startedAt` + i / rate seconds (or as soon
 * as a client is free, when all are busy), bodies taken in turn and coming
 * round again when there are fewer.
 */
function postAtRate(api: Server, apiKey: string, bodies: readonly string[], total: number, ratePerSecond: number, startedAt: number): PacedIntake {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })
  const url = new URL('/api/v2/triggers', api.baseUrl)
  const latenciesMs = new Float64Array(total)
  const refusals: string[] = []
  let next = 0
  let answered = 0
  let maxLateMs = 0
  const client = async () => {
    while (next < total) {
      const index = next++
      const due = startedAt + (index * 1000) / ratePerSecond
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      const sentAt = performance.now()
      maxLateMs = Math.max(maxLateMs, sentAt - due)
      const answer = await postTriggerWith(agent, url, apiKey, bodies[index % bodies.length]!, `retention-${index}`).catch((error: Error) => ({
        status: 0,
        text: error.message,
      }))
      latenciesMs[index] = performance.now() - sentAt
      answered++
      if (answer.status !== 201) refusals.push(`${answer.status} ${answer.text}`)
    }
  }
  const done = Promise.all(Array.from({ length: CLIENTS }, client)).then(() => {
    agent.destroy()
    return { latenciesMs, refusals, maxLateMs }
  })
  return { answered: () => answered, done }
}

/** A table's total size at the end of period `period` (1-based). */
function totalAt(result: RetentionRunResult, period: number, table: string): number {
  return result.readings[period - 1]?.sizes.find((size) => size.table === table)?.total ?? 0
}

function allAt(result: RetentionRunResult, period: number): number {
  const reading = result.readings[period - 1]
  return reading === undefined ? 0 : summed(reading.sizes, () => true).total
}

/** The change from period `from`'s end to the next one's, as a fraction of the first. */
function change(before: number, after: number): number {
  return before === 0 ? (after === 0 ? 0 : Infinity) : (after - before) / before
}

/** The tables the run wrote (their size changed from the baseline by the end), largest first. */
function tablesWritten(result: RetentionRunResult): string[] {
  const last = result.readings.at(-1)
  if (last === undefined) return []
  return last.sizes
    .filter((size) => size.total !== (result.baseline.find((base) => base.table === size.table)?.total ?? 0))
    .sort((a, b) => b.total - a.total)
    .map((size) => size.table)
}

export interface RetentionVerdict {
  goal: string
  measured: string
  met: boolean
  /** Written tables whose size changed by more than FLAT_WITHIN from the second period's end to the third's, with the change. */
  notFlat: { table: string; change: number }[]
}

export function retentionVerdict(result: RetentionRunResult): RetentionVerdict {
  const goal = `the tables' total size flat within ${FLAT_WITHIN * 100} % from the second retention period's end to the third's`
  if (result.readings.length < 3) return { goal, measured: `only ${result.readings.length} periods measured`, met: false, notFlat: [] }
  const all = change(allAt(result, 2), allAt(result, 3))
  const notFlat = tablesWritten(result)
    .map((table) => ({ table, change: change(totalAt(result, 2, table), totalAt(result, 3, table)) }))
    .filter((entry) => Math.abs(entry.change) > FLAT_WITHIN)
  return {
    goal,
    measured: `${percent(all)} in all (${mib(allAt(result, 2))} to ${mib(allAt(result, 3))} MiB)`,
    met: Math.abs(all) <= FLAT_WITHIN,
    notFlat,
  }
}

/** A backlog the sweep, run every second, leaves at most when it keeps up. */
const KEPT_UP_BACKLOG_SECONDS = 5

/** Whether the sweep kept up: from the second period on, its backlog small at each period's end, no run failed or still going after a second. */
export function keptUpWith(result: RetentionRunResult): boolean {
  const steady = result.readings.slice(1)
  return (
    steady.length > 0 &&
    result.readings.every((reading) => reading.sweep.errors.length === 0 && reading.sweep.inProgressMs < SWEEP_EVERY_MS) &&
    steady.every((reading) => reading.backlogSeconds <= KEPT_UP_BACKLOG_SECONDS)
  )
}

/** Total size over the tasks kept, at the last period's end: the steady state's bytes per trigger. */
export function bytesPerTaskKept(result: RetentionRunResult): number | undefined {
  const last = result.readings.at(-1)
  return last === undefined || last.tasksKept === 0 ? undefined : summed(last.sizes, () => true).total / last.tasksKept
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown.

function thousands(value: number): string {
  return Math.round(value).toLocaleString('en-US')
}

function mib(bytes: number): string {
  return (bytes / 1_048_576).toFixed(1)
}

function kib(bytes: number): string {
  return thousands(bytes / 1024)
}

function percent(fraction: number): string {
  if (!Number.isFinite(fraction)) return 'from nothing'
  return `${fraction >= 0 ? '+' : '−'}${Math.abs(fraction * 100).toFixed(1)} %`
}

function markdownTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (values: readonly string[]) => `| ${values.join(' | ')} |`
  return [line(columns), line(columns.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n')
}

/** The part of the growth section on bytes per completed trigger: the steady run, the burst, and the target read from the steady run. */
export function storageMarkdown(runs: StorageRuns): string {
  const verdict = storageVerdict(runs)
  return `
### Bytes per completed trigger

What the service keeps for each trigger it has taken through the pipeline, table by table, on a PostgreSQL server with autovacuum on, after two runs of the same triggers on fresh databases:

- **at a steady ${runs.steady.ratePerSecond} triggers/s**, long enough for autovacuum to visit the tables during the run, as it does in production, so that the space of rows' earlier versions is used again: what the tables keep in service, and what the target reads. ${runs.steady.ratePerSecond} triggers/s is 13 million a day: at a slower rate, autovacuum's passes come more often for each trigger, not less;
- **as fast as the service takes them**, a burst that is over before autovacuum's first visit: the tables hold every row version the pipeline wrote (a task, an interaction and each delivery are written three times), the worst case.
${storageRunMarkdown(runs.steady, `At a steady ${runs.steady.ratePerSecond} triggers/s`)}${storageRunMarkdown(runs.burst, 'A burst, as fast as the service takes them')}
Target (the project's): ${verdict.goal} — ${verdict.measured}, **${verdict.met ? 'met' : 'not met'}**
`
}

/** One storage run's method and tables. */
function storageRunMarkdown(result: StorageResult, title: string): string {
  const per = (bytes: number) => thousands(bytes / result.completed)
  const sizeOf = (sizes: readonly TableSize[], table: string) => sizes.find((size) => size.table === table) ?? { table, heap: 0, toast: 0, indexes: 0, total: 0 }
  const statsOf = (table: string) => result.stats.find((stats) => stats.table === table)
  const spaceOf = (space: readonly HeapSpace[] | undefined, table: string) => space?.find((entry) => entry.table === table)
  // The tables with anything in them at (a): the pipeline's largest first, then the contact directory's.
  const order = (tables: readonly TableSize[]) => [...tables].sort((a, b) => b.total - a.total).map((size) => size.table)
  // Tables with fewer rows than one per MINOR_ROWS_PER_TRIGGER triggers (the organization's setup, counters, none) on one line each.
  const rowsPerTrigger = (table: string) => (result.rows[table] ?? 0) / result.completed
  const written = result.afterRun.filter((size) => rowsPerTrigger(size.table) >= MINOR_ROWS_PER_TRIGGER)
  const pipeline = order(written.filter((size) => isPipelineTable(size.table)))
  const directory = order(written.filter((size) => !isPipelineTable(size.table)))
  const minor = result.afterRun.filter((size) => rowsPerTrigger(size.table) < MINOR_ROWS_PER_TRIGGER && isPipelineTable(size.table))
  const few = minor.filter((size) => (result.rows[size.table] ?? 0) > 0).map((size) => size.table)
  const none = minor.filter((size) => (result.rows[size.table] ?? 0) === 0).map((size) => size.table)
  const minorLabel = `${few.length} tables of a few rows (\`${few.join('`, `')}\`) and ${none.length} with none (\`${none.join('`, `')}\`)`
  const minorSum = (sizes: readonly TableSize[]) => summed(sizes, (table) => few.includes(table) || none.includes(table))
  const autovacuumRuns = result.stats.reduce((sum, stats) => sum + stats.autovacuumRuns, 0)

  const detailRow = (table: string): string[] => {
    const size = sizeOf(result.afterRun, table)
    const stats = statsOf(table)
    return [
      `\`${table}\``,
      (result.rows[table]! / result.completed).toFixed(2),
      per(size.heap),
      per(size.toast),
      per(size.indexes),
      per(size.total),
      String(stats?.autovacuumRuns ?? '—'),
      String(stats?.autoanalyzeRuns ?? '—'),
      stats === undefined ? '—' : thousands(stats.deadRows),
    ]
  }
  const sumRow = (label: string, which: (table: string) => boolean): string[] => {
    const sum = summed(result.afterRun, which)
    return [`**${label}**`, '', per(sum.heap), per(sum.toast), per(sum.indexes), `**${per(sum.total)}**`, '', '', '']
  }
  const detail = markdownTable(
    ['table', 'rows per trigger', 'heap', 'TOAST', 'indexes', 'total', 'autovacuum runs', 'autoanalyze runs', 'dead rows left'],
    [
      ...pipeline.map(detailRow),
      (() => {
        const sum = minorSum(result.afterRun)
        return [minorLabel, '', per(sum.heap), per(sum.toast), per(sum.indexes), per(sum.total), '', '', '']
      })(),
      sumRow('the pipeline', isPipelineTable),
      ...directory.map(detailRow),
      sumRow('the contact directory', (table) => !isPipelineTable(table)),
      sumRow('all', () => true),
    ],
  )

  const heap = result.heapSpace
  const compareRow = (table: string): string[] => {
    const [a, b, c] = [result.afterRun, result.afterVacuum, result.afterVacuumFull].map((sizes) => sizeOf(sizes, table))
    const spaceA = spaceOf(heap?.afterRun, table)
    const spaceB = spaceOf(heap?.afterVacuum, table)
    return [
      `\`${table}\``,
      per(a!.total),
      spaceA === undefined ? '—' : `${per(spaceA.deadBytes)} / ${per(spaceA.freeBytes)}`,
      per(b!.total),
      spaceB === undefined ? '—' : per(spaceB.freeBytes),
      per(c!.heap),
      per(c!.toast),
      per(c!.indexes),
      per(c!.total),
    ]
  }
  const compareSum = (label: string, which: (table: string) => boolean): string[] => {
    const [a, b, c] = [result.afterRun, result.afterVacuum, result.afterVacuumFull].map((sizes) => summed(sizes, which))
    const space = (entries: readonly HeapSpace[] | undefined) => entries?.filter((entry) => which(entry.table))
    const deadA = space(heap?.afterRun)?.reduce((sum, entry) => sum + entry.deadBytes, 0)
    const freeA = space(heap?.afterRun)?.reduce((sum, entry) => sum + entry.freeBytes, 0)
    const freeB = space(heap?.afterVacuum)?.reduce((sum, entry) => sum + entry.freeBytes, 0)
    return [
      `**${label}**`,
      `**${per(a!.total)}**`,
      deadA === undefined ? '—' : `${per(deadA)} / ${per(freeA!)}`,
      `**${per(b!.total)}**`,
      freeB === undefined ? '—' : per(freeB),
      per(c!.heap),
      per(c!.toast),
      per(c!.indexes),
      `**${per(c!.total)}**`,
    ]
  }
  const compare = markdownTable(
    ['table', '(a) total', '(a) heap: dead rows / free', '(b) total', '(b) heap free', '(c) heap', '(c) TOAST', '(c) indexes', '(c) total'],
    [
      ...pipeline.map(compareRow),
      (() => {
        const [a, b, c] = [result.afterRun, result.afterVacuum, result.afterVacuumFull].map(minorSum)
        return [minorLabel, per(a!.total), '', per(b!.total), '', per(c!.heap), per(c!.toast), per(c!.indexes), per(c!.total)]
      })(),
      compareSum('the pipeline', isPipelineTable),
      ...directory.map(compareRow),
      compareSum('the contact directory', (table) => !isPipelineTable(table)),
      compareSum('all', () => true),
    ],
  )
  const directoryPerPerson = summed(result.afterRun, (table) => !isPipelineTable(table)).total / (result.rows.contacts || 1)
  const posted =
    result.ratePerSecond === undefined
      ? `posted by ${result.clients} clients as fast as the service answers them (in ${result.intakeSeconds.toFixed(1)} s, p99 ${result.intakeP99Ms.toFixed(0)} ms)`
      : `posted at a steady ${result.ratePerSecond}/s (the i-th sent i / ${result.ratePerSecond} s after the first, by up to ${result.clients} clients; in ${result.intakeSeconds.toFixed(1)} s, p99 ${result.intakeP99Ms.toFixed(0)} ms)`
  return `
#### ${title}

Method:

- A PostgreSQL ${result.postgresVersion} server of the benchmark's own (bench/privatePostgres.ts: ${result.serverSettings}), a fresh database; the service's processes as production runs them: an API process (\`node dist/cli.js serve --no-workers\`) and a worker process (\`node dist/cli.js worker\`), both pinned to CPU 0, \`LOG_LEVEL=info\`; the benchmark process (clients and receiver) on CPU 1; PostgreSQL not pinned.
- One organization, one voice campaign on the simulator whose calls complete as they start, open all week (\`${CAMPAIGN.routing_key}\`, as end to end), one webhook endpoint subscribed to \`task.completed\` and \`interaction.finalized\`, on a receiver here that answers 200 at once and counts distinct \`webhook-id\`s.
- ${thousands(result.triggers)} distinct triggers (bench/bodies.ts: each a person of their own, with 2 or 3 ids of their own, so that the contact directory gains a contact and 2 or 3 ids per trigger, its worst case), ${posted}, until both webhooks of every one had arrived (${thousands(result.webhooksReceived)} of ${thousands(result.webhooksExpected)}, ${result.duplicates} duplicates, ${result.seconds.toFixed(1)} s from the first POST) and ${result.settled ? 'nothing was left to do (no task, call or delivery open, the daily counts moved)' : '**the database still had work open after a minute** (read as it was)'}; ${thousands(result.completed)} tasks completed, each figure below is divided by that.
- Sizes: the heap (\`pg_relation_size\`, main fork), TOAST (the TOAST table and its index), indexes (\`pg_indexes_size\`), and in all \`pg_total_relation_size\` (with the free space and visibility maps), read (a) right after the run, (b) after a plain \`VACUUM\` of the database (the service stopped): the dead rows' space made reusable, what autovacuum's next pass would do; a table shrinks only by empty pages at its end, (c) after \`VACUUM FULL\`: the live rows alone, packed. Autovacuum's runs are \`pg_stat_user_tables\` at (a)${autovacuumRuns > 0 ? '' : `: **none**, on any table; the run, ${result.seconds.toFixed(0)} s from the first POST to the last webhook, was over before autovacuum's first visit to the database (\`autovacuum_naptime\` ${result.autovacuumNaptime}), so that (a) is the tables before any vacuum, and (b) what the first would make of them`}. ${heap === undefined ? '' : "The heap's dead rows and free space are pgstattuple's."}
- The pipeline's tables are every table but the contact directory's (\`contacts\`, \`contact_ids\`: a row per person and per id, not per trigger; a client that triggers the same people again adds nothing there), the organization's setup and the tables with no rows included.

Right after the run (a), bytes per completed trigger:

${detail}

After \`VACUUM\` (b) and \`VACUUM FULL\` (c), bytes per completed trigger:

${compare}

The contact directory: ${thousands(directoryPerPerson)} bytes per person on file at (a) (${thousands(result.rows.contacts ?? 0)} contacts, ${thousands(result.rows.contact_ids ?? 0)} ids).
`
}

/** The part of the growth section on table sizes under steady load while history is deleted. */
export function retentionRunMarkdown(result: RetentionRunResult): string {
  const periods = result.readings.map((reading) => reading.period)
  const written = tablesWritten(result)
  const verdict = retentionVerdict(result)
  const canCompare = (a: number, b: number) => result.readings.length >= b && b > a
  const changeCell = (a: number, b: number, before: number, after: number) => (canCompare(a, b) ? percent(change(before, after)) : '—')
  const vacuumsIn = (table: string) =>
    result.readings
      .map((reading, index) => {
        const runs = reading.stats.find((stats) => stats.table === table)?.autovacuumRuns ?? 0
        const before = index === 0 ? 0 : (result.readings[index - 1]!.stats.find((stats) => stats.table === table)?.autovacuumRuns ?? 0)
        return String(runs - before)
      })
      .join(' / ')
  const sizeRows = written.map((table) => [
    `\`${table}\``,
    ...periods.map((period) => kib(totalAt(result, period, table))),
    changeCell(2, 3, totalAt(result, 2, table), totalAt(result, 3, table)),
    changeCell(3, 4, totalAt(result, 3, table), totalAt(result, 4, table)),
    vacuumsIn(table),
  ])
  const others = (period: number) => {
    const reading = result.readings[period - 1]!
    return summed(reading.sizes, (table) => !written.includes(table)).total
  }
  const unwritten = result.readings.at(-1)?.sizes.filter((size) => !written.includes(size.table)).length ?? 0
  sizeRows.push([
    `${unwritten} tables the run left as they were`,
    ...periods.map((period) => kib(others(period))),
    changeCell(2, 3, others(2), others(3)),
    changeCell(3, 4, others(3), others(4)),
    '',
  ])
  sizeRows.push([
    '**all**',
    ...periods.map((period) => `**${kib(allAt(result, period))}**`),
    `**${changeCell(2, 3, allAt(result, 2), allAt(result, 3))}**`,
    `**${changeCell(3, 4, allAt(result, 3), allAt(result, 4))}**`,
    '',
  ])
  const sizes = markdownTable(
    ['table (kB at each period\'s end)', ...periods.map((period) => `period ${period}`), '2 → 3', '3 → 4', 'autovacuum runs in each period'],
    sizeRows,
  )
  const partsOf = (period: number, table: string) => result.readings[period - 1]?.sizes.find((size) => size.table === table)
  const indexOf = (period: number, index: string) => result.readings[period - 1]?.indexes.find((entry) => entry.index === index)?.bytes ?? 0
  const grewMost = (table: string): string => {
    if (!canCompare(2, 3)) return '—'
    const grown = (result.readings[2]?.indexes ?? [])
      .filter((entry) => entry.table === table)
      .map((entry) => ({ index: entry.index, by: entry.bytes - indexOf(2, entry.index) }))
      .sort((a, b) => b.by - a.by)[0]
    return grown === undefined || grown.by <= 0 ? 'none grew' : `\`${grown.index}\` ${percent(change(indexOf(2, grown.index), indexOf(3, grown.index)))} (+${kib(grown.by)} kB)`
  }
  const partsTable = markdownTable(
    ['table (heap / indexes, kB)', ...periods.map((period) => `period ${period}`), 'index that grew most, 2 → 3'],
    written.map((table) => [
      `\`${table}\``,
      ...periods.map((period) => {
        const parts = partsOf(period, table)
        return parts === undefined ? '—' : `${kib(parts.heap)} / ${kib(parts.indexes)}`
      }),
      grewMost(table),
    ]),
  )
  const periodRows = result.readings.map((reading, index) => {
    const posted = reading.posted - (index === 0 ? 0 : result.readings[index - 1]!.posted)
    return [
      String(reading.period),
      reading.atSeconds.toFixed(0),
      thousands(posted),
      thousands(reading.sweep.tasks),
      thousands(reading.sweep.rows),
      `${reading.sweep.runs} (${reading.sweep.unfinished})`,
      reading.sweep.longestMs.toFixed(0),
      reading.sweep.inProgressMs === 0 ? '—' : (reading.sweep.inProgressMs / 1000).toFixed(1),
      String(reading.sweep.errors.length),
      thousands(reading.tasksKept),
      reading.backlogSeconds.toFixed(1),
      mib(summed(reading.sizes, () => true).total),
      thousands(summed(reading.sizes, () => true).total / reading.tasksKept),
    ]
  })
  const periodsTable = markdownTable(
    [
      'period',
      'ends at (s)',
      'triggers posted',
      'tasks deleted by the sweep',
      'rows deleted',
      'sweep runs (out of time)',
      'longest run ended (ms)',
      'run going at its end, for (s)',
      'failed runs',
      'tasks kept at its end',
      'conversation_trigger_retention_backlog_age_seconds at its end',
      'all tables (MiB)',
      'bytes per task kept',
    ],
    periodRows,
  )
  const perTask = bytesPerTaskKept(result)
  const steadyTasks = result.ratePerSecond * result.periodSeconds
  const maxBacklog = Math.max(...result.readings.map((reading) => reading.backlogSeconds))
  const failedRuns = result.readings.reduce((sum, reading) => sum + reading.sweep.errors.length, 0)
  const keptUp = keptUpWith(result)
  const notFlat =
    verdict.notFlat.length === 0
      ? 'every table written within it'
      : `not within it: ${verdict.notFlat.map((entry) => `\`${entry.table}\` ${percent(entry.change)} (${kib(totalAt(result, 2, entry.table))} to ${kib(totalAt(result, 3, entry.table))} kB)`).join(', ')}`
  const naptime = result.naptimeSetForRun
    ? `\`autovacuum_naptime\` set to ${result.autovacuumNaptime} for this run only (the server's default is 1 min, as production's): ${naptimeArgument(result)}.`
    : `\`autovacuum_naptime\` as the server has it (${result.autovacuumNaptime}, as production's). Compressing a day into ${result.periodSeconds} s does not compress autovacuum: in production a table is vacuumed when its dead rows pass its threshold (1,000 rows and a fiftieth of the live ones, migration 031), half an hour's deletions and rewrites for a day's history at this rate, beside which a minute's naptime is nothing; here the threshold is passed within seconds and the naptime alone bounds how often a table is vacuumed, so each table can carry a period's dead rows and rewrites beside its live ones: the sizes here are above what the same live rows take in production, and bytes per task kept is an upper bound.`
  return `
### Table sizes under steady load while history is deleted

Whether the tables level off once history is deleted as fast as it is written: the service's steady state.

Method:

- The same private PostgreSQL server, a fresh database, the service's two processes as above (CPU 0), the benchmark process on CPU 1. One organization with \`retention_days\` 1 (\`PATCH /admin/v1/organizations/{id}\`), the campaign and the endpoint above.
- Triggers posted at a steady ${result.ratePerSecond}/s (the i-th sent i / ${result.ratePerSecond} s after the first, by up to ${CLIENTS} clients; the latest was sent ${result.maxLateMs.toFixed(0)} ms behind its time, POST p99 ${result.intakeP99Ms.toFixed(0)} ms), ${thousands(result.posted)} in all over ${result.periods} retention periods of ${result.periodSeconds} s; ${result.distinctBodies === result.posted ? `${thousands(result.distinctBodies)} distinct bodies (bench/bodies.ts), each posted once` : `${thousands(result.distinctBodies)} distinct bodies (bench/bodies.ts) posted in turn${result.wrapped ? ', coming round again once all were posted (a body posted again names a person on file if their last task is still kept, and is a new one otherwise)' : ''}`}; ${result.refusals === 0 ? 'every POST answered 201' : `**${result.refusals} POSTs not answered 201**, e.g. ${result.refusalExamples.join('; ')}`}.
- A day compressed into ${result.periodSeconds} s: the benchmark process runs a \`HistorySweep\` (src/services/history.ts) of its own on the same database, its clock \`Date.now() + 1 day − ${result.periodSeconds} s\`, so that to it whatever completed more than ${result.periodSeconds} s ago is more than a day old; it runs \`sweep(${SWEEP_BUDGET_MS})\` every ${SWEEP_EVERY_MS / 1000} s, as a worker's dispatcher does (a tenth of a second each second, the service's own budget), and its reports are summed per period. It starts once the first \`task.completed\` has come (${result.sweepStartedAtSeconds.toFixed(1)} s after the first POST): a sweep that finds no event of an organization looks at it again a retention period from its own now, which for a clock a day ahead is a day late. The service's workers sweep too, by the real clock, and find nothing a day old. From ${result.periodSeconds} s on, history falls due as fast as it is written: a sweep that keeps up keeps about ${thousands(steadyTasks)} tasks.
- ${naptime}${result.sweepSessionOptions === undefined ? '' : `\n- **For diagnosis**, the benchmark's sweep's sessions run with \`${result.sweepSessionOptions}\` (the service's processes as they are): what the run does with that plan of the sweep's changed, not what the service does.`}
- At each period's end: every table's \`pg_total_relation_size\`, the rows of \`tasks\` (the tasks kept, whatever their status), autovacuum's runs (\`pg_stat_user_tables\`), and \`conversation_trigger_retention_backlog_age_seconds\` as the sweep's metrics show it after its last run (how long the oldest history due has waited: the sweep keeping up).

What the sweep did, and what was kept, period by period:

${periodsTable}

Each table the run wrote, at each period's end:

${sizes}

The same tables' heap and indexes (TOAST, a few kB, left out):

${partsTable}

Bytes per task kept at the end (all tables over the tasks kept): ${perTask === undefined ? '—' : thousands(perTask)}${keptUp ? '' : ' (not a steady state: the sweep did not keep up)'}. The sweep's backlog: at most ${maxBacklog.toFixed(1)} s at a period's end; ${failedRuns === 0 ? 'no run failed' : `**${failedRuns} runs failed** (${[...new Set(result.readings.flatMap((reading) => reading.sweep.errors))].join('; ')})`}${result.sweepWarnings.length === 0 ? '' : `, ${result.sweepWarnings.length} warnings logged`}: ${failedRuns === 0 ? '' : "the gauge is set when a run ends, so that runs that failed left it at the last value one set; "}the sweep ${keptUp ? `**kept up** (from the second period on, no backlog above ${KEPT_UP_BACKLOG_SECONDS} s at a period's end, no run failed, none going longer than a second at a period's end)` : '**did not keep up**'}. Webhooks: ${thousands(result.webhooksReceived)} of ${thousands(result.webhooksExpected)} arrived${result.allWebhooksArrived ? ' (all)' : ' (**not all**)'}, ${result.duplicates} duplicates; ${result.serviceLogProblems.length} service log lines at warn or above.

Target (the project's): ${verdict.goal} — ${verdict.measured}, **${verdict.met ? 'met' : 'not met'}**; ${notFlat}.${result.sweepSessionOptions === undefined ? '' : ` (A diagnostic run, the sweep's sessions with \`${result.sweepSessionOptions}\`: not the service's verdict.)`}
`
}

/** The growth section: both parts. */
export function growthSection(storage: StorageRuns | undefined, retention: RetentionRunResult | undefined): Section {
  const parts = [storage === undefined ? undefined : storageMarkdown(storage), retention === undefined ? undefined : retentionRunMarkdown(retention)]
  return {
    heading: 'Growth: what history keeps on disk',
    body: `What the service keeps on disk, on a PostgreSQL server with autovacuum on, as production runs one (bench/retentionRun.ts).\n${parts.filter((part) => part !== undefined).join('\n')}`,
  }
}
