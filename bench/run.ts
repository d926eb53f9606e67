/**
 * `npm run bench`: POST /api/v2/triggers throughput and p99 latency on
 * PostgreSQL and on PGlite, beside a bare Fastify route measured in the same
 * run; triggers through batch requests beside single ones; the dispatcher's and the webhook deliverer's throughput on PostgreSQL;
 * the dispatcher with the calling law (consents, hours, caps, a 10-million-number do-not-call registry) beside it without,
 * and the registry's load time and size;
 * the pipeline end to end, from the first POST to the last webhook, on
 * PostgreSQL (an API process and a worker process) and on PGlite (one
 * process), with simulated calls that report no result, simulated calls that each report a
 * conversation's result, and calls through a fake of Vapi's API and server URL that report the same one, in
 * rotating rounds of the same run; how long a new client's first request waits beside a steady
 * load; messaging (bench/messaging.ts): a person's WhatsApp or SMS message from the provider's webhook to the client's, and
 * session messages a second through POST /api/v2/interactions/{id}/messages, through the test suite's fakes of WhatsApp
 * Cloud and Twilio; reach (bench/reachTiming.ts): learned retry timing beside fixed delays on one simulated population, on an
 * injected clock; and growth (bench/growth.ts): the trigger path and the reads on a year of history, bytes per trigger and table
 * sizes under steady load while history is deleted, on a PostgreSQL server of the benchmark's own; printed and written
 * to BENCHMARKS.md.
 *
 * Each server runs on CPU 0 and wrk on CPU 1 (as do, end to end, the clients
 * and the webhook receiver), so that the load generator does not take CPU from
 * the server it measures. The three trigger targets
 * are measured in turn, round after round, and each round's ratio is taken
 * against the bare route's figure of that same round: a shared machine's
 * speed drifts by more over a minute than most changes are worth, and the
 * median of interleaved rounds stays put where one measurement of each does not.
 *
 * Environment: BENCH_ROUNDS (default 3), BENCH_DURATION (seconds measured
 * per target and round, default 10), BENCH_CONNECTIONS (default 64),
 * BENCH_E2E_TRIGGERS (triggers posted end to end in each round, default
 * 5000), BENCH_E2E_ROUNDS (measured rounds of each variant, without results,
 * with them and through Vapi, in turn: default 3, so 9 rounds),
 * BENCH_E2E_WARM_UP (triggers taken through the pipeline before those
 * measured, default 5000; 0 measures a service that has just started), and
 * BENCH_FRESH_SECONDS (how long new connections are timed beside the load,
 * default 20), BENCH_REGISTRY_NUMBERS (the law section's registry, default 10,000,000; a smaller one for a quick
 * try), BENCH_ONLY, a comma-separated list of the sections to run
 * (triggers, batch, dispatcher, law, deliverer, e2e, fresh, messaging, reach, growth), e.g. `BENCH_ONLY=e2e npm run bench` to iterate
 * on one (growth alone takes about 13 minutes: a quick run leaves it out; law about 2 minutes, half of it the registry's load;
 * messaging about a minute and a half), BENCH_MESSAGING_MESSAGES (inbound messages measured per channel, default 1000), BENCH_MESSAGING_RATE
 * (those posted a second, default 50), BENCH_MESSAGING_SECONDS (seconds of session messages measured, default 10), BENCH_REACH_PEOPLE
 * (the population of the reach section, bench/reachTiming.ts, default 10,000) and BENCH_REACH_DAYS (the working days its triggers come on, default 10), BENCH_E2E_LAYOUTS likewise for the
 * end-to-end layouts (postgres, embedded), growth's own (bench/growth.ts), and BENCH_SERVER_NODE_FLAGS, node flags for
 * the service's processes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), and BENCH_POSTGRES_URL, the PostgreSQL
 * server to make the benchmark's databases on (default postgres://postgres@127.0.0.1:5432/postgres), and BENCH_TRACES=on,
 * which runs the service with traces on, exported to a local sink (bench/traceSink.ts). A run of some
 * sections replaces those in BENCHMARKS.md, each marked with when it was measured, and leaves the others (growth's
 * history part makes a section, its storage and retention parts together another); a run of a part of a section
 * (BENCH_E2E_LAYOUTS, BENCH_GROWTH_ONLY=storage without retention or the reverse) is printed, and BENCHMARKS.md is
 * left as it was.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import path from 'node:path'
import { type BodySet, CAMPAIGNS, generateBodies } from './bodies.ts'
import { BATCH_CLIENTS, BATCH_SIZE, batchBodies, measureBatches } from './batches.ts'
import { stopAllChildren, stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { benchDeliverer } from './deliverer.ts'
import {
  benchDispatcher,
  capBinds,
  createBenchCampaign,
  decisionsOf,
  dispatchOnce,
  type DispatcherRun,
  LAW_COMPLIANCE,
  lawContacts,
  openDispatcherDatabase,
  poolJurisdictions,
  poolsOpen,
  recordLawConsents,
} from './dispatcher.ts'
import { benchMessaging, messagingSection, messagingTextTable } from './messaging.ts'
import { benchReachTiming, reachTimingSection } from './reachTiming.ts'
import { explainLawChecks, loadRegistryThroughCli, registryProbes, registrySizes, writeRegistryFile } from './registry.ts'
import { freshConnectionMethod, freshConnectionVerdict, measureFreshConnections } from './freshConnection.ts'
import { benchGrowth, GROWTH_PARTS, growthPartsToRun, growthSectionsWhole } from './growth.ts'
import {
  benchEndToEnd,
  CLIENTS as END_TO_END_CLIENTS,
  END_TO_END_LAYOUTS,
  type EndToEndLayoutName,
  endToEndVerdicts,
  resultChecksFailed,
  VARIANTS,
} from './endToEnd.ts'
import {
  LOAD_CPU,
  log,
  namedIn,
  OPERATOR_TOKEN,
  PHONE_HASH_KEY,
  positiveInteger,
  postgresSettings,
  provision,
  ROOT,
  SERVER_CPU,
  type Server,
  startServer,
  tail,
  waitUntilReady,
  wholeNumber,
  withPostgresDatabase,
} from './harness.ts'
import {
  type BatchMeasured,
  batchRatio,
  batchSection,
  batchTextTable,
  delivererSection,
  dispatcherSection,
  endToEndSection,
  endToEndTextTable,
  freshConnectionSection,
  lawSection,
  freshConnectionTextTable,
  type Machine,
  machineSection,
  type Measured,
  mergeReport,
  renderReport,
  type RoundResult,
  roundsTextTable,
  type Section,
  textTable,
  triggerRows,
  triggerSection,
  type TriggerRow,
  type Verdict,
} from './report.ts'
import { startTraceSink } from './traceSink.ts'
import { failureOf, runWrk } from './wrk.ts'

const WARM_UP_SECONDS = 5
const BODY_COUNT = 3000
const DISPATCHER_TASKS = 10_000
/** A pace no worker reaches: what pacing costs when it holds nothing back. */
const DISPATCHER_PACE = 100_000
/** Pairs of dispatcher runs, unpaced and paced: one run lasts about a second, and one pair alone was seen 10 % apart either way. */
const DISPATCHER_ROUNDS = 3
const DELIVERIES = 5_000
/** Deliveries sent first, in the same stream, to warm the worker up: the rate is the measured ones'. */
const DELIVERIES_WARM_UP = 5_000
/** Bodies posted at once when checking that every one gets 201. */
const VERIFY_CONCURRENCY = 16
/** The law section: the registry's numbers, and pairs of dispatcher runs with the law and without. */
const REGISTRY_NUMBERS = 10_000_000
/** One pair takes about 5 s; in one section of 3 pairs they were seen 0.69 to 0.87 apart, so the median is of 7. */
const LAW_ROUNDS = 7
/** How far ahead the law runs' jurisdictions must stay open: the section takes about 2 minutes; the rest is margin. */
const LAW_OPEN_FOR_MS = 30 * 60_000
/** Tasks of one dispatch batch (src/workers/dispatcher.ts): the statements explained are those of a batch this size. */
const BATCH_TASKS = 256
const SECTIONS = ['triggers', 'batch', 'dispatcher', 'law', 'deliverer', 'e2e', 'fresh', 'messaging', 'reach', 'growth'] as const
/** Triggers per second through batches over those through single requests. */
const BATCH_GOAL = 3
type SectionName = (typeof SECTIONS)[number]

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

