/**
 * The trigger path on a year of history: "the trigger path itself stays flat
 * with history: keep it so". On a database that holds a year of an
 * organization's history (bench/history.ts: at least a million completed
 * triggers for the big organization among about a hundred organizations), and
 * on a fresh database of the same PostgreSQL server, in the same run:
 *
 * 1. End to end, as bench/endToEnd.ts measures its PostgreSQL layout (an API
 *    process `serve --no-workers` and a worker process `worker`, pinned to
 *    CPU 0; the clients and the receiver on CPU 1): triggers/s from the first
 *    POST to the last webhook, plain simulator calls that complete at once,
 *    with the service's and PostgreSQL's CPU per trigger. Each database has a
 *    layout of its own, and both run side by side for the whole measurement,
 *    only one loaded at a time. Each is warmed up, then measured in pairs of
 *    rounds, the fresh round first in odd pairs and the grown one first in
 *    even ones (fresh, grown, grown, fresh...), since each round adds rows and
 *    the machine drifts; the ratio of the grown database's triggers/s to the
 *    fresh one's is taken within each pair, and its median over the pairs is
 *    held to 0.90. On the grown database the triggers are posted as the big
 *    organization, to its own plain campaign, with its cloned webhook
 *    endpoints (whose receiver has gone) replaced by the bench's receiver:
 *    its history is what must not slow the path down.
 * 2. Reads of the big organization on the grown database, each 100 calls
 *    after 10 of warm-up, one after another: the task list by every filter,
 *    its next page, cancel by ids, the WhatsApp reply lookup, erasure's find,
 *    the daily counts of the year; each held to 50 ms at p99. The statements
 *    each read runs are also explained as PostgreSQL would run them under a
 *    generic plan (which a prepared statement is given after its fifth run on
 *    a connection, if its cost is not much above the custom plans'), on a
 *    connection of its own with the service's session settings (no JIT), and
 *    the plans of the reads over the goal printed to standard error.
 *
 * Each round and each read also says how many CPUs were busy elsewhere
 * meanwhile (the machine's busy time less the measured processes',
 * PostgreSQL's for the database and the benchmark's own): on a shared
 * machine of two CPUs, a figure taken beside other work is not the service's;
 * and how much the disks read meanwhile: of a year of history, what neither
 * PostgreSQL's buffers nor the page cache held.
 * 3. The history's own figures, from its summary.
 *
 * Why the two layouts run side by side rather than being restarted between
 * rounds: each then meets every round as a running service does, its code
 * compiled by the JIT, its pools open, its statements prepared and planned
 * (a restart would re-measure start-up and a cold JIT, which the warm-up is
 * there to take out, and it would do so unequally: the grown database's
 * caches fill more slowly). The idle layout costs the loaded one a little
 * CPU 0 (its workers poll twice a second and sweep once), the same both
 * ways; its cost is measured on its own while both are idle, and reported.
 *
 * Both databases get the same bodies (bench/bodies.ts): the warm-ups the same
 * ones, and the two rounds of a pair the same ones, each posted once to each
 * database, so that the two sides of a ratio do the same work; every round of
 * a database posts people that database has never seen. The first bodies,
 * which the history's template was made of (in another organization, with
 * ids of their own), are left out.
 *
 * benchGrowth (bench/growth.ts) runs it on a private PostgreSQL server
 * (bench/privatePostgres.ts) after building the history there.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import path from 'node:path'
import pg from 'pg'
import { normalizePhone } from '../src/domain/contact.ts'
import type { ExternalId, TaskOutcome } from '../src/domain/types.ts'
import { listOrganizationTasks } from '../src/services/taskListing.ts'
import { listDailyCounts } from '../src/store/dailyCounts.ts'
import { openDatabase, type Queryable } from '../src/store/database.ts'
import { findPersonRecords } from '../src/store/erasure.ts'
import { findCallbackTask } from '../src/store/inboundCalls.ts'
import { twilioSignature } from '../test/fakes/twilio.ts'
import { findLatestInteractionWith } from '../src/store/interactions.ts'
import { lockOpenTasksByExternalIds, type TaskFilter } from '../src/store/tasks.ts'
import { generateBodies } from './bodies.ts'
import { stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import {
  addressedTo,
  CAMPAIGN,
  CLIENTS,
  type EndToEndRound,
  EVENT_TYPES,
  type Layout,
  logProblems,
  measureRound,
  POSTGRES_LAYOUT,
  postEvery,
  type Receiver,
  RESULTS_CAMPAIGN,
  type ResultCheck,
  startReceiver,
  summarize as medianRound,
  untilAllDelivered,
  untilReady,
  WEBHOOKS_TIMEOUT_SECONDS,
} from './endToEnd.ts'
import {
  adminPost,
  LOAD_CPU,
  log,
  median,
  OPERATOR_TOKEN,
  PHONE_HASH_KEY,
  percentile,
  pinnedTo,
  postCreating,
  provision,
  requestWith,
  type Server,
  sleep,
  startServer,
} from './harness.ts'
import type { HistorySummary } from './history.ts'
import type { PrivatePostgres } from './privatePostgres.ts'
import type { Section } from './report.ts'

/** The grown database's triggers/s over the fresh one's, median over the pairs, that meets the goal: 10 % below at most. */
export const GROWN_RATIO_GOAL = 0.9
/** Every read's p99 at most this. */
export const READ_P99_GOAL_MS = 50
/** A platform's inbound webhook (a call to a campaign's number, docs/callbacks.md) answered within this at p99: Vapi waits 7.5 s at most, Retell 10 s, Twilio 15 s, all of it call setup the person hears ringing. */
export const INBOUND_P99_GOAL_MS = 100
/** The big organization's Twilio campaign that the inbound call read calls: its account, auth token and number. */
const INBOUND_ACCOUNT_SID = `AC${'b3'.repeat(16)}`
const INBOUND_AUTH_TOKEN = 'growth-bench-twilio-auth-token'
const INBOUND_NUMBER = '+14155550177'
/** Calls of each read measured, after READ_WARM_UP_CALLS not measured. */
export const READ_CALLS = 100
/**
 * Calls of each read first, not measured: they also let PostgreSQL switch the
 * read's prepared statements to their generic plans (considered from the
 * sixth execution on a connection).
 */
export const READ_WARM_UP_CALLS = 10
/** The most bodies (each a person of its own) asked of bench/bodies.ts. */
const MAX_BODIES = 40_000
/** How long each layout's CPU is read while nothing is posted, before the warm-ups and after the rounds. */
const IDLE_SECONDS = 10
/** The big organization's people to read by: the summary's samples, then as many more drawn from its triggers. */
const PEOPLE = 1500
/** Rows of the triggers table sampled (SYSTEM, by blocks) to find PEOPLE of the big organization's. */
const SAMPLED_BLOCKS = 800

export type DatabaseName = 'fresh' | 'grown'
export const DATABASES: readonly DatabaseName[] = ['fresh', 'grown']
export const DATABASE_LABEL: Record<DatabaseName, string> = { fresh: 'fresh database', grown: 'grown database (a year of history)' }

/** One measured round of one database. */
export interface GrowthRound {
  database: DatabaseName
  /** The pair it belongs to, from 1. */
  pair: number
  round: EndToEndRound
  /**
   * CPUs busy elsewhere over the round, on average: the machine's busy time (steal included) less the measured
   * layout's processes, its database's PostgreSQL time and the benchmark process's own. The idle layout's polling is
   * in it, and on a shared machine whatever else runs: a round beside other work is slower for it.
   */
  elsewhereCpus: number | undefined
  /** MiB read from the machine's disks over the round (by anything; see diskBytesRead). */
  diskReadMiB: number
}

