/**
 * `npm run bench`: POST /api/v2/triggers throughput and p99 latency on
 * PostgreSQL and on PGlite, beside a bare Fastify route measured in the same
 * run, and the dispatcher's and the webhook deliverer's throughput on
 * PostgreSQL, printed and written to BENCHMARKS.md.
 *
 * Each server runs on CPU 0 and wrk on CPU 1, so that the load generator
 * does not take CPU from the server it measures. The three trigger targets
 * are measured in turn, round after round, and each round's ratio is taken
 * against the bare route's figure of that same round: a shared machine's
 * speed drifts by more over a minute than most changes are worth, and the
 * median of interleaved rounds stays put where one measurement of each does not.
 *
 * Environment: BENCH_ROUNDS (default 3), BENCH_DURATION (seconds measured
 * per target and round, default 10), BENCH_CONNECTIONS (default 64).
 */
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { type AddressInfo, createServer } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { CAMPAIGNS, generateBodies } from './bodies.ts'
import { hasExited, startChild, stopAllChildren, stopChild } from './children.ts'
import { postgresCpuSeconds, processCpuSeconds } from './cpu.ts'
import { benchDeliverer } from './deliverer.ts'
import { benchDispatcher } from './dispatcher.ts'
import {
  delivererSection,
  dispatcherSection,
  type Machine,
  machineSection,
  type Measured,
  renderReport,
  type RoundResult,
  roundsTextTable,
  textTable,
  triggerRows,
  triggerSection,
  type TriggerRow,
  type Verdict,
} from './report.ts'
import { failureOf, runWrk } from './wrk.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SERVER_CPU = 0
const WRK_CPU = 1
const WARM_UP_SECONDS = 5
const BODY_COUNT = 3000
const DISPATCHER_TASKS = 10_000
const DELIVERIES = 5_000
/** Bodies posted at once when checking that every one gets 201. */
const VERIFY_CONCURRENCY = 16
/** PGlite's first start initialises its data directory, which takes seconds. */
const READY_TIMEOUT_MS = 60_000
const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
const OPERATOR_TOKEN = `bench-operator-${randomBytes(16).toString('hex')}`

/** What the project holds itself to, at 64 connections. */
const GOALS = [
  { target: 'PostgreSQL', minRatio: 0.5, maxP99Ms: 25 },
  { target: 'PGlite', minRatio: 0.2, maxP99Ms: undefined },
]

interface Load {
  bodies: string[]
  bodiesFile: string
  rounds: number
  durationSeconds: number
  connections: number
}

interface Server {
  /** As the report names the target. */
  name: string
  /** The name in lower case, for file names and request ids. */
  label: string
  child: ChildProcess
  baseUrl: string
  logFile: string
}