async function main(workDir: string): Promise<void> {
  const only = sectionsToRun()
  const bodySet = generateBodies(BODY_COUNT)
  const bodiesFile = path.join(workDir, 'bodies.ndjson')
  await writeFile(bodiesFile, `${bodySet.bodies.join('\n')}\n`)
  const load: Load = {
    bodies: bodySet.bodies,
    bodiesFile,
    rounds: positiveInteger('BENCH_ROUNDS', 3),
    durationSeconds: positiveInteger('BENCH_DURATION', 10),
    connections: positiveInteger('BENCH_CONNECTIONS', 64),
  }
  const runs: Record<SectionName, () => Promise<Section[]>> = {
    triggers: async () => [await benchTriggerSection(load, bodySet, workDir)],
    batch: async () => [await benchBatchSection(load, workDir)],
    dispatcher: async () => [await benchDispatcherSection(workDir)],
    law: async () => [await benchLawSection(workDir)],
    deliverer: async () => [await benchDelivererSection(workDir)],
    e2e: async () => [await benchEndToEndSection(load, workDir)],
    fresh: async () => [await benchFreshConnectionSection(load, workDir)],
    messaging: async () => [await benchMessagingSection(workDir)],
    reach: async () => [await benchReachTimingSection()],
    growth: () => benchGrowth(workDir),
  }
  const sections: Section[] = []
  const traceSink = process.env.BENCH_TRACES === 'on' ? await startTraceSink() : undefined
  // The servers the sections start take the benchmark's environment.
  Object.assign(process.env, traceSink?.environment)
  try {
    for (const name of only) sections.push(...(await runs[name]()))
  } finally {
    if (traceSink !== undefined) log(`traces: ${traceSink.received.exports} exports, ${(traceSink.received.bytes / 1e6).toFixed(1)} MB`)
    await traceSink?.close()
  }

  const machine = machineSection(await describeMachine())
  const report = path.join(ROOT, 'BENCHMARKS.md')
  const everyLayout = endToEndLayoutsToRun().length === END_TO_END_LAYOUTS.length
  const growthParts = growthPartsToRun()
  if (only.length === SECTIONS.length && everyLayout && growthParts.length === GROWTH_PARTS.length) {
    await writeFile(report, renderReport([machine, ...sections]))
    log('wrote BENCHMARKS.md')
  } else if (everyLayout && (!only.includes('growth') || growthSectionsWhole(growthParts))) {
    const growthOnly = !only.includes('growth') || growthParts.length === GROWTH_PARTS.length ? '' : ` BENCH_GROWTH_ONLY=${growthParts.join(',')}`
    const measured = `Measured ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} by \`BENCH_ONLY=${only.join(',')}${growthOnly} npm run bench\`, on the machine above.`
    await writeFile(report, mergeReport(await readFile(report, 'utf8'), sections, measured))
    log(`only ${only.join(', ')}: those sections of BENCHMARKS.md are replaced, the others left as they were`)
  } else {
    process.stdout.write(`\n${renderReport([machine, ...sections])}`)
    log('a part of a section only: the report is printed above, and BENCHMARKS.md is left as it was')
  }
}