/** A layout's CPU while nothing is posted: what its workers' polling and sweeping (and PostgreSQL's background work) cost. */
export interface IdleCpu {
  /** Milliseconds of CPU per second: the service's processes together, and PostgreSQL's for the database (with the server's own processes). */
  serviceMsPerSecond: number
  postgresMsPerSecond: number
}

export interface GrowthEndToEnd {
  /** Triggers posted in each round. */
  triggers: number
  warmUpTriggers: number
  /** Pairs of rounds asked for. */
  pairs: number
  /** In the order they ran; they stop at the first that does not complete. */
  rounds: GrowthRound[]
  /** Per database, the median of each figure over its rounds when all completed; the one that did not, otherwise. */
  summaries: Record<DatabaseName, EndToEndRound | undefined>
  /** Each pair's grown triggers/s over its fresh triggers/s, for the pairs whose two rounds completed. */
  pairRatios: number[]
  /** Their median: the figure held to GROWN_RATIO_GOAL. */
  ratio: number | undefined
  /** Per database: seconds from its API process's start to both its processes ready. */
  startSeconds: Record<DatabaseName, number>
  idle: Record<DatabaseName, { atStart: IdleCpu; atEnd: IdleCpu | undefined }>
  webhooksExpected: number
  duplicateWebhooks: Record<DatabaseName, number>
  /** The webhooks' data.result, checked as bench/endToEnd.ts checks them (null for every plain call). */
  resultChecks: Record<DatabaseName, ResultCheck>
  /** Log lines of each database's service processes at warn level or above, or not written by its logger. */
  serviceLogProblems: Record<DatabaseName, string[]>
}

/** How the bench took on the big organization of the grown database. */
export interface BigOrganizationSetup {
  id: string
  /** Its key's scopes, as GET /api/v2/key gave them. */
  keyScopes: string[]
  /** Whether another key was issued, for want of a scope. */
  keyIssued: boolean
  /** The routing key its triggers were posted to, and whether the campaign had to be made. */
  routingKey: string
  campaignCreated: boolean
  /** Its rate limit (requests a second), and whether the bench raised it. */
  rateLimitPerSecond: number
  rateLimitRaised: boolean
  /** The webhook endpoints deleted (cloned from the template, pointing to a receiver that has gone). */
  endpointsDeleted: number
}

/** One statement a read runs, as EXPLAIN (ANALYZE, BUFFERS) showed it under a forced generic plan. */
export interface ExplainedStatement {
  sql: string
  /** The plan, or the error that prevented it. */
  plan: string
  /** Its Execution Time; undefined when not explained. */
  executionMs: number | undefined
}

export interface ReadResult {
  name: string
  /** HTTP: a call to the grown database's API process; store: the store function called in the bench process. */
  via: 'HTTP' | 'store'
  calls: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** What the last call found, e.g. "50 tasks". */
  answer: string
  /** Its p99 goal. */
  goalMs: number
  /** The statements of the last call, each under a forced generic plan. */
  plans: ExplainedStatement[]
  met: boolean
  /** CPUs busy elsewhere while the read's calls ran, on average (see GrowthRound). */
  elsewhereCpus: number | undefined
  /** MiB read from the machine's disks while they ran. */
  diskReadMiB: number
  /**
   * For an HTTP read, the same calls as the service's request log times them (from the request's arrival to its
   * answer): the part of the client's latency spent in the API process.
   */
  service: { p50Ms: number; p99Ms: number; maxMs: number } | undefined
}

export interface HistoryBenchResult {
  history: HistorySummary
  bigOrganization: BigOrganizationSetup
  endToEnd: GrowthEndToEnd
  reads: ReadResult[]
  /** The one-day range of the task list's created_from/created_before read. */
  readDay: string
  /** The jit setting of the service's sessions, which the generic plans were explained with. */
  explainJit: string
  /** The server's settings (PrivatePostgres.description). */
  serverSettings: string
}

export interface HistoryBenchOptions {
  /** The server both databases are on (checked). */
  server: PrivatePostgres
  /** Where the service's logs go. */
  workDir: string
  /** The database bench/history.ts built. */
  grownUrl: string
  /** An empty database on the same server. */
  freshUrl: string
  history: HistorySummary
  /** Pairs of rounds, one round on each database. */
  rounds: number
  triggersPerRound: number
  /** Triggers taken through each layout before the rounds. */
  warmUpTriggers: number
}

/** A database's layout while it runs: its processes, its receiver, the key its triggers are posted with. */
interface Running {
  name: DatabaseName
  layout: Layout
  databaseUrl: string
  servers: Server[]
  receiver: Receiver
  apiKey: string
  /** Triggers posted to it so far (each ends in two webhooks at its receiver). */
  posted: number
}

/**
 * The end-to-end rounds on both databases, then the reads on the grown one; the bench process (clients, receivers,
 * the store-level reads) on LOAD_CPU throughout.
 */
export async function benchHistory(options: HistoryBenchOptions): Promise<HistoryBenchResult> {
  return pinnedTo(LOAD_CPU, () => run(options))
}

