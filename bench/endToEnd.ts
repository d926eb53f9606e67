/**
 * End to end: the whole pipeline at once, from the first POST
 * /api/v2/triggers until every webhook of every trigger has reached the
 * client: intake, dispatch, the simulated call, its settlement with its two
 * events, and their delivery.
 *
 * The triggers are posted by CLIENTS concurrent clients on kept-alive
 * connections, to a simulator campaign whose calls complete as soon as they
 * start, in a window open all week; the organization's one webhook endpoint
 * points to a receiver in this process that answers 200 at once. Each trigger
 * ends in one task.completed and one interaction.finalized, each with a
 * webhook-id of its own, and the run ends when the receiver holds all of them.
 *
 * Two layouts: on PostgreSQL an API process (`serve --no-workers`) beside a
 * worker process (`worker`), as production runs; and the embedded default,
 * one `serve` process on PGlite that runs the workers too. Each is warmed up,
 * then measured in rounds of its own triggers, one after the other in the
 * same service; the figures are the medians of the rounds, since on a shared
 * machine one round's CPU per trigger can be a third above or below the next
 * one's. Every process's /metrics is scraped while the first triggers are
 * posted and at the end, and checked against what the run did (bench/metrics.ts).
 */
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { generateBodies } from './bodies.ts'
import { hasExited, stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { ALWAYS_OPEN } from './dispatcher.ts'
import { type MetricsReading, readMetrics, type Scrape, scrapeService } from './metrics.ts'
import {
  LOAD_CPU,
  log,
  OPERATOR_TOKEN,
  PHONE_HASH_KEY,
  postCreating,
  provision,
  type Server,
  median,
  percentile,
  pinnedTo,
  postTriggerWith,
  sleep,
  startServer,
  tail,
  waitUntilReady,
  withPostgresDatabase,
} from './harness.ts'

/** Concurrent clients posting the triggers, each on a connection it keeps. */
export const CLIENTS = 32
/** How long a layout may take from the first POST to the last webhook before it is reported as it stands. */
export const WEBHOOKS_TIMEOUT_SECONDS = 600
const PROGRESS_EVERY_MS = 15_000
/** When /metrics is scraped under load: this long after the first triggers are posted, while they still are. */
export const SCRAPE_UNDER_LOAD_AFTER_MS = 1_000
/** The endpoint's subscription: each trigger ends in one event of each type. */
const EVENT_TYPES = ['task.completed', 'interaction.finalized'] as const
type EventType = (typeof EVENT_TYPES)[number]

/** Every task is due at once, and its call completes as soon as it starts. */
export const CAMPAIGN = {
  routing_key: 'end-to-end',
  channel: 'voice',
  schedule: ALWAYS_OPEN,
  provider: 'simulator',
  provider_config: { outcomes: ['completed'], duration_ms: 0 },
}

interface Layout {
  name: string
  /** The service's processes; the first one serves the API. Each serves /readyz and /metrics. */
  processes: { name: string; args: string[] }[]
}

export const POSTGRES_LAYOUT: Layout = {
  name: 'PostgreSQL, API process + worker process',
  processes: [
    { name: 'e2e API', args: ['dist/cli.js', 'serve', '--no-workers'] },
    { name: 'e2e worker', args: ['dist/cli.js', 'worker'] },
  ],
}

export const EMBEDDED_LAYOUT: Layout = {
  name: 'PGlite, one process (API and workers)',
  processes: [{ name: 'e2e embedded', args: ['dist/cli.js', 'serve'] }],
}

/** One measured round: its triggers, posted after the last round's webhooks had all arrived, until their own had. */
export interface EndToEndRound {
  /** Whether every webhook arrived, and if not, why the wait ended. */
  outcome: 'complete' | 'timed out' | 'a service process exited'
  /** From the first POST sent to the last webhook expected, or to the moment the wait ended. */
  seconds: number
  /** From the first POST sent to the last answered, and the POSTs' latency (sent to answer read). */
  intake: { seconds: number; p50Ms: number; p99Ms: number }
  /** Milliseconds of CPU per trigger: the service's processes together, and PostgreSQL's for a layout on it; for a complete run only. */
  cpuMsPerTrigger: {
    service: number | undefined
    /** The service's figure split by process, by the process's name. */
    byProcess: { name: string; ms: number }[] | undefined
    postgres: number | undefined
  }
  /** Distinct webhook-ids of the round's triggers received by its end. */
  webhooksReceived: number
}

export interface EndToEndResult {
  layout: string
  /** Triggers posted in each round. */
  triggers: number
  /** In order; they stop at the first that does not complete. */
  rounds: EndToEndRound[]
  /** The median of each figure over the rounds when every one completed; otherwise the round that did not. */
  summary: EndToEndRound
  /** Of each round. */
  webhooksExpected: number
  /** webhook-ids received more than once, up to the service's shutdown. */
  duplicateWebhooks: number
  /** Log lines of the service's processes at warn level or above, or not written by its logger. */
  serviceLogProblems: string[]
  /** /metrics of every process, under load and at the end, checked against the run. */
  metrics: MetricsReading
}

/** The layouts `npm run bench` measures end to end, by the names BENCH_E2E_LAYOUTS takes. */
export const END_TO_END_LAYOUTS = ['postgres', 'embedded'] as const
export type EndToEndLayoutName = (typeof END_TO_END_LAYOUTS)[number]

/** The layouts named, in turn, with this process (clients and receiver) on LOAD_CPU. */
export async function benchEndToEnd(options: {
  /** Triggers posted in each measured round. */
  triggers: number
  rounds: number
  /** Triggers taken through the whole pipeline before the measured ones, so that what is measured is a running service's steady state. */
  warmUpTriggers: number
  layouts: readonly EndToEndLayoutName[]
  workDir: string
}): Promise<EndToEndResult[]> {
  const all = triggerBodies(options.warmUpTriggers + options.rounds * options.triggers)
  const bodies = {
    warmUp: all.slice(0, options.warmUpTriggers),
    rounds: Array.from({ length: options.rounds }, (_, round) => {
      const start = options.warmUpTriggers + round * options.triggers
      return all.slice(start, start + options.triggers)
    }),
  }
  const run = {
    postgres: () => withPostgresDatabase((databaseUrl) => runLayout(POSTGRES_LAYOUT, { DATABASE_URL: databaseUrl }, bodies, options.workDir)),
    embedded: () => runLayout(EMBEDDED_LAYOUT, { DATA_DIR: path.join(options.workDir, 'e2e-pglite') }, bodies, options.workDir),
  }
  return pinnedTo(LOAD_CPU, async () => {
    const results: EndToEndResult[] = []
    for (const layout of options.layouts) results.push(await run[layout]())
    return results
  })
}

/** The trigger benchmark's bodies (each a person of its own), sent to this campaign; one that names a channel names its channel. */
function triggerBodies(count: number): string[] {
  return generateBodies(count).bodies.map((text) => {
    const body = JSON.parse(text)
    body.campaign = CAMPAIGN.routing_key
    if ('channel' in body) body.channel = CAMPAIGN.channel
    return JSON.stringify(body)
  })
}

/** The warm-up's bodies and each measured round's, each a person of their own. */
interface Bodies {
  warmUp: readonly string[]
  rounds: readonly (readonly string[])[]
}

async function runLayout(layout: Layout, databaseEnv: Record<string, string>, bodies: Bodies, workDir: string): Promise<EndToEndResult> {
  const receiver = await startReceiver()
  const servers: Server[] = []
  let rounds: EndToEndRound[]
  let metrics: MetricsReading
  try {
    const env = { ...databaseEnv, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'info', ALLOW_PRIVATE_WEBHOOK_URLS: 'true' }
    for (const { name, args } of layout.processes) servers.push(await startServer(name, args, env, workDir))
    await Promise.all(servers.map(untilReady))
    let underLoad: Scrape
    ;({ rounds, underLoad } = await measure(layout, databaseEnv.DATABASE_URL, servers, receiver, bodies))
    const posted = bodies.warmUp.length + rounds.length * bodies.rounds[0]!.length
    metrics = readMetrics(underLoad, await scrapeService(servers), { posted, onPostgres: databaseEnv.DATABASE_URL !== undefined })
  } finally {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    await receiver.close()
  }
  // Read once the service has stopped, so that a webhook sent again up to its shutdown counts, and so does a problem on its way out.
  const serviceLogProblems = (await Promise.all(servers.map(logProblems))).flat()
  for (const line of serviceLogProblems.slice(0, 5)) log(`${layout.name}: in the service's log: ${line}`)
  for (const problem of metrics.problems) log(`${layout.name}: /metrics: ${problem}`)
  const triggers = bodies.rounds[0]!.length
  return {
    layout: layout.name,
    triggers,
    rounds,
    summary: summarize(rounds),
    webhooksExpected: 2 * triggers,
    duplicateWebhooks: receiver.duplicates(),
    serviceLogProblems,
    metrics,
  }
}

/** The median of each figure over rounds that all completed; the one that did not, otherwise (it is the last). */
function summarize(rounds: readonly EndToEndRound[]): EndToEndRound {
  const incomplete = rounds.find((round) => round.outcome !== 'complete')
  if (incomplete !== undefined) return incomplete
  const of = (figure: (round: EndToEndRound) => number) => median(rounds.map(figure))
  const first = rounds[0]!.cpuMsPerTrigger
  return {
    outcome: 'complete',
    seconds: of((round) => round.seconds),
    intake: { seconds: of((round) => round.intake.seconds), p50Ms: of((round) => round.intake.p50Ms), p99Ms: of((round) => round.intake.p99Ms) },
    cpuMsPerTrigger: {
      service: of((round) => round.cpuMsPerTrigger.service!),
      byProcess: first.byProcess!.map(({ name }, index) => ({ name, ms: of((round) => round.cpuMsPerTrigger.byProcess![index]!.ms) })),
      postgres: first.postgres === undefined ? undefined : of((round) => round.cpuMsPerTrigger.postgres!),
    },
    webhooksReceived: of((round) => round.webhooksReceived),
  }
}

/**
 * Provisions the organization, warms the service up, then measures the rounds in turn, up to the first that
 * does not complete; with /metrics of every process as scraped while the first triggers were being posted.
 */
async function measure(
  layout: Layout,
  /** Where the service keeps its data when that is PostgreSQL, whose CPU then counts towards the triggers'. */
  databaseUrl: string | undefined,
  servers: readonly Server[],
  receiver: Receiver,
  bodies: Bodies,
): Promise<{ rounds: EndToEndRound[]; underLoad: Scrape }> {
  const api = servers[0]!
  const { apiKey } = await provision(api.baseUrl, [CAMPAIGN], ['triggers:write', 'webhooks:manage'])
  await postCreating(api.baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiver.url, events: EVENT_TYPES })
  // Taken during the warm-up when there is one, so that the measured rounds pay nothing for it.
  const underLoad = sleep(SCRAPE_UNDER_LOAD_AFTER_MS).then(() => scrapeService(servers))

  let triggersSoFar = 0
  if (bodies.warmUp.length > 0) {
    log(`${layout.name}: warming up with ${bodies.warmUp.length} triggers`)
    const warmUp = await postEvery(layout, api, apiKey, bodies.warmUp, 'warm-up')
    triggersSoFar += bodies.warmUp.length
    const warmedUp = await untilAllDelivered(layout, receiver, triggersSoFar, warmUp.startedAt, servers)
    if (warmedUp !== 'complete') throw new Error(`${layout.name}: the warm-up ended with ${warmedUp}`)
  }
  const rounds: EndToEndRound[] = []
  for (const [index, roundBodies] of bodies.rounds.entries()) {
    const phase = `round ${index + 1} of ${bodies.rounds.length}`
    log(`${layout.name}: ${phase}, ${roundBodies.length} triggers from ${CLIENTS} clients`)
    const round = await measureRound(layout, databaseUrl, servers, receiver, { apiKey, bodies: roundBodies, triggersBefore: triggersSoFar, phase })
    triggersSoFar += roundBodies.length
    rounds.push(round)
    if (round.outcome !== 'complete') break
  }
  return { rounds, underLoad: await underLoad }
}