/** The layouts BENCH_E2E_LAYOUTS names, in the report's order; both when it is unset. */
function endToEndLayoutsToRun(): EndToEndLayoutName[] {
  return namedIn('BENCH_E2E_LAYOUTS', END_TO_END_LAYOUTS)
}

/** The sections BENCH_ONLY names, in the report's order; every one when it is unset. */
function sectionsToRun(): SectionName[] {
  return namedIn('BENCH_ONLY', SECTIONS)
}

async function benchTriggerSection(load: Load, bodySet: BodySet, workDir: string): Promise<Section> {
  log(
    `${load.bodies.length} bodies; ${load.rounds} rounds of ${load.durationSeconds} s measured per target, after ${WARM_UP_SECONDS} s of warm-up, ${load.connections} connections`,
  )
  const measured = await withPostgresDatabase((databaseUrl) => benchTriggers(load, workDir, databaseUrl))
  const rows = triggerRows(measured)
  const verdicts = GOALS.map((goal) => verdictFor(goal, rows.find((row) => row.target === goal.target)!))
  process.stdout.write(`\n${textTable(rows)}\n\n${roundsTextTable(measured)}\n\n${verdicts.map((v) => `${v.target}: ${v.goal}: ${v.met ? 'met' : 'NOT MET'}`).join('\n')}\n`)
  const method = {
    rounds: load.rounds,
    durationSeconds: load.durationSeconds,
    warmUpSeconds: WARM_UP_SECONDS,
    connections: load.connections,
    bodies: bodySet.bodies.length,
    countries: bodySet.countries,
    distinctNumbers: bodySet.distinctNumbers,
    phoneFormats: bodySet.phoneFormats,
  }
  return triggerSection(method, rows, measured, verdicts)
}