async function run(options: HistoryBenchOptions): Promise<HistoryBenchResult> {
  const { history } = options
  // Both databases on the one server, so that neither has a server (its caches, its WAL) of its own.
  const serverOf = (url: string) => new URL(url).host
  for (const url of [options.grownUrl, options.freshUrl]) {
    if (serverOf(url) !== serverOf(options.server.adminUrl)) throw new Error(`${url} is not on the server ${options.server.adminUrl}`)
  }
  const skip = history.template.triggers
  const total = options.warmUpTriggers + options.rounds * options.triggersPerRound
  // bench/bodies.ts draws each person's ids from fixed ranges (one kind has 27,000 values, in half the bodies), and
  // looks for an unused one until it finds it.
  if (skip + total > MAX_BODIES) throw new Error(`${skip + total} bodies asked for; bench/bodies.ts makes at most ${MAX_BODIES} distinct people: fewer rounds or triggers`)
  const all = generateBodies(skip + total).bodies.slice(skip).map((text) => addressedTo(text, CAMPAIGN))
  const warmUp = all.slice(0, options.warmUpTriggers)
  const pairBodies = (pair: number) => all.slice(options.warmUpTriggers + pair * options.triggersPerRound, options.warmUpTriggers + (pair + 1) * options.triggersPerRound)

  const running: Partial<Record<DatabaseName, Running>> = {}
  const startSeconds = {} as Record<DatabaseName, number>
  let bigOrganization: BigOrganizationSetup | undefined
  const rounds: GrowthRound[] = []
  const idle = {} as Record<DatabaseName, { atStart: IdleCpu; atEnd: IdleCpu | undefined }>
  let reads: ReadResult[] = []
  let readDay = ''
  let explainJit = ''
  try {
    for (const name of DATABASES) {
      const started = performance.now()
      const databaseUrl = name === 'fresh' ? options.freshUrl : options.grownUrl
      const servers = await startLayout(name, databaseUrl, options.workDir)
      startSeconds[name] = (performance.now() - started) / 1000
      log(`${DATABASE_LABEL[name]}: ready after ${startSeconds[name].toFixed(1)} s`)
      const receiver = await startReceiver()
      const layout = layoutOf(name)
      running[name] = { name, layout, databaseUrl, servers, receiver, apiKey: '', posted: 0 }
      if (name === 'fresh') {
        const { apiKey } = await provision(servers[0]!.baseUrl, [CAMPAIGN, RESULTS_CAMPAIGN], ['triggers:write', 'triggers:read', 'webhooks:manage'])
        await postCreating(servers[0]!.baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiver.url, events: EVENT_TYPES })
        running[name].apiKey = apiKey
      } else {
        const adopted = await adoptBigOrganization(servers[0]!.baseUrl, history, receiver)
        bigOrganization = adopted.setup
        running[name].apiKey = adopted.apiKey
      }
    }
    const layouts = DATABASES.map((name) => running[name]!)

    for (const layout of layouts) idle[layout.name] = { atStart: await idleCpu(layout), atEnd: undefined }
    for (const layout of layouts) {
      if (warmUp.length === 0) continue
      log(`${layout.layout.name}: warming up with ${warmUp.length} triggers`)
      const intake = await postEvery(layout.layout, layout.servers[0]!, layout.apiKey, warmUp, 'warm-up')
      layout.posted += warmUp.length
      const outcome = await untilAllDelivered(layout.layout, layout.receiver, layout.posted, intake.startedAt, layout.servers)
      if (outcome !== 'complete') throw new Error(`${layout.layout.name}: the warm-up ended with ${outcome}`)
    }

    rounds: for (let pair = 0; pair < options.rounds; pair++) {
      const order: DatabaseName[] = pair % 2 === 0 ? ['fresh', 'grown'] : ['grown', 'fresh']
      const bodies = pairBodies(pair)
      for (const name of order) {
        const layout = running[name]!
        log(`${layout.layout.name}: pair ${pair + 1} of ${options.rounds}, ${bodies.length} triggers from ${CLIENTS} clients`)
        const elsewhere = meterElsewhere(layout.servers, layout.databaseUrl)
        const round = await measureRound(layout.layout, layout.databaseUrl, layout.servers, layout.receiver, {
          apiKey: layout.apiKey,
          variant: 'plain',
          bodies,
          triggersBefore: layout.posted,
          requestIds: `pair-${pair + 1}-${name}`,
        })
        layout.posted += bodies.length
        const machine = elsewhere.stop()
        rounds.push({ database: name, pair: pair + 1, round, elsewhereCpus: machine.cpus, diskReadMiB: machine.diskReadMiB })
        if (round.outcome !== 'complete') break rounds
      }
    }
    for (const layout of layouts) idle[layout.name].atEnd = await idleCpu(layout)

    // The reads on the grown database alone: the fresh layout stops first, so that nothing else runs on CPU 0.
    await Promise.all(running.fresh!.servers.map((server) => stopChild(server.child)))
    const grown = running.grown!
    ;({ reads, readDay, jit: explainJit } = await measureReads(grown.servers[0]!, options.grownUrl, grown.apiKey, history))
  } finally {
    for (const layout of Object.values(running)) {
      await Promise.all(layout.servers.map((server) => stopChild(server.child)))
      await layout.receiver.close()
    }
  }

  const serviceLogProblems = {} as Record<DatabaseName, string[]>
  for (const name of DATABASES) {
    serviceLogProblems[name] = (await Promise.all(running[name]!.servers.map(logProblems))).flat()
    for (const line of serviceLogProblems[name].slice(0, 5)) log(`${DATABASE_LABEL[name]}: in the service's log: ${line}`)
  }
  const of = (name: DatabaseName) => rounds.filter((round) => round.database === name).map((round) => round.round)
  const pairRatios = Array.from({ length: options.rounds }, (_, index) => pairRatio(rounds, index + 1)).filter((ratio) => ratio !== undefined)
  for (const read of reads.filter((candidate) => !candidate.met)) {
    log(`read over ${read.goalMs} ms at p99: ${read.name}, p99 ${read.p99Ms.toFixed(1)} ms; its statements under a generic plan:`)
    for (const statement of read.plans) process.stderr.write(`${statement.sql}\n${statement.plan}\n\n`)
  }
  return {
    history,
    bigOrganization: bigOrganization!,
    endToEnd: {
      triggers: options.triggersPerRound,
      warmUpTriggers: options.warmUpTriggers,
      pairs: options.rounds,
      rounds,
      summaries: { fresh: medianRound(of('fresh')), grown: medianRound(of('grown')) },
      pairRatios,
      ratio: pairRatios.length === 0 ? undefined : median(pairRatios),
      startSeconds,
      idle,
      webhooksExpected: 2 * options.triggersPerRound,
      duplicateWebhooks: { fresh: running.fresh!.receiver.duplicates(), grown: running.grown!.receiver.duplicates() },
      resultChecks: { fresh: running.fresh!.receiver.resultChecks().plain, grown: running.grown!.receiver.resultChecks().plain },
      serviceLogProblems,
    },
    reads,
    readDay,
    explainJit,
    serverSettings: options.server.description,
  }
}

/** bench/endToEnd.ts's PostgreSQL layout, its processes named after the database (their log files are). */
function layoutOf(name: DatabaseName): Layout {
  const title = name === 'fresh' ? 'Fresh' : 'Grown'
  return {
    name: DATABASE_LABEL[name],
    processes: POSTGRES_LAYOUT.processes.map((process) => ({ name: process.name.replace(/^e2e/, title), args: process.args })),
  }
}

/** The API process, ready (it applies any migration due), then the worker process, ready. */
async function startLayout(name: DatabaseName, databaseUrl: string, workDir: string): Promise<Server[]> {
  const env = { DATABASE_URL: databaseUrl, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'info', ALLOW_PRIVATE_WEBHOOK_URLS: 'true', TWILIO_AUTH_TOKEN: INBOUND_AUTH_TOKEN }
  const servers: Server[] = []
  try {
    for (const { name: processName, args } of layoutOf(name).processes) {
      const server = await startServer(processName, args, env, workDir)
      servers.push(server)
      await untilReady(server)
    }
    return servers
  } catch (error) {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    throw error
  }
}

/** CPU of a layout and its database over IDLE_SECONDS with nothing posted. */
async function idleCpu(layout: Running): Promise<IdleCpu> {
  const before = layout.servers.map((server) => processCpuSeconds(server.child.pid!))
  const postgres = meterPostgresCpu(new URL(layout.databaseUrl).pathname.slice(1))
  const started = performance.now()
  await sleep(IDLE_SECONDS * 1000)
  const postgresSeconds = postgres.stop()
  const seconds = (performance.now() - started) / 1000
  const service = layout.servers.reduce((sum, server, index) => sum + processCpuSeconds(server.child.pid!) - before[index]!, 0)
  return { serviceMsPerSecond: (service * 1000) / seconds, postgresMsPerSecond: (postgresSeconds * 1000) / seconds }
}

/** The machine's CPU seconds busy so far, all CPUs (user, nice, system, irq, softirq, steal: /proc/stat's first line). */
function machineBusySeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const [user, nice, system, , , irq, softirq, steal] = fields
  return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / TICKS_PER_SECOND
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

/** The machine's disks (/sys/block, but for loop, RAM and device-mapper devices, which stand on the others or on memory). */
const DISKS = new Set(readdirSync('/sys/block').filter((name) => !/^(loop|ram|zram|dm-)/.test(name)))

/**
 * Bytes read from the machine's disks so far (/proc/diskstats, 512-byte sectors): what reached the disk of what
 * PostgreSQL read, which neither its buffers nor the page cache held (on this machine the page cache is reclaimed
 * as it cools: a year of history is read from disk, not memory).
 */
function diskBytesRead(): number {
  let sectors = 0
  for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
    const fields = line.trim().split(/\s+/)
    if (fields.length > 5 && DISKS.has(fields[2]!)) sectors += Number(fields[5])
  }
  return sectors * 512
}

/**
 * From now until `stop`: the CPUs busy on average outside these processes, PostgreSQL's work for this database
 * (bench/cpu.ts) and this process; undefined if a process has gone meanwhile.
 */