async function main(workDir: string): Promise<void> {
  const rounds = positiveInteger('BENCH_ROUNDS', 3)
  const durationSeconds = positiveInteger('BENCH_DURATION', 10)
  const connections = positiveInteger('BENCH_CONNECTIONS', 64)
  const bodySet = generateBodies(BODY_COUNT)
  const bodiesFile = path.join(workDir, 'bodies.ndjson')
  await writeFile(bodiesFile, `${bodySet.bodies.join('\n')}\n`)
  const load: Load = { bodies: bodySet.bodies, bodiesFile, rounds, durationSeconds, connections }
  log(
    `${bodySet.bodies.length} bodies; ${rounds} rounds of ${durationSeconds} s measured per target, after ${WARM_UP_SECONDS} s of warm-up, ${connections} connections`,
  )

  const { result: measured, version, synchronousCommit } = await withPostgresDatabase(async (databaseUrl, info) => ({
    ...info,
    result: await benchTriggers(load, workDir, databaseUrl),
  }))
  log(`dispatcher: ${DISPATCHER_TASKS} due tasks`)
  const dispatcher = await withPostgresDatabase((databaseUrl) =>
    benchDispatcher({
      databaseUrl,
      tasks: DISPATCHER_TASKS,
      root: ROOT,
      cpu: SERVER_CPU,
      logFile: path.join(workDir, 'dispatcher.log'),
      timeoutMs: 300_000,
    }),
  )

  log(`deliverer: ${DELIVERIES} webhook deliveries`)
  const deliverer = await withPostgresDatabase((databaseUrl) =>
    benchDeliverer({
      databaseUrl,
      deliveries: DELIVERIES,
      root: ROOT,
      cpu: SERVER_CPU,
      logFile: path.join(workDir, 'deliverer.log'),
      timeoutMs: 300_000,
    }),
  )

  const rows = triggerRows(measured)
  const verdicts = GOALS.map((goal) => verdictFor(goal, rows.find((row) => row.target === goal.target)!))
  process.stdout.write(`\n${textTable(rows)}\n\n${roundsTextTable(measured)}\n\n${verdicts.map((v) => `${v.target}: ${v.goal}: ${v.met ? 'met' : 'NOT MET'}`).join('\n')}\n`)
  process.stdout.write(`\ndispatcher: ${DISPATCHER_TASKS} tasks started in ${dispatcher.seconds.toFixed(2)} s, ${Math.round(dispatcher.tasksPerSecond)} per second\n`)
  process.stdout.write(`deliverer: ${DELIVERIES} webhooks delivered in ${deliverer.seconds.toFixed(2)} s, ${Math.round(deliverer.deliveriesPerSecond)} per second\n`)

  const machine = await describeMachine(version, synchronousCommit)
  const method = {
    rounds,
    durationSeconds,
    warmUpSeconds: WARM_UP_SECONDS,
    connections,
    bodies: bodySet.bodies.length,
    countries: bodySet.countries,
    distinctNumbers: bodySet.distinctNumbers,
    phoneFormats: bodySet.phoneFormats,
  }
  const report = renderReport([
    machineSection(machine),
    triggerSection(method, rows, measured, verdicts),
    dispatcherSection({ tasks: DISPATCHER_TASKS }, dispatcher),
    delivererSection(deliverer),
  ])
  await writeFile(path.join(ROOT, 'BENCHMARKS.md'), report)
  log('wrote BENCHMARKS.md')
}

function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^[1-9]\d*$/.test(raw)) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

function verdictFor(goal: (typeof GOALS)[number], row: TriggerRow): Verdict {
  const ratioMet = row.ratio! >= goal.minRatio
  if (goal.maxP99Ms === undefined) return { target: goal.target, goal: `at least ${goal.minRatio} of the bare route's throughput`, met: ratioMet }
  return {
    target: goal.target,
    goal: `at least ${goal.minRatio} of the bare route's throughput, p99 under ${goal.maxP99Ms} ms`,
    met: ratioMet && row.result.latencyMs.p99 < goal.maxP99Ms,
  }
}

/** A server ready to be measured, with the key its requests carry. */
interface Target {
  server: Server
  apiKey: string
  /** Whether it stores its triggers on PostgreSQL, whose CPU then counts towards its requests'. */
  usesPostgres: boolean
}

/**
 * The three targets started side by side (each idle while another is
 * measured), each warmed up, then measured in turn, round after round.
 */
async function benchTriggers(load: Load, workDir: string, databaseUrl: string): Promise<Measured> {
  const targets: Target[] = []
  try {
    targets.push(await startBare(load, workDir))
    targets.push(await startService('PostgreSQL', { DATABASE_URL: databaseUrl }, load, workDir))
    targets.push(await startService('PGlite', { DATA_DIR: path.join(workDir, 'pglite') }, load, workDir))
    for (const target of targets) await measureOnce(target, load, 'warm-up', WARM_UP_SECONDS)
    const measured: Measured = targets.map((target) => ({ target: target.server.name, results: [] }))
    for (let round = 1; round <= load.rounds; round++) {
      for (const [index, target] of targets.entries()) {
        measured[index]!.results.push(await measureOnce(target, load, `round-${round}`, load.durationSeconds))
      }
    }
    return measured
  } finally {
    await Promise.all(targets.map((target) => stopChild(target.server.child)))
  }
}