async function measureRound(
  layout: Layout,
  databaseUrl: string | undefined,
  servers: readonly Server[],
  receiver: Receiver,
  round: { apiKey: string; bodies: readonly string[]; triggersBefore: number; phase: string },
): Promise<EndToEndRound> {
  const api = servers[0]!
  const { bodies } = round
  const cpuBefore = servers.map((server) => processCpuSeconds(server.child.pid!))
  const postgresCpu = databaseUrl === undefined ? undefined : meterPostgresCpu(new URL(databaseUrl).pathname.slice(1))
  const intake = await postEvery(layout, api, round.apiKey, bodies, round.phase.replaceAll(' ', '-'))
  log(`${layout.name}: all answered 201 in ${intake.seconds.toFixed(1)} s; waiting for ${2 * bodies.length} webhooks`)
  const outcome = await untilAllDelivered(layout, receiver, round.triggersBefore + bodies.length, intake.startedAt, servers)
  const complete = outcome === 'complete'
  const endedAt = complete ? receiver.lastNewAt() : performance.now()
  const postgresSeconds = postgresCpu?.stop()
  const perTrigger = (seconds: number) => (seconds * 1000) / bodies.length
  // What a run that did not finish has cost is not what its triggers cost (and a process that died cannot be read).
  const byProcess = complete
    ? servers.map((server, index) => ({ name: server.name, ms: perTrigger(processCpuSeconds(server.child.pid!) - cpuBefore[index]!) }))
    : undefined
  return {
    outcome,
    seconds: (endedAt - intake.startedAt) / 1000,
    intake: { seconds: intake.seconds, p50Ms: percentile(intake.latenciesMs, 50), p99Ms: percentile(intake.latenciesMs, 99) },
    cpuMsPerTrigger: {
      service: byProcess?.reduce((sum, process) => sum + process.ms, 0),
      byProcess,
      postgres: complete && postgresSeconds !== undefined ? perTrigger(postgresSeconds) : undefined,
    },
    webhooksReceived: receiver.distinct() - 2 * round.triggersBefore,
  }
}