function meterElsewhere(servers: readonly Server[], databaseUrl: string): { stop(): { cpus: number | undefined; diskReadMiB: number } } {
  const started = performance.now()
  const diskRead = diskBytesRead()
  const busy = machineBusySeconds()
  const own = process.cpuUsage()
  const processes = servers.map((server) => processCpuSeconds(server.child.pid!))
  const postgres = meterPostgresCpu(new URL(databaseUrl).pathname.slice(1))
  return {
    stop() {
      const postgresSeconds = postgres.stop()
      const seconds = (performance.now() - started) / 1000
      const ownUsage = process.cpuUsage(own)
      const diskReadMiB = (diskBytesRead() - diskRead) / 1024 ** 2
      try {
        const measured = servers.reduce((sum, server, index) => sum + processCpuSeconds(server.child.pid!) - processes[index]!, 0)
        const elsewhere = machineBusySeconds() - busy - measured - postgresSeconds - (ownUsage.user + ownUsage.system) / 1e6
        return { cpus: Math.max(0, elsewhere) / seconds, diskReadMiB }
      } catch {
        return { cpus: undefined, diskReadMiB }
      }
    },
  }
}

/**
 * The big organization made ready to be posted to as a client would: a key with the scopes the bench needs (the
 * history's, checked; another issued through the admin API if it lacks one), its plain campaign (made like CAMPAIGN
 * if the history has none), a rate limit that never refuses the bench, and the bench's receiver as its only webhook
 * endpoint in place of the cloned ones.
 */