/** Batches of triggers beside single requests, on one API process and PostgreSQL, round after round in turn. */
async function benchBatchSection(load: Load, workDir: string): Promise<Section> {
  const batches = batchBodies(load.bodies)
  const measured = await withPostgresDatabase(async (databaseUrl): Promise<BatchMeasured> => {
    const target = await startService('PostgreSQL', { DATABASE_URL: databaseUrl }, load, workDir)
    try {
      await measureOnce(target, load, 'single-warm-up', WARM_UP_SECONDS)
      await measureBatches(target.server, target.apiKey, target.database!, batches, 'warm-up', WARM_UP_SECONDS)
      const rounds: BatchMeasured = { single: [], batched: [] }
      // In turn, one way first in odd rounds and the other in even ones: each round adds rows, and neither way
      // is always measured on the larger tables.
      for (let round = 1; round <= load.rounds; round++) {
        const single = () => measureOnce(target, load, `single-${round}`, load.durationSeconds)
        const batched = () => measureBatches(target.server, target.apiKey, target.database!, batches, `round-${round}`, load.durationSeconds)
        if (round % 2 === 1) {
          rounds.single.push(await single())
          rounds.batched.push(await batched())
        } else {
          rounds.batched.push(await batched())
          rounds.single.push(await single())
        }
      }
      return rounds
    } finally {
      await stopChild(target.server.child)
    }
  })
  const ratio = batchRatio(measured)
  const verdict = {
    target: 'PostgreSQL',
    goal: `triggers per second through batches of ${BATCH_SIZE} at least ${BATCH_GOAL} times those through single requests`,
    met: ratio >= BATCH_GOAL,
  }
  process.stdout.write(`\n${batchTextTable(measured, BATCH_SIZE)}\n\nbatches: ${verdict.goal}: ${ratio.toFixed(2)}, ${verdict.met ? 'met' : 'NOT MET'}\n`)
  const method = {
    batchSize: BATCH_SIZE,
    batchClients: BATCH_CLIENTS,
    connections: load.connections,
    rounds: load.rounds,
    durationSeconds: load.durationSeconds,
    warmUpSeconds: WARM_UP_SECONDS,
    bodies: load.bodies.length,
  }
  return batchSection(method, measured, verdict)
}