/** Every body posted once; the run fails unless each is answered 201. */
async function postEvery(layout: Layout, api: Server, apiKey: string, bodies: readonly string[], phase: string): Promise<Intake> {
  const intake = await postAll(api, apiKey, bodies, phase)
  if (intake.refusals.length > 0) {
    throw new Error(
      `${layout.name}: ${intake.refusals.length} of ${bodies.length} POSTs (${phase}) were not answered 201, e.g.\n${intake.refusals.slice(0, 5).join('\n')}\n${api.name} log:\n${await tail(api.logFile)}`,
    )
  }
  return intake
}

/** A process is ready when its /readyz answers (a worker process's, on METRICS_PORT). */
function untilReady(server: Server): Promise<void> {
  return waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
}

interface Intake {
  /** performance.now() when the first POST was sent. */
  startedAt: number
  seconds: number
  latenciesMs: Float64Array
  /** Each answer other than 201, or the error of a request that got none. */
  refusals: string[]
}

/** Every body posted once, by CLIENTS clients each taking the next body when its last one is answered. */
async function postAll(api: Server, apiKey: string, bodies: readonly string[], phase: string): Promise<Intake> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })
  const url = new URL('/api/v2/triggers', api.baseUrl)
  const latenciesMs = new Float64Array(bodies.length)
  const refusals: string[] = []
  let next = 0
  const client = async () => {
    while (next < bodies.length) {
      const index = next++
      const sentAt = performance.now()
      const answer = await postTriggerWith(agent, url, apiKey, bodies[index]!, `${api.label}-${phase}-${index}`).catch((error: Error) => ({ status: 0, text: error.message }))
      latenciesMs[index] = performance.now() - sentAt
      if (answer.status !== 201) refusals.push(`${answer.status} ${answer.text}`)
    }
  }
  const startedAt = performance.now()
  await Promise.all(Array.from({ length: CLIENTS }, client))
  const seconds = (performance.now() - startedAt) / 1000
  agent.destroy()
  return { startedAt, seconds, latenciesMs, refusals }
}