async function adoptBigOrganization(baseUrl: string, history: HistorySummary, receiver: Receiver): Promise<{ apiKey: string; setup: BigOrganizationSetup }> {
  const big = history.bigOrganization
  const needed = ['triggers:write', 'triggers:read', 'webhooks:manage']
  const described = await getJson(baseUrl, '/api/v2/key', big.apiKey)
  const keyScopes = described.data.scopes as string[]
  if ((described.data.organization as { id: string }).id !== big.id) throw new Error(`the big organization's key belongs to ${JSON.stringify(described.data.organization)}`)
  const keyIssued = needed.some((scope) => !keyScopes.includes(scope))
  const apiKey = keyIssued ? ((await adminPost(baseUrl, `/admin/v1/organizations/${big.id}/api-keys`, { name: 'growth bench', scopes: needed })).data.key as string) : big.apiKey

  const campaignCreated = !big.campaigns.some((campaign) => campaign.routingKey === CAMPAIGN.routing_key)
  if (campaignCreated) await adminPost(baseUrl, `/admin/v1/organizations/${big.id}/campaigns`, CAMPAIGN)

  // As harness.ts's provision sets the fresh organization's: applied, and never refusing.
  const organization = await getJson(baseUrl, `/admin/v1/organizations/${big.id}`, OPERATOR_TOKEN)
  const rateLimitPerSecond = (organization.data.rate_limit as { per_second: number }).per_second
  const rateLimitRaised = rateLimitPerSecond < 1_000_000
  if (rateLimitRaised) {
    const patched = await fetch(`${baseUrl}/admin/v1/organizations/${big.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rate_limit: { per_second: 1_000_000, burst: 1_000_000 } }),
    })
    if (patched.status !== 200) throw new Error(`PATCH /admin/v1/organizations/${big.id} answered ${patched.status}: ${await patched.text()}`)
  }

  const endpoints = (await getJson(baseUrl, '/api/v2/webhook-endpoints', apiKey)).data as unknown as { id: string; url: string }[]
  for (const endpoint of endpoints) {
    const deleted = await fetch(`${baseUrl}/api/v2/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${apiKey}` } })
    if (deleted.status >= 300) throw new Error(`DELETE /api/v2/webhook-endpoints/${endpoint.id} answered ${deleted.status}: ${await deleted.text()}`)
  }
  await postCreating(baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiver.url, events: EVENT_TYPES })
  log(`big organization ${big.id}: key scopes ${keyScopes.join(', ')}${keyIssued ? ' (another key issued)' : ''}; ${endpoints.length} cloned endpoint(s) deleted`)
  return {
    apiKey,
    setup: { id: big.id, keyScopes, keyIssued, routingKey: CAMPAIGN.routing_key, campaignCreated, rateLimitPerSecond, rateLimitRaised, endpointsDeleted: endpoints.length },
  }
}

async function getJson(baseUrl: string, route: string, token: string): Promise<{ data: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}${route}`, { headers: { authorization: `Bearer ${token}` } })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${route} answered ${response.status}: ${text}`)
  return JSON.parse(text)
}

/** A person of the big organization's history: one of the ids a trigger carried, and the number it reached. */
interface Person {
  id: ExternalId
  phone: string
}

/** A statement as a store function ran it. */
interface Recorded {
  sql: string
  params: readonly unknown[]
}

/** One read: `call(i)` makes call i (the warm-up's first), answering what it found; `statements(i)` the store statements call i runs. */
interface Read {
  name: string
  via: 'HTTP' | 'store'
  /** Its p99 goal, READ_P99_GOAL_MS unless said. */
  goalMs?: number
  call(i: number): Promise<string>
  statements(i: number): Promise<Recorded[]>
}

/** Thrown to roll back a transaction once it has read what it was to read. */
class RollBack extends Error {}

/** Every read of the big organization on the grown database, measured in turn, one call at a time. */
async function measureReads(
  api: Server,
  databaseUrl: string,
  apiKey: string,
  history: HistorySummary,
): Promise<{ reads: ReadResult[]; readDay: string; jit: string }> {
  const big = history.bigOrganization
  const orgId = big.id
  // The statements as the service runs them: prepared, on one connection, so that they reach their generic plans.
  const db = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 1 })
  const explainer = new pg.Client({ connectionString: databaseUrl })
  await explainer.connect()
  // The plans explained in the service's session settings: its sessions run without JIT compilation
  // (src/store/database.ts), which on a generic plan's estimates would otherwise cost far more than the read.
  const jit = (await db.query<{ jit: string }>(`SELECT current_setting('jit') AS jit`))[0]!.jit
  await explainer.query(`SELECT set_config('jit', $1, false)`, [jit])
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const people = await samplePeople(explainer, history)
    const perRead = READ_WARM_UP_CALLS + READ_CALLS
    log(`reads: ${people.length} people of the big organization to read by (${perRead} calls a read)`)
    const campaigns = big.campaigns.map((campaign) => ({ id: campaign.id, orgId }))
    // The day of the big organization's first trigger past the middle of its history: a day it triggered on (a small
    // history's copies may be days apart).
    const span = await explainer.query<{ first: Date; last: Date }>('SELECT min(created_at) AS first, max(created_at) AS last FROM triggers WHERE org_id = $1', [orgId])
    const middle = new Date((span.rows[0]!.first.getTime() + span.rows[0]!.last.getTime()) / 2)
    const after = await explainer.query<{ at: Date }>('SELECT created_at AS at FROM triggers WHERE org_id = $1 AND created_at >= $2 ORDER BY created_at LIMIT 1', [orgId, middle])
    const dayStart = Math.floor(after.rows[0]!.at.getTime() / 86_400_000) * 86_400_000
    const readDay = new Date(dayStart).toISOString().slice(0, 10)
    const today = Math.floor(Date.now() / 86_400_000) * 86_400_000
    const yearFrom = new Date(today - 365 * 86_400_000).toISOString().slice(0, 10)
    const yearTo = new Date(today).toISOString().slice(0, 10)

    // Each HTTP call's X-Request-ID, by which the service's request log gives its own time for it.
    let requestId = ''
    const call = async (method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> => {
      const answer = await requestWith(agent, `${api.baseUrl}${route}`, method, apiKey, requestId, body === undefined ? undefined : JSON.stringify(body))
      if (answer.status !== 200) throw new Error(`${method} ${route} answered ${answer.status}: ${answer.text.slice(0, 500)}`)
      return (JSON.parse(answer.text) as { data: unknown }).data
    }
    const recordOn = async (work: (queryable: Queryable) => Promise<unknown>): Promise<Recorded[]> => {
      const recorded: Recorded[] = []
      await db
        .transaction(async (tx) => {
          await work(recording(tx, recorded))
          throw new RollBack()
        })
        .catch((error: unknown) => {
          if (!(error instanceof RollBack)) throw error
        })
      return recorded
    }
    // Each read takes people of its own (after the last read's), so that no read finds another's rows cached.
    let peopleUsed = 0
    const peopleFor = () => {
      const offset = peopleUsed
      peopleUsed += perRead
      return (i: number) => people[(offset + i) % people.length]!
    }

    const reads: Read[] = []
    {
      const person = peopleFor()
      reads.push({
        name: 'POST /api/v2/tasks/cancel {"ids": [an id]}',
        via: 'HTTP',
        call: async (i) => `${((await call('POST', '/api/v2/tasks/cancel', { ids: [person(i).id] })) as unknown[]).length} cancelled`,
        statements: (i) => recordOn((tx) => lockOpenTasksByExternalIds(tx, orgId, [person(i).id])),
      })
    }
    const list = (label: string, query: TaskQuery | ((i: number) => TaskQuery), page: 'first' | 'next' = 'first') => {
      const queryOf = typeof query === 'function' ? query : () => query
      let before: string | undefined
      const beforeOf = async (i: number) => {
        if (page === 'first') return undefined
        if (before === undefined) {
          const first = (await call('GET', `/api/v2/tasks?${queryString(queryOf(i), undefined)}`)) as { id: string }[]
          if (first.length === 0) throw new Error(`GET /api/v2/tasks (${label}) has no first page`)
          before = first.at(-1)!.id
        }
        return before
      }
      reads.push({
        name: `GET /api/v2/tasks${page === 'next' ? ', next page,' : ''} ${label}`,
        via: 'HTTP',
        call: async (i) => {
          const tasks = (await call('GET', `/api/v2/tasks?${queryString(queryOf(i), await beforeOf(i))}`)) as unknown[]
          return `${tasks.length} tasks`
        },
        statements: async (i) => {
          const b = await beforeOf(i)
          return recordOn((tx) => listOrganizationTasks(tx, orgId, { filter: storeFilter(queryOf(i)), before: b, limit: 50 }))
        },
      })
    }
    list('unfiltered', {})
    for (const status of ['completed', 'pending', 'in_progress'] as const) list(`status=${status}`, { status })
    for (const outcome of ['reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out'] as const) list(`outcome=${outcome}`, { outcome })
    for (const campaign of big.campaigns) list(`campaign=${campaign.routingKey}`, { campaign: campaign.routingKey })
    list('test_mode=true', { testMode: true })
    list('test_mode=false', { testMode: false })
    list(`created_from/created_before (${readDay})`, { createdFrom: dayStart, createdBefore: dayStart + 86_400_000 })
    {
      const person = peopleFor()
      list('phone=', (i) => ({ phone: person(i).phone }))
    }
    {
      const person = peopleFor()
      list('source/type/value=', (i) => ({ externalId: person(i).id }))
    }
    list(`campaign=${CAMPAIGN.routing_key}&outcome=cancelled`, { campaign: CAMPAIGN.routing_key, outcome: 'cancelled' })
    list('outcome=reached&test_mode=true', { outcome: 'reached', testMode: true })
    list(`campaign=${CAMPAIGN.routing_key}&status=completed&test_mode=false`, { campaign: CAMPAIGN.routing_key, status: 'completed', testMode: false })
    list('unfiltered', {}, 'next')
    list('outcome=cancelled', { outcome: 'cancelled' }, 'next')
    {
      const person = peopleFor()
      reads.push({
        name: 'WhatsApp reply naming no message: findLatestInteractionWith(campaigns, phone)',
        via: 'store',
        call: async (i) => ((await findLatestInteractionWith(db, campaigns, person(i).phone)) === undefined ? 'none' : 'an interaction'),
        statements: (i) => recordOn((tx) => findLatestInteractionWith(tx, campaigns, person(i).phone)),
      })
    }
    for (const by of ['id', 'phone'] as const) {
      const person = peopleFor()
      const find = (tx: Queryable, i: number) => findPersonRecords(tx, orgId, by === 'id' ? { id: person(i).id } : { phone: person(i).phone })
      reads.push({
        name: `erasure's find by ${by}: findPersonRecords (rolled back)`,
        via: 'store',
        call: async (i) => {
          let found = ''
          await db
            .transaction(async (tx) => {
              const records = await find(tx, i)
              found = `${records.taskIds.length} tasks`
              throw new RollBack()
            })
            .catch((error: unknown) => {
              if (!(error instanceof RollBack)) throw error
            })
          return found
        },
        statements: (i) => recordOn((tx) => find(tx, i)),
      })
    }
    {
      // A person of the history calling the big organization's Twilio number: the webhook Twilio posts, signed over the
      // URL the service knows itself by (PUBLIC_BASE_URL's default, http://localhost:<port>), answered with TwiML.
      await adminPost(api.baseUrl, `/admin/v1/organizations/${orgId}/campaigns`, {
        routing_key: 'callbacks',
        channel: 'voice',
        provider: 'twilio',
        provider_config: { account_sid: INBOUND_ACCOUNT_SID, from: INBOUND_NUMBER, answer_url: 'https://agent.example.com/twiml' },
      })
      const person = peopleFor()
      const route = '/providers/twilio/voice/inbound'
      const signedUrl = `http://localhost:${new URL(api.baseUrl).port}${route}`
      reads.push({
        name: `Twilio incoming call from a person of the history: POST ${route}`,
        via: 'HTTP',
        goalMs: INBOUND_P99_GOAL_MS,
        call: async (i) => {
          const params: Record<string, string> = {
            AccountSid: INBOUND_ACCOUNT_SID,
            ApiVersion: '2010-04-01',
            CallSid: `CA${randomBytes(16).toString('hex')}`,
            CallStatus: 'ringing',
            Direction: 'inbound',
            From: person(i).phone,
            To: INBOUND_NUMBER,
          }
          const body = new URLSearchParams(params).toString()
          const headers = {
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': String(Buffer.byteLength(body)),
            'x-twilio-signature': twilioSignature(INBOUND_AUTH_TOKEN, signedUrl, params),
          }
          const answer = await requestWith(agent, `${api.baseUrl}${route}`, 'POST', apiKey, requestId, body, headers)
          if (answer.status !== 200) throw new Error(`POST ${route} answered ${answer.status}: ${answer.text.slice(0, 500)}`)
          return answer.text.includes('task_id=') ? 'landed on a task' : 'no task in the window'
        },
        statements: (i) => recordOn((tx) => findCallbackTask(tx, [orgId], person(i).phone, Date.now())),
      })
    }
    reads.push({
      name: `GET /api/v2/daily-counts?from=${yearFrom}&to=${yearTo}`,
      via: 'HTTP',
      call: async () => `${((await call('GET', `/api/v2/daily-counts?from=${yearFrom}&to=${yearTo}`)) as unknown[]).length} campaign-days`,
      statements: () => recordOn((tx) => listDailyCounts(tx, orgId, { from: yearFrom, to: yearTo })),
    })

    const results: ReadResult[] = []
    for (const [index, read] of reads.entries()) {
      const latencies = new Float64Array(READ_CALLS)
      let answer = ''
      const elsewhere = meterElsewhere([api], databaseUrl)
      for (let i = 0; i < perRead; i++) {
        requestId = readRequestId(index, i)
        const started = performance.now()
        answer = await read.call(i)
        if (i >= READ_WARM_UP_CALLS) latencies[i - READ_WARM_UP_CALLS] = performance.now() - started
      }
      const machine = elsewhere.stop()
      const plans = await explainGeneric(explainer, await read.statements(perRead - 1))
      const p99Ms = percentile(latencies, 99)
      const result = {
        name: read.name,
        via: read.via,
        calls: READ_CALLS,
        p50Ms: percentile(latencies, 50),
        p99Ms,
        maxMs: Math.max(...latencies),
        answer,
        plans,
        goalMs: read.goalMs ?? READ_P99_GOAL_MS,
        met: p99Ms <= (read.goalMs ?? READ_P99_GOAL_MS),
        elsewhereCpus: machine.cpus,
        diskReadMiB: machine.diskReadMiB,
        service: undefined as ReadResult['service'],
      }
      log(`read ${read.name}: p50 ${result.p50Ms.toFixed(1)} ms, p99 ${p99Ms.toFixed(1)} ms, max ${result.maxMs.toFixed(1)} ms (${answer})`)
      results.push(result)
    }
    // The service's own times of the HTTP calls, from its request log (written at least every second).
    await sleep(2000)
    const served = await servedTimes(api.logFile)
    for (const [index, result] of results.entries()) {
      if (result.via !== 'HTTP') continue
      const times = Array.from({ length: READ_CALLS }, (_, i) => served.get(readRequestId(index, READ_WARM_UP_CALLS + i)))
      if (times.some((ms) => ms === undefined)) continue
      const ms = Float64Array.from(times as number[])
      result.service = { p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99), maxMs: Math.max(...ms) }
    }
    return { reads: results, readDay, jit }
  } finally {
    agent.destroy()
    await explainer.end()
    await db.close()
  }
}