async function benchDispatcherSection(workDir: string): Promise<Section> {
  const run = async (perSecond: number | undefined, round: number) => {
    const variant = perSecond === undefined ? 'pacing off' : `paced at ${perSecond}/s`
    log(`dispatcher: round ${round}, ${DISPATCHER_TASKS} due tasks, ${variant}`)
    const result = await withPostgresDatabase((databaseUrl) =>
      benchDispatcher({
        databaseUrl,
        tasks: DISPATCHER_TASKS,
        root: ROOT,
        cpu: SERVER_CPU,
        logFile: path.join(workDir, `dispatcher-${round}${perSecond === undefined ? '' : '-paced'}.log`),
        timeoutMs: 300_000,
        perSecond,
      }),
    )
    process.stdout.write(`\ndispatcher, round ${round}, ${variant}: ${DISPATCHER_TASKS} tasks started in ${result.seconds.toFixed(2)} s, ${Math.round(result.tasksPerSecond)} per second\n`)
    return result
  }
  // Side by side, each pair in the other order than the last, so that the machine's drift falls on both.
  const rounds = []
  for (let round = 1; round <= DISPATCHER_ROUNDS; round++) {
    const pacedFirst = round % 2 === 0
    const first = await run(pacedFirst ? DISPATCHER_PACE : undefined, round)
    const second = await run(pacedFirst ? undefined : DISPATCHER_PACE, round)
    rounds.push(pacedFirst ? { unpaced: second, paced: first } : { unpaced: first, paced: second })
  }
  return dispatcherSection({ tasks: DISPATCHER_TASKS, pace: DISPATCHER_PACE }, rounds)
}

/**
 * The dispatcher with the law beside it without, on one database holding a registry of REGISTRY_NUMBERS numbers
 * (its load timed and sized first) and a consent for every number of the law runs; then the law checks' statements
 * for one batch, explained on it.
 */