interface Receiver {
  url: string
  /** Distinct webhook-ids received of one event type. */
  received(type: EventType): number
  distinct(): number
  /** webhook-ids received more than once. */
  duplicates(): number
  /** performance.now() when the last new webhook-id arrived. */
  lastNewAt(): number
  close(): Promise<void>
}

/** The client's webhook endpoint: answers 200 at once, and counts what it got by webhook-id and event type. */
async function startReceiver(): Promise<Receiver> {
  const timesReceived = new Map<string, number>()
  const byType = new Map<string, number>()
  let lastNewAt = 0
  const server = http.createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (body += chunk))
    request.on('end', () => {
      response.writeHead(200).end()
      const id = String(request.headers['webhook-id'])
      const times = timesReceived.get(id) ?? 0
      timesReceived.set(id, times + 1)
      if (times > 0) return
      lastNewAt = performance.now()
      const { type } = JSON.parse(body) as { type: string }
      byType.set(type, (byType.get(type) ?? 0) + 1)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received: (type) => byType.get(type) ?? 0,
    distinct: () => timesReceived.size,
    duplicates: () => [...timesReceived.values()].filter((times) => times > 1).length,
    lastNewAt: () => lastNewAt,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Waits until the receiver has one event of each type per trigger posted so far, or the timeout, or a service process dies. */
async function untilAllDelivered(
  layout: Layout,
  receiver: Receiver,
  triggers: number,
  startedAt: number,
  servers: readonly Server[],
): Promise<EndToEndRound['outcome']> {
  const deadline = startedAt + WEBHOOKS_TIMEOUT_SECONDS * 1000
  let progressAt = performance.now()
  while (EVENT_TYPES.some((type) => receiver.received(type) < triggers)) {
    const exited = servers.find((server) => hasExited(server.child))
    if (exited !== undefined) {
      log(`${layout.name}: ${exited.name} exited:\n${await tail(exited.logFile)}`)
      return 'a service process exited'
    }
    const now = performance.now()
    if (now > deadline) {
      log(`${layout.name}: timed out with ${receiver.distinct()} of ${2 * triggers} webhooks`)
      return 'timed out'
    }
    if (now - progressAt >= PROGRESS_EVERY_MS) {
      progressAt = now
      log(`${layout.name}: ${EVENT_TYPES.map((type) => `${receiver.received(type)} ${type}`).join(', ')} of ${triggers} each`)
    }
    await sleep(100)
  }
  return 'complete'
}

/** pino's level for warn. */
const WARN = 40

async function logProblems(server: Server): Promise<string[]> {
  const lines = (await readFile(server.logFile, 'utf8')).split('\n').filter((line) => line !== '')
  return lines
    .filter((line) => {
      const level = /^\{"level":(\d+)/.exec(line)?.[1]
      return level === undefined || Number(level) >= WARN
    })
    .map((line) => `${server.name}: ${line}`)
}

/** Triggers per second from the first POST to the last webhook; undefined for a run that did not finish. */
export function endToEndRate(result: EndToEndResult, round: EndToEndRound = result.summary): number | undefined {
  return round.outcome === 'complete' ? result.triggers / round.seconds : undefined
}

/** One figure the project holds a layout to, and this run's. */
export interface EndToEndVerdict {
  layout: string
  goal: string
  measured: string
  met: boolean
}

/** What the project holds itself to, end to end. A figure a run could not give (it did not finish) does not meet its goal. */
const GOALS: {
  layout: Layout
  goal: string
  figure: (result: EndToEndResult) => number | undefined
  unit: string
  digits: number
  met: (value: number) => boolean
}[] = [
  { layout: POSTGRES_LAYOUT, goal: 'at least 1,000 triggers/s end to end', figure: endToEndRate, unit: 'triggers/s', digits: 0, met: (rate) => rate >= 1000 },
  { layout: POSTGRES_LAYOUT, goal: 'at most 0.8 ms of service CPU per trigger', figure: (r) => r.summary.cpuMsPerTrigger.service, unit: 'ms', digits: 2, met: (ms) => ms <= 0.8 },
  { layout: POSTGRES_LAYOUT, goal: 'at most 0.6 ms of PostgreSQL CPU per trigger', figure: (r) => r.summary.cpuMsPerTrigger.postgres, unit: 'ms', digits: 2, met: (ms) => ms <= 0.6 },
  { layout: EMBEDDED_LAYOUT, goal: 'at least 300 triggers/s end to end', figure: endToEndRate, unit: 'triggers/s', digits: 0, met: (rate) => rate >= 300 },
  { layout: EMBEDDED_LAYOUT, goal: 'intake p99 under 250 ms', figure: (r) => r.summary.intake.p99Ms, unit: 'ms', digits: 0, met: (ms) => ms < 250 },
]

export function endToEndVerdicts(results: readonly EndToEndResult[]): EndToEndVerdict[] {
  const metrics = results.map((result) => ({
    layout: result.layout,
    goal: '/metrics of every process: each family present, each figure sensible',
    measured: result.metrics.problems.length === 0 ? `${result.metrics.rows.length} figures as expected` : result.metrics.problems.join('; '),
    met: result.metrics.problems.length === 0,
  }))
  const goals = GOALS.flatMap(({ layout, goal, figure, unit, digits, met }) => {
    const result = results.find((candidate) => candidate.layout === layout.name)
    if (result === undefined) return []
    const value = figure(result)
    return {
      layout: layout.name,
      goal,
      measured: value === undefined ? `none (${result.summary.outcome})` : `${value.toFixed(digits)} ${unit}`,
      met: value !== undefined && met(value),
    }
  })
  return [...goals, ...metrics]
}