/** A task list's filters, as the query string gives them and as the store takes them. */
interface TaskQuery {
  status?: 'pending' | 'in_progress' | 'completed'
  outcome?: TaskOutcome
  campaign?: string
  testMode?: boolean
  phone?: string
  externalId?: ExternalId
  createdFrom?: number
  createdBefore?: number
}

function queryString(query: TaskQuery, before: string | undefined): string {
  const search = new URLSearchParams()
  if (query.status !== undefined) search.set('status', query.status)
  if (query.outcome !== undefined) search.set('outcome', query.outcome)
  if (query.campaign !== undefined) search.set('campaign', query.campaign)
  if (query.testMode !== undefined) search.set('test_mode', String(query.testMode))
  // URLSearchParams writes the number's + as %2B.
  if (query.phone !== undefined) search.set('phone', query.phone)
  if (query.externalId !== undefined) {
    search.set('source', query.externalId.source)
    search.set('type', query.externalId.type)
    search.set('value', query.externalId.value)
  }
  if (query.createdFrom !== undefined) search.set('created_from', new Date(query.createdFrom).toISOString())
  if (query.createdBefore !== undefined) search.set('created_before', new Date(query.createdBefore).toISOString())
  if (before !== undefined) search.set('before', before)
  return search.toString()
}

/** As the route hands the query to the store (src/http/routes/tasks.ts); ids and numbers are given as recorded. */
function storeFilter(query: TaskQuery): Omit<TaskFilter, 'after'> {
  return {
    externalId: query.externalId,
    phone: query.phone,
    status: query.status,
    outcome: query.outcome,
    campaign: query.campaign,
    testMode: query.testMode,
    createdFrom: query.createdFrom,
    createdBefore: query.createdBefore,
  }
}

/**
 * PEOPLE people of the big organization: the summary's samples first (ids of triggers not in test mode, and numbers
 * that are valid), then others drawn from its triggers across the history (a sample of the table's blocks), each
 * with a number of its own, in a fixed order mixing the history's times.
 */
async function samplePeople(client: pg.Client, history: HistorySummary): Promise<Person[]> {
  const big = history.bigOrganization
  const pages = Number((await client.query<{ pages: string }>(`SELECT relpages AS pages FROM pg_class WHERE relname = 'triggers'`)).rows[0]!.pages)
  const percent = Math.min(100, (100 * SAMPLED_BLOCKS) / Math.max(1, pages))
  const { rows } = await client.query<{ id: ExternalId; phone: string }>(
    `SELECT ids->0 AS id, phone FROM triggers TABLESAMPLE SYSTEM ($2) REPEATABLE (7)
     WHERE org_id = $1 AND NOT test_mode AND jsonb_array_length(ids) > 0 AND phone <> ''`,
    [big.id, percent],
  )
  const people: Person[] = []
  const phones = new Set<string>()
  const ids = new Set<string>()
  const add = (person: Person) => {
    const key = JSON.stringify([person.id.source, person.id.type, person.id.value])
    if (phones.has(person.phone) || ids.has(key) || normalizePhone(person.phone) !== person.phone) return
    phones.add(person.phone)
    ids.add(key)
    people.push(person)
  }
  const samples = Math.min(big.externalIds.length, big.phones.length)
  for (let i = 0; i < samples; i++) add({ id: big.externalIds[i]!, phone: big.phones[i]!.phone })
  // A fixed shuffle (the sample comes in heap order, which is time order).
  const shuffled = rows.map((row, index) => ({ row, key: (index * 2_654_435_761) % 4_294_967_296 })).sort((a, b) => a.key - b.key)
  for (const { row } of shuffled) {
    if (people.length >= PEOPLE) break
    add({ id: row.id, phone: row.phone })
  }
  if (people.length < READ_WARM_UP_CALLS + READ_CALLS) throw new Error(`only ${people.length} people of the big organization found to read by`)
  return people
}

function readRequestId(read: number, call: number): string {
  return `growth-read-${read}-${call}`
}

/** The milliseconds the service's request log gives each request it answered (src/app.ts, RequestLog), by request id. */
async function servedTimes(logFile: string): Promise<Map<string, number>> {
  const times = new Map<string, number>()
  for (const line of (await readFile(logFile, 'utf8')).split('\n')) {
    if (!line.includes('"growth-read-')) continue
    try {
      const entry = JSON.parse(line) as { request_id?: string; ms?: number }
      if (entry.request_id !== undefined && typeof entry.ms === 'number') times.set(entry.request_id, entry.ms)
    } catch {
      // Not a line of the logger's.
    }
  }
  return times
}

/** A Queryable that records each statement it runs. */
function recording(inner: Queryable, into: Recorded[]): Queryable {
  return {
    query: <Row>(sql: string, params?: readonly unknown[]) => {
      into.push({ sql, params: params ?? [] })
      return inner.query<Row>(sql, params)
    },
    exec: (sql) => inner.exec(sql),
  }
}

/**
 * Each statement as PostgreSQL runs it under a generic plan: prepared (its parameters' types inferred, as they are
 * for the service's named statements), then EXPLAIN (ANALYZE, BUFFERS) EXECUTE with plan_cache_mode
 * force_generic_plan, in a transaction rolled back.
 */
