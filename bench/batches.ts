/**
 * Triggers sent in batches (POST /api/v2/triggers/batch) beside the same
 * triggers sent one request each, on one API process and one PostgreSQL
 * database: what a client that thinks in lists gains, in triggers per
 * second and in the CPU each trigger costs the server and PostgreSQL.
 */
import http from 'node:http'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { LOAD_CPU, log, percentile, pinnedTo, postTriggerWith, type Server } from './harness.ts'

/** Triggers per batch request. */
export const BATCH_SIZE = 500
/** Batch requests in flight at once: one being read and checked while another commits, and two more queued. */
export const BATCH_CLIENTS = 4

/** One timed run of batch requests. */
export interface BatchRun {
  triggersPerSecond: number
  requests: number
  triggers: number
  /** Per batch request, from its first byte sent to its last byte read. */
  latencyMs: { p50: number; p99: number }
  cpuUsPerTrigger: { server: number; postgres: number; client: number }
}

/** The single-trigger bodies, `BATCH_SIZE` at a time, as batch request bodies: every one of them, so that both ways post the same. */
export function batchBodies(bodies: readonly string[]): string[] {
  if (bodies.length === 0 || bodies.length % BATCH_SIZE !== 0) throw new Error(`batches of ${BATCH_SIZE} cannot take all of ${bodies.length} bodies`)
  const batches: string[] = []
  for (let start = 0; start < bodies.length; start += BATCH_SIZE) batches.push(`{"triggers":[${bodies.slice(start, start + BATCH_SIZE).join(',')}]}`)
  return batches
}

/**
 * Posts the batches over and over for `seconds` from `BATCH_CLIENTS` kept-alive
 * connections, from CPU 1, and requires every trigger of every answer to be a
 * 201: an answer of 422s would be cheap and flatter the figures.
 */
export async function measureBatches(
  server: Server,
  apiKey: string,
  database: string,
  batches: readonly string[],
  phase: string,
  seconds: number,
): Promise<BatchRun> {
  log(`${server.name}: batches of ${BATCH_SIZE}, ${phase}, ${seconds} s`)
  const url = new URL('/api/v2/triggers/batch', server.baseUrl)
  const agent = new http.Agent({ keepAlive: true, maxSockets: BATCH_CLIENTS })
  const latencies: number[] = []
  let triggers = 0
  let next = 0
  const serverCpuBefore = processCpuSeconds(server.child.pid!)
  const postgresCpu = meterPostgresCpu(database)
  const clientCpu = process.cpuUsage()
  const started = performance.now()
  const deadline = started + seconds * 1000
  const client = async (id: number) => {
    while (performance.now() < deadline) {
      const body = batches[next++ % batches.length]!
      const sent = performance.now()
      const { status, text } = await postTriggerWith(agent, url, apiKey, body, `${server.label}-${phase}-${id}-${latencies.length}`)
      latencies.push(performance.now() - sent)
      const results = status === 200 ? (JSON.parse(text).data as { status: number }[]) : []
      const refused = results.find((result) => result.status !== 201)
      if (status !== 200 || results.length !== BATCH_SIZE || refused !== undefined) {
        throw new Error(`a batch was answered ${status}: ${refused === undefined ? text.slice(0, 500) : JSON.stringify(refused)}`)
      }
      triggers += results.length
    }
  }
  try {
    await pinnedTo(LOAD_CPU, () => Promise.all(Array.from({ length: BATCH_CLIENTS }, (_, id) => client(id))))
  } finally {
    agent.destroy()
  }
  const elapsedSeconds = (performance.now() - started) / 1000
  const serverCpu = processCpuSeconds(server.child.pid!) - serverCpuBefore
  const postgresSeconds = postgresCpu.stop()
  const { user, system } = process.cpuUsage(clientCpu)
  const sorted = Float64Array.from(latencies)
  return {
    triggersPerSecond: triggers / elapsedSeconds,
    requests: latencies.length,
    triggers,
    latencyMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99) },
    cpuUsPerTrigger: { server: (serverCpu * 1e6) / triggers, postgres: (postgresSeconds * 1e6) / triggers, client: (user + system) / triggers },
  }
}