async function benchLawSection(workDir: string): Promise<Section> {
  const registryNumbers = positiveInteger('BENCH_REGISTRY_NUMBERS', REGISTRY_NUMBERS)
  const started = Date.now()
  const { open, closed } = poolsOpen(started, started + LAW_OPEN_FOR_MS)
  if (open.length === 0) throw new Error(`law: no jurisdiction's hours are open for the next ${LAW_OPEN_FOR_MS / 60_000} minutes: ${closed.map((c) => `${c.name}: ${c.reason}`).join('; ')}`)
  log(`law: numbers of ${open.map((pool) => pool.name).join(', ')}; left out (closed within ${LAW_OPEN_FOR_MS / 60_000} minutes): ${closed.map((pool) => pool.name).join(', ') || 'none'}`)
  // Each round its own numbers, as many of each jurisdiction: a number's cap (Florida's, 3 in 24 hours) never binds.
  const perPoolPerRound = Math.ceil(DISPATCHER_TASKS / open.length)
  const contactsOfRound = Array.from({ length: LAW_ROUNDS }, (_, round) => lawContacts(open, DISPATCHER_TASKS, round * perPoolPerRound))
  return withPostgresDatabase(async (databaseUrl) => {
    const phoneHashKey = randomBytes(32).toString('hex')
    const base = await openDispatcherDatabase(databaseUrl)
    try {
      const file = path.join(workDir, 'registry.txt')
      const writeStarted = performance.now()
      const fileBytes = writeRegistryFile(file, registryNumbers)
      log(`law: ${registryNumbers} numbers written to ${file} (${(fileBytes / 1e6).toFixed(0)} MB) in ${((performance.now() - writeStarted) / 1000).toFixed(1)} s; loading them`)
      const sizeBefore = await registrySizes(base.db)
      const load = await loadRegistryThroughCli({
        databaseUrl,
        phoneHashKey,
        file,
        lines: registryNumbers,
        name: 'Synthetic national do-not-call registry',
        purposes: ['marketing'],
        root: ROOT,
        cpu: SERVER_CPU,
      })
      const sizeAfter = await registrySizes(base.db)
      await rm(file)
      process.stdout.write(
        `\nregistry: ${load.numbers} numbers loaded in ${load.wallSeconds.toFixed(1)} s (the load itself ${load.loadSeconds.toFixed(1)} s), peak memory ${load.peakMemoryMb.toFixed(0)} MB; ${((sizeAfter.total - sizeBefore.total) / 2 ** 20).toFixed(0)} MB added, ${((sizeAfter.total - sizeBefore.total) / load.numbers).toFixed(1)} bytes a number\n`,
      )

      const consentsStarted = performance.now()
      const consents = await recordLawConsents(base, phoneHashKey, contactsOfRound.flat().map((contact) => contact.phone))
      const consentSeconds = (performance.now() - consentsStarted) / 1000
      log(`law: ${consents} consents recorded in ${consentSeconds.toFixed(1)} s`)

      const run = async (variant: 'law' | 'none', round: number): Promise<DispatcherRun & { probes: number; decisions?: Awaited<ReturnType<typeof decisionsOf>> }> => {
        log(`law: round ${round}, ${DISPATCHER_TASKS} due tasks, ${variant === 'law' ? 'with the law' : 'without'}`)
        const campaignId = await createBenchCampaign(base, `${variant}-${round}`, variant === 'law' ? { compliance: LAW_COMPLIANCE } : {})
        const probesBefore = await registryProbes(base.db)
        const result = await dispatchOnce({
          base,
          campaignId,
          contacts: contactsOfRound[round - 1]!,
          phoneHashKey,
          label: `${variant}-${round}`,
          root: ROOT,
          cpu: SERVER_CPU,
          logFile: path.join(workDir, `law-${round}-${variant}.log`),
          timeoutMs: 300_000,
        })
        // The worker's backends have exited with it, their counts flushed as they went.
        await new Promise((resolve) => setTimeout(resolve, 500))
        const probes = (await registryProbes(base.db)) - probesBefore
        const decisions = variant === 'law' ? await decisionsOf(base.db, campaignId) : undefined
        if (decisions !== undefined && decisions.decisions.allowed !== DISPATCHER_TASKS) throw new Error(`law: round ${round}: decisions ${JSON.stringify(decisions.decisions)}`)
        const cpu = result.cpuUsPerStart === undefined ? '' : `, CPU per start: worker ${result.cpuUsPerStart.worker.toFixed(0)} µs, PostgreSQL ${result.cpuUsPerStart.postgres.toFixed(0)} µs`
        process.stdout.write(`law, round ${round}, ${variant}: ${DISPATCHER_TASKS} tasks started in ${result.seconds.toFixed(2)} s, ${Math.round(result.tasksPerSecond)} per second${cpu}; ${probes} registry probes\n`)
        return { ...result, probes, decisions }
      }
      // Side by side, each pair in the other order than the last, as the dispatcher's pairs.
      const rounds = []
      for (let round = 1; round <= LAW_ROUNDS; round++) {
        const lawFirst = round % 2 === 0
        const first = await run(lawFirst ? 'law' : 'none', round)
        const second = await run(lawFirst ? 'none' : 'law', round)
        rounds.push(lawFirst ? { law: first, none: second, lawFirst } : { none: first, law: second, lawFirst })
      }

      // One batch's law checks, as the dispatcher sends them for round 1's first numbers (listed nowhere, each with
      // its consent, capped ones with their attempt of round 1), explained on this database.
      const key = Buffer.from(phoneHashKey)
      const now = Date.now()
      const batch = contactsOfRound[0]!.slice(0, BATCH_TASKS).map((contact) => ({ orgId: base.orgId, phone: contact.phone }))
      const capped = batch.filter((number) => capBinds(number.phone, now))
      // A batch's capped numbers are new to law_attempts in the runs (each round has its own): numbers never called, for the lock.
      const fresh = lawContacts(open, BATCH_TASKS, LAW_ROUNDS * perPoolPerRound).map((contact) => ({ orgId: base.orgId, phone: contact.phone })).filter((number) => capBinds(number.phone, now))
      const explained = await explainLawChecks({ databaseUrl, db: base.db, phoneHashKey: key, batch, capped, fresh, subject: 'law-1', now, runs: 5 })
      const section = lawSection(
        {
          tasks: DISPATCHER_TASKS,
          registryNumbers,
          fileBytes,
          consents,
          consentSeconds,
          open: open.map((pool) => ({ name: pool.name, jurisdictions: poolJurisdictions(pool) })),
          closed,
          at: new Date(started),
          batchTasks: BATCH_TASKS,
        },
        { ...load, addedBytes: sizeAfter.total - sizeBefore.total, before: sizeBefore, after: sizeAfter },
        rounds,
        explained,
      )
      process.stdout.write(`\n${section.body}\n`)
      return section
    } finally {
      await base.db.close()
    }
  })
}