async function explainGeneric(client: pg.Client, statements: readonly Recorded[]): Promise<ExplainedStatement[]> {
  await client.query('SET plan_cache_mode = force_generic_plan')
  const explained: ExplainedStatement[] = []
  for (const [index, { sql, params }] of statements.entries()) {
    const name = `bench_generic_${index}`
    try {
      await client.query(`PREPARE ${name} AS ${sql}`)
    } catch (error) {
      explained.push({ sql, plan: `not prepared: ${(error as Error).message}`, executionMs: undefined })
      continue
    }
    try {
      await client.query('BEGIN')
      const args = params.map((value) => (value === null || value === undefined ? 'NULL' : client.escapeLiteral(asText(value))))
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE ${name}${args.length === 0 ? '' : `(${args.join(', ')})`}`)
      const plan = rows.map((row) => row['QUERY PLAN']).join('\n')
      const ms = /Execution Time: ([\d.]+) ms/.exec(plan)?.[1]
      explained.push({ sql, plan, executionMs: ms === undefined ? undefined : Number(ms) })
    } catch (error) {
      explained.push({ sql, plan: `not explained: ${(error as Error).message}`, executionMs: undefined })
    } finally {
      await client.query('ROLLBACK')
      await client.query(`DEALLOCATE ${name}`)
    }
  }
  await client.query('RESET plan_cache_mode')
  return explained
}

/** A parameter as the text of a literal: arrays in PostgreSQL's array syntax, objects as JSON, instants in ISO 8601. */
function asText(value: unknown): string {
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) {
    return `{${value.map((item) => (item === null || item === undefined ? 'NULL' : `"${asText(item).replace(/[\\"]/g, (c) => `\\${c}`)}"`)).join(',')}}`
  }
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

// The report.

/** The first column left-aligned, the figures right-aligned. */
function markdownTable(columns: readonly string[], rows: readonly string[][]): string {
  const line = (values: readonly string[]) => `| ${values.join(' | ')} |`
  return [line(columns), line(columns.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n')
}

const figure = (value: number | undefined, digits: number) => (value === undefined ? '—' : value.toFixed(digits))
const thousands = (value: number) => Math.round(value).toLocaleString('en-US')

function rate(result: HistoryBenchResult, round: EndToEndRound | undefined): number | undefined {
  return round?.outcome === 'complete' ? result.endToEnd.triggers / round.seconds : undefined
}

/** One figure the project holds the run to, and this run's. */
export interface HistoryVerdict {
  goal: string
  measured: string
  met: boolean
}

export function historyVerdicts(result: HistoryBenchResult): HistoryVerdict[] {
  const { ratio } = result.endToEnd
  return [
    {
      goal: `end to end on the grown database, as the big organization: triggers/s within ${Math.round((1 - GROWN_RATIO_GOAL) * 100)} % of the fresh database's in the same run`,
      measured: ratio === undefined ? 'none (a round did not complete)' : `${ratio.toFixed(2)} times the fresh database's triggers/s (median over the pairs)`,
      met: ratio !== undefined && ratio >= GROWN_RATIO_GOAL,
    },
    ...result.reads.map((read) => ({
      goal: `${read.name}: at most ${read.goalMs} ms at p99`,
      measured: `p99 ${read.p99Ms.toFixed(1)} ms`,
      met: read.met,
    })),
  ]
}