async function startBare(load: Load, workDir: string): Promise<Target> {
  const server = await startServer('bare', ['bench/bareServer.ts'], {}, workDir)
  try {
    // The bare route answers anything; one post is enough to know it listens.
    await waitUntilReady(server, async () => (await postTrigger(server.baseUrl, 'none', load.bodies[0]!, 'bare-ready')).status === 201)
    return { server, apiKey: 'none', usesPostgres: false }
  } catch (error) {
    await stopChild(server.child)
    throw error
  }
}

/** The service on a fresh database: provisioned, and every body checked. */
async function startService(name: string, env: Record<string, string>, load: Load, workDir: string): Promise<Target> {
  // The API alone, as API processes run beside worker processes; the dispatcher is measured on its own.
  const server = await startServer(name, ['src/cli.ts', 'serve', '--no-workers'], { ...env, OPERATOR_TOKEN, LOG_LEVEL: 'info' }, workDir)
  try {
    const started = Date.now()
    await waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
    log(`${name}: ready after ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const apiKey = await provision(server.baseUrl)
    await verifyBodies(server, apiKey, load.bodies)
    log(`${name}: all ${load.bodies.length} bodies answered 201`)
    return { server, apiKey, usesPostgres: env.DATABASE_URL !== undefined }
  } catch (error) {
    await stopChild(server.child)
    throw error
  }
}

/** Starts a server pinned to its CPU, its output (the request log) going to a file. */
async function startServer(name: string, args: string[], env: Record<string, string>, workDir: string): Promise<Server> {
  const label = name.toLowerCase()
  const port = await freePort()
  const logFile = path.join(workDir, `${label}.log`)
  const output = openSync(logFile, 'w')
  try {
    const child = startChild('taskset', ['-c', String(SERVER_CPU), process.execPath, '--import', 'tsx', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', output, output],
    })
    return { name, label, child, baseUrl: `http://127.0.0.1:${port}`, logFile }
  } finally {
    closeSync(output)
  }
}

/** A port nothing listens on now, as the system picks one. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

async function waitUntilReady(server: Server, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (hasExited(server.child)) throw new Error(`the server exited before it was ready:\n${await tail(server.logFile)}`)
    if (await probe().catch(() => false)) return
    await sleep(250)
  }
  throw new Error(`the server was not ready after ${READY_TIMEOUT_MS / 1000} s:\n${await tail(server.logFile)}`)
}

/** One wrk run against the target, with the CPU it cost; fails on any non-2xx response or socket error. */
async function measureOnce({ server, apiKey, usesPostgres }: Target, load: Load, phase: string, durationSeconds: number): Promise<RoundResult> {
  log(`${server.name}: ${phase}, ${durationSeconds} s`)
  const serverCpuBefore = processCpuSeconds(server.child.pid!)
  const postgresCpuBefore = usesPostgres ? postgresCpuSeconds() : 0
  const result = await runWrk({
    url: `${server.baseUrl}/api/v2/triggers`,
    cpu: WRK_CPU,
    durationSeconds,
    connections: load.connections,
    bodiesFile: load.bodiesFile,
    apiKey,
    label: `${server.label}-${phase}`,
  })
  const failure = failureOf(result)
  if (failure !== undefined) {
    throw new Error(`${server.name} ${phase} failed: ${failure}\n${result.output}\nserver log:\n${await tail(server.logFile)}`)
  }
  const perRequest = (seconds: number) => (seconds * 1e6) / result.requests
  return {
    ...result,
    cpuUsPerRequest: {
      server: perRequest(processCpuSeconds(server.child.pid!) - serverCpuBefore),
      postgres: usesPostgres ? perRequest(postgresCpuSeconds() - postgresCpuBefore) : undefined,
    },
  }
}

/** One organization, its API key and the campaigns the bodies name, through the admin API. */
async function provision(baseUrl: string): Promise<string> {
  const org = await adminPost(baseUrl, '/admin/v1/organizations', { name: 'Bench Org' })
  const orgPath = `/admin/v1/organizations/${org.data.id}`
  const key = await adminPost(baseUrl, `${orgPath}/api-keys`, { name: 'bench' })
  for (const campaign of CAMPAIGNS) await adminPost(baseUrl, `${orgPath}/campaigns`, campaign)
  return key.data.key as string
}

async function adminPost(baseUrl: string, route: string, body: unknown): Promise<{ data: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST ${route} answered ${response.status}: ${text}`)
  return JSON.parse(text)
}

/**
 * Posts every body once and requires a 201 with the envelope: an invalid
 * body would otherwise be answered 422, cheaply, and flatter the figures.
 */
async function verifyBodies(server: Server, apiKey: string, bodies: readonly string[]): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < bodies.length) {
      const index = next++
      const requestId = `${server.label}-verify-${index}`
      const response = await postTrigger(server.baseUrl, apiKey, bodies[index]!, requestId)
      const text = await response.text()
      const reply = response.status === 201 ? JSON.parse(text) : undefined
      if (reply?.data?.status !== 'accepted' || reply.metadata?.request_id !== requestId) {
        throw new Error(`body ${index} was answered ${response.status} ${text}\nbody: ${bodies[index]}`)
      }
    }
  }
  await Promise.all(Array.from({ length: VERIFY_CONCURRENCY }, worker))
}

function postTrigger(baseUrl: string, apiKey: string, body: string, requestId: string): Promise<Response> {
  return fetch(`${baseUrl}/api/v2/triggers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body,
  })
}