async function benchDelivererSection(workDir: string): Promise<Section> {
  log(`deliverer: ${DELIVERIES} webhook deliveries after ${DELIVERIES_WARM_UP} to warm up`)
  const deliverer = await withPostgresDatabase((databaseUrl) =>
    benchDeliverer({
      databaseUrl,
      deliveries: DELIVERIES,
      warmUp: DELIVERIES_WARM_UP,
      root: ROOT,
      cpu: SERVER_CPU,
      logFile: path.join(workDir, 'deliverer.log'),
      timeoutMs: 300_000,
    }),
  )
  process.stdout.write(
    `deliverer: ${DELIVERIES} webhooks delivered in ${deliverer.seconds.toFixed(2)} s, ${Math.round(deliverer.deliveriesPerSecond)} per second (the ${DELIVERIES_WARM_UP} before them, from a worker just started: ${Math.round(deliverer.warmUpPerSecond)} per second)\n`,
  )
  return delivererSection(deliverer)
}

/** The pipeline end to end in both layouts, beside the bare route's rate with as many connections as the end-to-end clients. */
async function benchEndToEndSection(load: Load, workDir: string): Promise<Section> {
  const triggers = positiveInteger('BENCH_E2E_TRIGGERS', 5000)
  const rounds = positiveInteger('BENCH_E2E_ROUNDS', 3)
  const warmUpTriggers = wholeNumber('BENCH_E2E_WARM_UP', 5000)
  const bareRequestsPerSecond = await bareRate({ ...load, connections: END_TO_END_CLIENTS }, workDir)
  const results = await benchEndToEnd({ triggers, rounds, warmUpTriggers, layouts: endToEndLayoutsToRun(), workDir })
  const verdicts = endToEndVerdicts(results)
  process.stdout.write(
    `\n${endToEndTextTable(results, bareRequestsPerSecond)}\n\n${verdicts.map((v) => `${v.layout}: ${v.goal}: ${v.measured}, ${v.met ? 'met' : 'NOT MET'}`).join('\n')}\n`,
  )
  // A family missing from /metrics, a figure that does not add up, or a webhook without its result as reported is a
  // fault of the service, not a slow run: the bench fails.
  for (const result of results.filter((candidate) => candidate.metrics.problems.length > 0)) {
    log(`${result.layout}: /metrics FAILED: ${result.metrics.problems.join('; ')}`)
    process.exitCode = 1
  }
  for (const result of results.filter(resultChecksFailed)) {
    const examples = VARIANTS.flatMap((variant) => result.resultChecks[variant].examples)
    log(`${result.layout}: webhooks' data.result FAILED: ${VARIANTS.map((variant) => `${variant} ${result.resultChecks[variant].wrong} wrong of ${result.resultChecks[variant].checked}`).join(', ')}${examples.length > 0 ? `, e.g.\n${examples.join('\n')}` : ''}`)
    process.exitCode = 1
  }
  return endToEndSection({ bareSeconds: load.durationSeconds, warmUpSeconds: WARM_UP_SECONDS, warmUpTriggers, rounds }, results, bareRequestsPerSecond, verdicts)
}

/** A fresh connection's first request beside a steady load, on each database. */
async function benchFreshConnectionSection(load: Load, workDir: string): Promise<Section> {
  const seconds = positiveInteger('BENCH_FRESH_SECONDS', 20)
  const results = await measureFreshConnections(workDir, load, seconds)
  const verdict = freshConnectionVerdict(results)
  process.stdout.write(`\n${freshConnectionTextTable(results)}\n\n${verdict.goal}: ${verdict.measured}, ${verdict.met ? 'met' : 'NOT MET'}\n`)
  return freshConnectionSection(freshConnectionMethod(seconds), results, verdict)
}