/** The section of the report: method, the history, end to end both ways, the reads, and the targets. */
export function historySection(result: HistoryBenchResult): Section {
  const { history, endToEnd: e2e, bigOrganization: big } = result
  const others = history.organizations.slice(1)
  const summary = (name: DatabaseName) => e2e.summaries[name]
  const both = (label: string, value: (round: EndToEndRound | undefined) => number | undefined, digits: number) => {
    const fresh = value(summary('fresh'))
    const grown = value(summary('grown'))
    return [label, figure(fresh, digits), figure(grown, digits), fresh === undefined || grown === undefined ? '—' : (grown / fresh).toFixed(2)]
  }
  const verdicts = historyVerdicts(result)
  const readsMet = result.reads.filter((read) => read.met).length
  const mix = Object.entries(history.template.mix)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ')
  const body = `
The trigger path on a database that has been in use for a year, beside a fresh database on the same PostgreSQL server in the same run, and the big organization's reads on that year of history.

Method:

- The history: bench/history.ts on an empty database of a PostgreSQL server of the benchmark's own (bench/privatePostgres.ts: ${result.serverSettings}): a template of ${history.template.triggers} triggers through the service (${mix}), copied by SQL into ${history.organizations.length} organizations over the year, oldest first, then \`VACUUM (ANALYZE)\`: the big organization ${thousands(history.bigOrganization.triggers)} triggers, ${others.length} others ${others.length === 0 ? 'none' : `${thousands(Math.min(...others.map((o) => o.triggers)))} each`}. Every task of the history has completed, and its webhooks were delivered. The fresh database: an empty database of the same server.
- End to end, as the section above measures its PostgreSQL layout: an API process (\`node dist/cli.js serve --no-workers\`) and a worker process (\`dist/cli.js worker\`) for each database, all four pinned to CPU 0 and running side by side for the whole measurement, only one database's loaded at a time (rather than restarted between rounds, which would meet every round with a cold JIT and empty caches); the benchmark process, with its ${CLIENTS} clients and one receiver per database, on CPU 1; PostgreSQL not pinned. Plain simulator calls that complete at once, every task due at once; a round ends when the receiver holds the \`task.completed\` and the \`interaction.finalized\` of every trigger of it (given up after ${WEBHOOKS_TIMEOUT_SECONDS} s).
- On the fresh database an organization is provisioned as the end-to-end section does. On the grown one the triggers are posted as the big organization (${big.id}): its key from the history (scopes ${big.keyScopes.join(', ')}${big.keyIssued ? '; another key was issued with the scopes the benchmark needs' : ''}), its campaign \`${big.routingKey}\` (${big.campaignCreated ? 'made by the benchmark like the fresh one' : "the history's, made like the fresh one's"}), its rate limit ${big.rateLimitRaised ? `raised from ${big.rateLimitPerSecond}/s ` : ''}beyond what the service takes here, its ${big.endpointsDeleted} cloned webhook endpoint(s) deleted (they point to the history's receiver, which has gone) and the benchmark's receiver registered instead.
- Each database is warmed up with ${e2e.warmUpTriggers} triggers taken through the whole pipeline; then ${e2e.pairs} pairs of rounds of ${e2e.triggers} triggers, one round on each database, the fresh database first in odd pairs and the grown one first in even ones (each round adds rows, and the machine drifts). Both databases get the same bodies (bench/bodies.ts: the warm-ups the same ones, the two rounds of a pair the same ones), each posted once to each database, so that each database only ever sees people new to it and both sides of a pair do the same work. The ratio is taken within each pair (grown triggers/s over fresh), and its median over the pairs given; every other figure is the median over each database's rounds.
- CPU per trigger: the service's two processes' CPU time and PostgreSQL's (the backends of the database measured and the server's own processes), over each round, divided by its triggers, as in the section above. Each layout's CPU is also read for ${IDLE_SECONDS} s with nothing posted, before the warm-ups and after the last round: what its workers' polling and the retention sweep cost there, and what the idle layout takes from the loaded one. "CPUs busy elsewhere" (each round, each read): the machine's busy CPU time over it (\`/proc/stat\`, steal included) less that of the measured processes, of PostgreSQL for the database measured and of the benchmark process, per second: the idle layout and, on this shared machine, whatever else ran beside the measurement (of 2 CPUs). "Disk read": what the machine's disks read meanwhile (\`/proc/diskstats\`), by anything: pages of the history that neither PostgreSQL's buffers nor the page cache held.
- Reads, on the grown database once the fresh layout has stopped, as the big organization, one call at a time from the benchmark process (CPU 1), ${READ_WARM_UP_CALLS} calls of warm-up (which also let PostgreSQL move the statements to their generic plans, considered from a connection's sixth run of a statement) then ${READ_CALLS} measured, each from sending the request to reading the whole answer (for an HTTP read, "service p99" is the same calls as the API process's request log times them, from the request's arrival to its answer). The HTTP reads go to the API process on kept-alive connections; the WhatsApp reply lookup and erasure's find call the store's functions (src/store/interactions.ts \`findLatestInteractionWith\`, src/store/erasure.ts \`findPersonRecords\`, the latter in a transaction rolled back) on a connection of the benchmark's own, prepared as the service prepares them. A read by person takes another of the big organization's people at each call (the history's sampled ids and numbers first, then others drawn from its triggers across the year), and each read people of its own. The task list's pages are the default 50; a next page is the one after the first page's last task; the day of \`created_from\`/\`created_before\` is ${result.readDay}, that of the big organization's first trigger past the middle of its history; the daily counts span the last 366 days.

The history:

${markdownTable(['figure', 'value'], [
  ['organizations', String(history.organizations.length)],
  ['the big organization\'s triggers', thousands(history.bigOrganization.triggers)],
  ['each other organization\'s triggers', others.length === 0 ? '—' : thousands(Math.min(...others.map((o) => o.triggers)))],
  ['triggers in all', thousands(history.rows.triggers ?? 0)],
  ['built in (s): template, copies, VACUUM (ANALYZE), total', `${history.seconds.template.toFixed(0)}, ${history.seconds.copies.toFixed(0)}, ${history.seconds.vacuumAnalyze.toFixed(0)}, ${history.seconds.total.toFixed(0)}`],
  ['database size (GiB)', (history.databaseBytes / 1024 ** 3).toFixed(2)],
])}

${markdownTable(['table', 'rows', 'rows per trigger'], Object.entries(history.rows)
  .sort(([, a], [, b]) => b - a)
  .map(([table, rows]) => [table, thousands(rows), String(history.rowsPerTrigger[table] ?? '—')]))}

End to end (medians over each database's rounds):

${markdownTable(['figure', 'fresh', 'grown', 'grown ÷ fresh'], [
  ['rounds', String(e2e.rounds.filter((r) => r.database === 'fresh').length), String(e2e.rounds.filter((r) => r.database === 'grown').length), ''],
  both('first POST to last webhook (s)', (r) => r?.seconds, 1),
  both('triggers/s end to end', (r) => rate(result, r), 0),
  both('intake latency p50 (ms)', (r) => r?.intake.p50Ms, 1),
  both('intake latency p99 (ms)', (r) => r?.intake.p99Ms, 1),
  both('service CPU per trigger (ms)', (r) => r?.cpuMsPerTrigger.service, 2),
  ['… by process (ms)', ...DATABASES.map((name) => summary(name)?.cpuMsPerTrigger.byProcess?.map(({ name: process, ms }) => `${process} ${ms.toFixed(2)}`).join(' + ') ?? '—'), ''],
  both('PostgreSQL CPU per trigger (ms)', (r) => r?.cpuMsPerTrigger.postgres, 2),
  ['webhooks received / expected (each round)', ...DATABASES.map((name) => (summary(name) === undefined ? '—' : `${summary(name)!.webhooksReceived} / ${e2e.webhooksExpected}`)), ''],
  ['duplicates (webhook-ids received more than once)', String(e2e.duplicateWebhooks.fresh), String(e2e.duplicateWebhooks.grown), ''],
  ['webhooks with data.result not null (warm-up\'s included)', ...DATABASES.map((name) => `${e2e.resultChecks[name].wrong} of ${e2e.resultChecks[name].checked}`), ''],
  ['service log lines at warn or above', String(e2e.serviceLogProblems.fresh.length), String(e2e.serviceLogProblems.grown.length), ''],
  ['both processes ready after (s)', e2e.startSeconds.fresh.toFixed(1), e2e.startSeconds.grown.toFixed(1), ''],
  ['grown triggers/s over fresh (median over the pairs)', '', '', figure(e2e.ratio, 2)],
])}

Each round:

${markdownTable(['round', 'pair', 'database', 'first POST to last webhook (s)', 'triggers/s end to end', 'intake p99 (ms)', 'service CPU per trigger (ms)', 'PostgreSQL CPU per trigger (ms)', 'CPUs busy elsewhere', 'disk read (MiB)', "pair's grown ÷ fresh"], e2e.rounds.map(({ database, pair, round, elsewhereCpus, diskReadMiB }, index) => [
  String(index + 1),
  String(pair),
  database,
  round.outcome === 'complete' ? round.seconds.toFixed(1) : `${round.outcome} after ${round.seconds.toFixed(0)} s`,
  figure(rate(result, round), 0),
  round.intake.p99Ms.toFixed(1),
  figure(round.cpuMsPerTrigger.service, 2),
  figure(round.cpuMsPerTrigger.postgres, 2),
  figure(elsewhereCpus, 2),
  diskReadMiB.toFixed(1),
  database === 'grown' ? figure(pairRatio(e2e.rounds, pair), 2) : '',
]))}

Idle, ${IDLE_SECONDS} s with nothing posted (ms of CPU per second):

${markdownTable(['database', 'service, before the warm-up', 'PostgreSQL, before the warm-up', 'service, after the rounds', 'PostgreSQL, after the rounds'], DATABASES.map((name) => {
  const { atStart, atEnd } = e2e.idle[name]
  return [name, atStart.serviceMsPerSecond.toFixed(1), atStart.postgresMsPerSecond.toFixed(1), figure(atEnd?.serviceMsPerSecond, 1), figure(atEnd?.postgresMsPerSecond, 1)]
}))}

Reads of the big organization on the grown database (${READ_CALLS} calls each, after ${READ_WARM_UP_CALLS}; "generic plan" is the summed execution time of the read's statements under \`plan_cache_mode = force_generic_plan\`, from \`EXPLAIN (ANALYZE, BUFFERS)\` of its last call, on another connection with the service's session settings, \`jit\` ${result.explainJit}):

${markdownTable(['read', 'via', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'service p99 (ms)', 'last answer', 'generic plan (ms)', 'CPUs busy elsewhere', 'disk read (MiB)', 'p99 goal'], result.reads.map((read) => [
  read.name.replaceAll('|', '\\|'),
  read.via,
  read.p50Ms.toFixed(1),
  read.p99Ms.toFixed(1),
  read.maxMs.toFixed(1),
  figure(read.service?.p99Ms, 1),
  read.answer,
  read.plans.every((plan) => plan.executionMs !== undefined) ? read.plans.reduce((sum, plan) => sum + plan.executionMs!, 0).toFixed(1) : '—',
  figure(read.elsewhereCpus, 2),
  read.diskReadMiB.toFixed(1),
  `${read.goalMs} ms, ${read.met ? 'met' : '**not met**'}`,
]))}

Targets (the project's):

- ${verdicts[0]!.goal} — ${verdicts[0]!.measured}, **${verdicts[0]!.met ? 'met' : 'not met'}**
- every read of the big organization above within its goal at p99 (${READ_P99_GOAL_MS} ms; a platform's inbound webhook ${INBOUND_P99_GOAL_MS} ms) — ${readsMet} of ${result.reads.length} within it${readsMet === result.reads.length ? '' : ` (over it: ${result.reads.filter((read) => !read.met).map((read) => `${read.name}, ${read.p99Ms.toFixed(1)} ms`).join('; ')})`}, **${readsMet === result.reads.length ? 'met' : 'not met'}**
`
  return { heading: 'Growth: the trigger path and the reads on a year of history', body }
}

/** A pair's grown triggers/s over its fresh triggers/s, if both its rounds completed. */
function pairRatio(rounds: readonly GrowthRound[], pair: number): number | undefined {
  const fresh = rounds.find((round) => round.pair === pair && round.database === 'fresh')?.round
  const grown = rounds.find((round) => round.pair === pair && round.database === 'grown')?.round
  // Both rounds post as many triggers: the rates' ratio is that of the times, the other way round.
  return fresh?.outcome === 'complete' && grown?.outcome === 'complete' ? fresh.seconds / grown.seconds : undefined
}

/** Every read's plans, for BENCH_GROWTH_PLANS. */
export function plansText(result: HistoryBenchResult): string {
  return result.reads
    .map((read) => [`== ${read.name}: p50 ${read.p50Ms.toFixed(1)} ms, p99 ${read.p99Ms.toFixed(1)} ms`, ...read.plans.map((plan) => `${plan.sql}\n${plan.plan}`)].join('\n\n'))
    .join('\n\n')
}
