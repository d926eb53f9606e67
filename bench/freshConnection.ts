/**
 * A new client beside a steady load: how long the first request on a fresh
 * connection waits while 32 clients keep the service busy on kept-alive
 * connections.
 *
 * The service runs as `npm start` runs it (one `serve` process, API and
 * workers), on the embedded database and on PostgreSQL. wrk posts triggers
 * on 32 connections to campaigns whose calls are due at once and complete as
 * they start, so the workers dispatch and settle all along. This process
 * opens one connection 200 ms after wrk's 32 arrived together, and then,
 * from 3 s on, a new connection every 50 ms; on each it posts one trigger
 * and closes it, timed from the connect to the last byte of the answer.
 */
import http from 'node:http'
import { CAMPAIGNS } from './bodies.ts'
import { stopChild } from './children.ts'
import { ALWAYS_OPEN } from './dispatcher.ts'
import { LOAD_CPU, log, OPERATOR_TOKEN, percentile, PHONE_HASH_KEY, postTriggerWith, provision, sleep, startServer, waitUntilReady, withPostgresDatabase } from './harness.ts'
import { failureOf, runWrk } from './wrk.ts'

const CLIENTS = 32
const PROBE_EVERY_MS = 50
/** The load's own connections arrive together at its start; one probe follows them this long after, and the steady probes begin at STEADY_AFTER_S. */
const AFTER_THE_LOAD_MS = 200
const STEADY_AFTER_S = 3

export interface FreshConnectionResult {
  name: string
  probes: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** The first request of a connection made just after the load's 32 (one probe, AFTER_THE_LOAD_MS after its start). */
  afterTheLoadMs: number
  /** The kept-alive clients' rate and p99 meanwhile. */
  load: { requestsPerSecond: number; p99Ms: number }
}

/** The project's goal: on the embedded database, a new client's first request answered within 250 ms, at the 99th percentile. */
export function freshConnectionVerdict(results: readonly FreshConnectionResult[]): { goal: string; measured: string; met: boolean } {
  const embedded = results.find((result) => result.name.startsWith('PGlite'))!
  return { goal: `${embedded.name}: a fresh connection's first request, p99 under 250 ms`, measured: `${embedded.p99Ms.toFixed(0)} ms`, met: embedded.p99Ms < 250 }
}

export interface FreshConnectionMethod {
  clients: number
  seconds: number
  probeEveryMs: number
  afterTheLoadMs: number
  steadyAfterSeconds: number
}

/** The bench's campaigns, always open and completing at once, so that the workers have work all along. */
const BUSY_CAMPAIGNS = CAMPAIGNS.map((campaign) => ({
  ...campaign,
  schedule: ALWAYS_OPEN,
  provider_config: { outcomes: [campaign.channel === 'voice' ? 'completed' : 'replied'], duration_ms: 0 },
}))

/** The method of a run that times new connections for `seconds`, as the report describes it. */
export function freshConnectionMethod(seconds: number): FreshConnectionMethod {
  return { clients: CLIENTS, seconds, probeEveryMs: PROBE_EVERY_MS, afterTheLoadMs: AFTER_THE_LOAD_MS, steadyAfterSeconds: STEADY_AFTER_S }
}

export async function measureFreshConnections(
  workDir: string,
  load: { bodies: readonly string[]; bodiesFile: string },
  seconds: number,
): Promise<FreshConnectionResult[]> {
  const embedded = await measureLayout('PGlite, one process', {}, workDir, load, seconds)
  const postgres = await withPostgresDatabase((databaseUrl) => measureLayout('PostgreSQL, one process', { DATABASE_URL: databaseUrl }, workDir, load, seconds))
  return [embedded, postgres]
}

async function measureLayout(
  name: string,
  env: Record<string, string>,
  workDir: string,
  load: { bodies: readonly string[]; bodiesFile: string },
  seconds: number,
): Promise<FreshConnectionResult> {
  const label = `fresh-${name.split(',')[0]!.toLowerCase()}`
  const server = await startServer(label, ['dist/cli.js', 'serve'], { ...env, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'info', DATA_DIR: `${workDir}/${label}` }, workDir)
  try {
    await waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
    const { apiKey } = await provision(server.baseUrl, BUSY_CAMPAIGNS)
    log(`${name}: ${CLIENTS} clients for ${STEADY_AFTER_S + seconds} s; after ${STEADY_AFTER_S} s, a fresh connection every ${PROBE_EVERY_MS} ms`)
    const wrk = runWrk({
      url: `${server.baseUrl}/api/v2/triggers`,
      cpu: LOAD_CPU,
      durationSeconds: STEADY_AFTER_S + seconds,
      connections: CLIENTS,
      bodiesFile: load.bodiesFile,
      apiKey,
      label,
    })
    await sleep(AFTER_THE_LOAD_MS)
    const afterTheLoadMs = await postOnFreshConnection(server.baseUrl, apiKey, load.bodies[0]!, `${label}-after-the-load`)
    await sleep(STEADY_AFTER_S * 1000 - AFTER_THE_LOAD_MS - afterTheLoadMs)
    const latencies: number[] = []
    const until = performance.now() + seconds * 1000
    for (let probe = 0; performance.now() < until; probe++) {
      latencies.push(await postOnFreshConnection(server.baseUrl, apiKey, load.bodies[probe % load.bodies.length]!, `${label}-probe-${probe}`))
      await sleep(PROBE_EVERY_MS)
    }
    const loaded = await wrk
    const failure = failureOf(loaded)
    if (failure !== undefined) throw new Error(`${name}: the load failed: ${failure}`)
    const measured = Float64Array.from(latencies)
    return {
      name,
      probes: measured.length,
      p50Ms: percentile(measured, 50),
      p99Ms: percentile(measured, 99),
      maxMs: percentile(measured, 100),
      afterTheLoadMs,
      load: { requestsPerSecond: loaded.requestsPerSecond, p99Ms: loaded.latencyMs.p99 },
    }
  } finally {
    await stopChild(server.child)
  }
}

/** Without keep-alive: each request on a connection of its own, closed after the answer. */
const FRESH_CONNECTIONS = new http.Agent({ keepAlive: false })

/** One POST on a connection of its own, from the connect to the answer's last byte; fails on anything but a 201. */
async function postOnFreshConnection(baseUrl: string, apiKey: string, body: string, requestId: string): Promise<number> {
  const started = performance.now()
  const answer = await postTriggerWith(FRESH_CONNECTIONS, new URL('/api/v2/triggers', baseUrl), apiKey, body, requestId)
  if (answer.status !== 201) throw new Error(`a fresh connection's POST got ${answer.status}: ${answer.text}`)
  return performance.now() - started
}