/** Inbound messages by WhatsApp and SMS to the client's webhook, and session messages through the route, on PostgreSQL. */
async function benchMessagingSection(workDir: string): Promise<Section> {
  const result = await benchMessaging(workDir)
  process.stdout.write(`\n${messagingTextTable(result)}\n`)
  return messagingSection(result)
}

/** Learned retry timing beside fixed delays, on one simulated population. */
async function benchReachTimingSection(): Promise<Section> {
  const result = await benchReachTiming(positiveInteger('BENCH_REACH_PEOPLE', 10_000), positiveInteger('BENCH_REACH_DAYS', 10))
  const section = reachTimingSection(result)
  process.stdout.write(`\n${section.body.trim()}\n`)
  return section
}

/** The bare route alone: a warm-up, then one measured run. */
async function bareRate(load: Load, workDir: string): Promise<number> {
  const bare = await startBare(load, workDir)
  try {
    await measureOnce(bare, load, 'e2e-warm-up', WARM_UP_SECONDS)
    return (await measureOnce(bare, load, 'e2e-context', load.durationSeconds)).requestsPerSecond
  } finally {
    await stopChild(bare.server.child)
  }
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
  /** The PostgreSQL database it stores its triggers in, whose CPU then counts towards its requests'; undefined for none. */
  database: string | undefined
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
  const server = await startServer('bare', ['--import', 'tsx', 'bench/bareServer.ts'], {}, workDir)
  try {
    // The bare route answers anything; one post is enough to know it listens.
    await waitUntilReady(server, async () => (await postTrigger(server.baseUrl, 'none', load.bodies[0]!, 'bare-ready')).status === 201)
    return { server, apiKey: 'none', database: undefined }
  } catch (error) {
    await stopChild(server.child)
    throw error
  }
}

/** The service on a fresh database: provisioned, and every body checked. */
async function startService(name: string, env: Record<string, string>, load: Load, workDir: string): Promise<Target> {
  // The API alone, as API processes run beside worker processes; the dispatcher is measured on its own.
  const server = await startServer(name, ['dist/cli.js', 'serve', '--no-workers'], { ...env, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'info' }, workDir)
  try {
    const started = Date.now()
    await waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
    log(`${name}: ready after ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const { apiKey } = await provision(server.baseUrl, CAMPAIGNS)
    await verifyBodies(server, apiKey, load.bodies)
    log(`${name}: all ${load.bodies.length} bodies answered 201`)
    return { server, apiKey, database: env.DATABASE_URL === undefined ? undefined : new URL(env.DATABASE_URL).pathname.slice(1) }
  } catch (error) {
    await stopChild(server.child)
    throw error
  }
}

/** One wrk run against the target, with the CPU it cost; fails on any non-2xx response or socket error. */
async function measureOnce({ server, apiKey, database }: Target, load: Load, phase: string, durationSeconds: number): Promise<RoundResult> {
  log(`${server.name}: ${phase}, ${durationSeconds} s`)
  const serverCpuBefore = processCpuSeconds(server.child.pid!)
  const postgresCpu = database === undefined ? undefined : meterPostgresCpu(database)
  const result = await runWrk({
    url: `${server.baseUrl}/api/v2/triggers`,
    cpu: LOAD_CPU,
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
      postgres: postgresCpu === undefined ? undefined : perRequest(postgresCpu.stop()),
    },
  }
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

async function describeMachine(): Promise<Machine> {
  const { version: postgres, synchronousCommit } = await postgresSettings()
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

/**
 * Ctrl-C stops the servers and wrk; the step that was waiting on them then
 * fails, and the clean-up on its way out drops the database and the temp
 * directory. Further signals are ignored meanwhile: one Ctrl-C often arrives
 * twice (from the terminal and relayed by npm), and an exit halfway through
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