/** A throw-away PostgreSQL database for one run, dropped afterwards whatever happens. */
async function withPostgresDatabase<T>(
  work: (databaseUrl: string, info: { version: string; synchronousCommit: string }) => Promise<T>,
): Promise<T> {
  const name = `bench_${Date.now()}`
  const info = await onPostgres(async (client) => {
    await client.query(`CREATE DATABASE ${name}`)
    const version = (await client.query<{ version: string }>('SELECT version()')).rows[0]!.version
    const synchronousCommit = (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit
    return { version, synchronousCommit }
  })
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  try {
    return await work(url.toString(), info)
  } finally {
    // FORCE: a server killed mid-run may leave connections that would block the drop.
    await onPostgres((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}

async function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function describeMachine(postgres: string, synchronousCommit: string): Promise<Machine> {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8')
  const meminfo = await readFile('/proc/meminfo', 'utf8')
  return {
    date: new Date(),
    cpus: availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? 'unknown',
    memoryGiB: Number(/^MemTotal:\s+(\d+) kB$/m.exec(meminfo)?.[1] ?? 0) / 1024 / 1024,
    node: process.version,
    postgres,
    synchronousCommit,
  }
}

async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function log(message: string) {
  process.stderr.write(`[bench] ${message}\n`)
}

/**
 * Ctrl-C stops the servers and wrk; the step that was waiting on them then
 * fails, and the clean-up on its way out drops the database and the temp
 * directory. Further signals are ignored meanwhile: one Ctrl-C often arrives
 * twice (from the terminal and relayed by tsx), and an exit halfway through
 * the clean-up would leave the database behind.
 */
let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return
    interrupted = true
    log(`${signal}: stopping the servers and cleaning up`)
    void stopAllChildren()
  })
}

const workDir = await mkdtemp(path.join(tmpdir(), 'trigger-bench-'))
try {
  await main(workDir)
} catch (error) {
  log(interrupted ? 'interrupted' : `FAILED: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = interrupted ? 130 : 1
} finally {
  await stopAllChildren()
  await rm(workDir, { recursive: true, force: true })
}
