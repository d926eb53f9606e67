/**
 * BENCHMARKS.md, built from a list of sections: the machine first, then one
 * section per thing measured. A later benchmark adds its own section builder
 * here and its section to the list that bench/run.ts passes to
 * {@link renderReport}.
 */
import type { FreshConnectionMethod, FreshConnectionResult } from './freshConnection.ts'
import type { BatchRun } from './batches.ts'
import type { DelivererResult } from './deliverer.ts'
import type { Explained, RegistrySizes } from './registry.ts'
import {
  CAMPAIGN,
  CLIENTS,
  type EndToEndResult,
  type EndToEndRound,
  endToEndRate,
  type EndToEndVerdict,
  RESULTS_CAMPAIGN,
  SCRAPE_UNDER_LOAD_AFTER_MS,
  SCREENING_RESULT,
  VAPI_CAMPAIGN,
  VAPI_RESULT,
  VARIANT_LABEL,
  VARIANTS,
  type Variant,
  WEBHOOKS_TIMEOUT_SECONDS,
} from './endToEnd.ts'
import { median } from './harness.ts'
import { TIMEOUT_SECONDS, type WrkResult } from './wrk.ts'

export interface Section {
  heading: string
  /** Markdown, without the heading. */
  body: string
}

const INTRO =
  '# Benchmarks\n\nWritten by `npm run bench` (bench/run.ts), which overwrites this file; figures from one run of it on the machine below, but for a section that says it was measured later, by a run of that section alone.\n'

export function renderReport(sections: readonly Section[]): string {
  return [INTRO, ...sections.map((section) => `## ${section.heading}\n\n${section.body.trim()}\n`)].join('\n')
}

/**
 * A report of some sections merged into `existing` (a report renderReport wrote): each section replaces the one of
 * its heading, or is added at the end, its body headed by `measured` (when and how it was measured); the others are
 * left as they were.
 */
export function mergeReport(existing: string, sections: readonly Section[], measured: string): string {
  const kept = existing
    .split(/^## /m)
    .slice(1)
    .map((part): Section => {
      const newline = part.indexOf('\n')
      return { heading: part.slice(0, newline), body: part.slice(newline + 1) }
    })
  const merged = [...kept]
  for (const section of sections) {
    const replacement = { heading: section.heading, body: `_${measured}_\n\n${section.body.trim()}` }
    const at = merged.findIndex((candidate) => candidate.heading === section.heading)
    if (at === -1) merged.push(replacement)
    else merged[at] = replacement
  }
  return renderReport(merged)
}

export interface Machine {
  date: Date
  cpus: number
  cpuModel: string
  memoryGiB: number
  node: string
  postgres: string
  /** PostgreSQL's synchronous_commit: whether each commit waits for its WAL flush, which the trigger path pays for. */
  synchronousCommit: string
}

export function machineSection(machine: Machine): Section {
  return {
    heading: 'Machine',
    body: [
      `- Date: ${machine.date.toISOString().replace(/\.\d+Z$/, 'Z')} (UTC)`,
      `- CPUs: ${machine.cpus} × ${machine.cpuModel}`,
      `- Memory: ${machine.memoryGiB.toFixed(1)} GiB`,
      `- Node.js: ${machine.node}`,
      `- PostgreSQL: ${machine.postgres} (synchronous_commit ${machine.synchronousCommit})`,
    ].join('\n'),
  }
}

/** One round of one target: wrk's figures, and what its requests cost in CPU. */
export interface RoundResult extends WrkResult {
  /** Microseconds of CPU per request answered: the server process's, and PostgreSQL's for a target that runs on it. */
  cpuUsPerRequest: { server: number; postgres: number | undefined }
}

/** Each trigger target's result in every round, in round order. */
export type Measured = { target: string; results: RoundResult[] }[]

/** What the rounds of one target come to: medians of the rates and percentiles, totals of the counts. */
export interface Summary {
  requestsPerSecond: number
  latencyMs: WrkResult['latencyMs']
  requests: number
  non2xx: number
  cpuUsPerRequest: RoundResult['cpuUsPerRequest']
}

function summarize(results: readonly RoundResult[]): Summary {
  const percentile = (p: keyof WrkResult['latencyMs']) => median(results.map((result) => result.latencyMs[p]))
  const postgres = results.map((result) => result.cpuUsPerRequest.postgres)
  return {
    requestsPerSecond: median(results.map((result) => result.requestsPerSecond)),
    latencyMs: { p50: percentile('p50'), p75: percentile('p75'), p90: percentile('p90'), p99: percentile('p99') },
    cpuUsPerRequest: {
      server: median(results.map((result) => result.cpuUsPerRequest.server)),
      postgres: postgres.includes(undefined) ? undefined : median(postgres as number[]),
    },
    requests: results.reduce((sum, result) => sum + result.requests, 0),
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
  }
}

/** One trigger target over all rounds. */
export interface TriggerRow {
  target: string
  result: Summary
  /** The median of its rounds' throughput over the bare route's in the same round; undefined for the bare route itself. */
  ratio: number | undefined
}

/** Per target, the medians over the rounds; each ratio the median of the rounds' own ratios to the bare route. */
export function triggerRows(measured: Measured): TriggerRow[] {
  return measured.map(({ target, results }) => ({
    target,
    result: summarize(results),
    ratio: target === 'bare' ? undefined : median(ratiosToBare(measured, results)),
  }))
}

/** Each round's throughput over the bare route's in that same round. */
function ratiosToBare(measured: Measured, results: readonly RoundResult[]): number[] {
  const bare = measured.find(({ target }) => target === 'bare')!.results
  return results.map((result, round) => result.requestsPerSecond / bare[round]!.requestsPerSecond)
}

/** A figure the project holds itself to, and whether this run meets it. */
export interface Verdict {
  target: string
  goal: string
  met: boolean
}

export interface TriggerMethod {
  rounds: number
  durationSeconds: number
  warmUpSeconds: number
  connections: number
  bodies: number
  countries: number
  distinctNumbers: number
  phoneFormats: Record<string, number>
}

export function triggerSection(method: TriggerMethod, rows: readonly TriggerRow[], measured: Measured, verdicts: readonly Verdict[]): Section {
  const formats = Object.entries(method.phoneFormats)
    .sort(([, a], [, b]) => b - a)
    .map(([format, count]) => `${format} ${count}`)
    .join(', ')
  const body = `
Throughput and latency of \`POST /api/v2/triggers\`, beside a bare Fastify route (bench/bareServer.ts) that only parses the JSON body and answers the same envelope: the ratio is the share of the bare route's throughput that the service keeps.

Method:

- The three servers run side by side, pinned to CPU 0 (\`taskset -c 0\`), each idle while another is measured; wrk is pinned to CPU 1 (\`wrk -t1 -c${method.connections} --latency\`); PostgreSQL is not pinned and shares both CPUs.
- Each target gets ${method.warmUpSeconds} s of warm-up (discarded); then ${method.rounds} rounds, each measuring bare, PostgreSQL and PGlite in turn for ${method.durationSeconds} s. A round's ratio is the target's throughput over the bare route's in that round, so that the machine's drift over the run (on a shared machine, often more than 10 %) falls on both sides of it. The summary gives, per target, the median over the rounds of each figure and of the ratio, and the totals of the counts.
- The service runs as an API process runs in production: \`node dist/cli.js serve --no-workers\` (compiled, as \`npm start\` runs it; worker processes dispatch the tasks; the dispatcher is measured below), \`LOG_LEVEL=info\` (one JSON log line per request, to a file), on a fresh database (a new PostgreSQL database; a new PGlite data directory), with one organization, one API key and two campaigns.
- ${method.bodies} distinct bodies, posted in turn, each request with its own \`X-Request-ID\`: contacts in ${method.countries} countries with ${method.distinctNumbers} distinct valid mobile numbers and no \`contact.timezone\` (so that mobiles of Spain, Australia and Russia get every zone of their country as candidates), written as ${formats}; 2–3 ids of their own with mixed-case source and type (each body is one person: once every body has been posted, each trigger updates a contact on file), 2–4 context keys, names with accents and non-Latin scripts, a language tag in 85 % and an email in 70 % of them, a channel in 30 %. Every body was first posted once to each service and got 201.
- CPU per request: the CPU time (user and system, from \`/proc\`) of the server process, all its threads, and for the PostgreSQL target of PostgreSQL's processes (the backends of its database and the server's own: the WAL writer, the checkpointer...), over the round, divided by the requests answered in it. The two CPUs are what the server, PostgreSQL and wrk share: what a request costs in each bounds the throughput.
- Any response other than 2xx, or any socket error, fails the run. wrk's timeout is raised to ${TIMEOUT_SECONDS} s so that slow answers stay in the percentiles instead of being dropped as timeouts (its default of 2 s would hide the tail of a saturated server).

${markdownTable(COLUMNS, rows.map(cells))}

Each round:

${markdownTable(...roundsTable(measured))}

Targets (the project's, set for 64 connections${method.connections === 64 ? '' : `; this run used ${method.connections}, so the verdicts are only indicative`}):

${verdicts.map((verdict) => `- ${verdict.target}: ${verdict.goal} — **${verdict.met ? 'met' : 'not met'}**`).join('\n')}
`
  return { heading: 'POST /api/v2/triggers', body }
}

const COLUMNS = ['target', 'req/s', 'p50 (ms)', 'p75 (ms)', 'p90 (ms)', 'p99 (ms)', 'ratio to bare', 'server CPU (µs/req)', 'PostgreSQL CPU (µs/req)', 'requests', 'non-2xx']

function cells(row: TriggerRow): string[] {
  const { result } = row
  const { p50, p75, p90, p99 } = result.latencyMs
  return [
    row.target,
    result.requestsPerSecond.toFixed(0),
    ...[p50, p75, p90, p99].map((ms) => ms.toFixed(2)),
    row.ratio === undefined ? '1' : row.ratio.toFixed(2),
    result.cpuUsPerRequest.server.toFixed(0),
    result.cpuUsPerRequest.postgres === undefined ? '—' : result.cpuUsPerRequest.postgres.toFixed(0),
    String(result.requests),
    String(result.non2xx),
  ]
}

/** The first column left-aligned, the figures right-aligned. */
export function markdownTable(columns: readonly string[], rows: readonly string[][]): string {
  const line = (values: readonly string[]) => `| ${values.join(' | ')} |`
  return [line(columns), line(columns.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n')
}

/** The same table, aligned for a terminal. */
export function textTable(rows: readonly TriggerRow[]): string {
  return alignedTable(COLUMNS, rows.map(cells))
}

/** Per round, each target's throughput and p99, and each service's ratio to the bare route in that round. */
function roundsTable(measured: Measured): [columns: string[], rows: string[][]] {
  const columns = ['round', ...measured.map(({ target }) => (target === 'bare' ? 'bare req/s' : `${target} req/s (ratio, p99 ms)`))]
  const cellsByTarget = measured.map(({ target, results }) => {
    const ratios = ratiosToBare(measured, results)
    return results.map((result, round) => {
      const rate = result.requestsPerSecond.toFixed(0)
      return target === 'bare' ? rate : `${rate} (${ratios[round]!.toFixed(2)}, ${result.latencyMs.p99.toFixed(1)})`
    })
  })
  const rows = measured[0]!.results.map((_, round) => [String(round + 1), ...cellsByTarget.map((cells) => cells[round]!)])
  return [columns, rows]
}

export function roundsTextTable(measured: Measured): string {
  return alignedTable(...roundsTable(measured))
}

export function alignedTable(columns: readonly string[], rows: readonly string[][]): string {
  const table = [columns, ...rows]
  const widths = columns.map((_, i) => Math.max(...table.map((values) => values[i]!.length)))
  return table.map((values) => values.map((value, i) => (i === 0 ? value.padEnd(widths[i]!) : value.padStart(widths[i]!))).join('  ')).join('\n')
}

export interface DispatcherMethod {
  tasks: number
  /** The paced variant's campaign pace (starts a second). */
  pace: number
}

type DispatcherRun = { seconds: number; tasksPerSecond: number }

export function dispatcherSection(method: DispatcherMethod, rounds: readonly { unpaced: DispatcherRun; paced: DispatcherRun }[]): Section {
  const change = (round: { unpaced: DispatcherRun; paced: DispatcherRun }) => (round.paced.tasksPerSecond / round.unpaced.tasksPerSecond - 1) * 100
  const signed = (percent: number) => `${percent >= 0 ? '+' : ''}${percent.toFixed(1)} %`
  const medianChange = median(rounds.map(change))
  return {
    heading: 'Dispatcher',
    body: [
      'Due tasks started per second by one worker process (`cli worker`), on the simulator, on PostgreSQL.',
      '',
      'Method:',
      '',
      `- ${method.tasks} tasks, all due, written straight into a fresh database; a simulator campaign with an always-open schedule whose calls last an hour, so that nothing settles while it runs.`,
      '- The worker runs alone, pinned to CPU 0 (`taskset -c 0`); PostgreSQL is not pinned.',
      '- Per batch of up to 256 due tasks: one transaction locks them (`FOR UPDATE SKIP LOCKED`), checks each one\'s window in its contact\'s candidate zones, records every attempt in one statement and commits; then each is started on the simulator, and the answers are recorded in group commits.',
      '- The rate is the number of tasks over the time from the first attempt started to the last.',
      `- ${rounds.length} rounds, each of two runs side by side on fresh databases, the order alternating from one round to the next: the campaign unpaced (the simulator's default: no statement for pacing), and paced at ${method.pace} starts a second (\`pacing.per_second\`), a pace the worker never reaches, so that what is measured is pacing's cost per batch (its sender's row locked and its slots saved: two statements) and not its waits. A run lasts about a second: the paced rate is compared with the unpaced one within each round, and the median taken.`,
      '',
      '| round | unpaced: seconds | unpaced: tasks started per second | paced: seconds | paced: tasks started per second | paced over unpaced |',
      '| ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rounds.map(
        (round, index) =>
          `| ${index + 1} | ${round.unpaced.seconds.toFixed(2)} | ${Math.round(round.unpaced.tasksPerSecond)} | ${round.paced.seconds.toFixed(2)} | ${Math.round(round.paced.tasksPerSecond)} | ${signed(change(round))} |`,
      ),
      `| median |  | ${Math.round(median(rounds.map((round) => round.unpaced.tasksPerSecond)))} |  | ${Math.round(median(rounds.map((round) => round.paced.tasksPerSecond)))} | ${signed(medianChange)} |`,
      '',
      `Target: the paced rate within 5 % of the unpaced one (the median of the rounds) — ${signed(medianChange)}, ${Math.abs(medianChange) <= 5 ? '**met**' : '**not met**'}`,
    ].join('\n'),
  }
}

export interface LawMethod {
  tasks: number
  registryNumbers: number
  fileBytes: number
  consents: number
  consentSeconds: number
  /** The jurisdictions the runs' numbers were of, and those left out, their hours closed at the time. */
  open: { name: string; jurisdictions: string[] }[]
  closed: { name: string; reason: string }[]
  at: Date
  batchTasks: number
}

export interface LawLoad {
  numbers: number
  wallSeconds: number
  loadSeconds: number
  peakMemoryMb: number
  addedBytes: number
  before: RegistrySizes
  after: RegistrySizes
}

type LawRun = DispatcherRun & {
  cpuUsPerStart?: { worker: number; postgres: number }
  /** Index scans of the registry's primary key during the run. */
  probes: number
  decisions?: { decisions: Record<string, number>; reasons: { code: string; rule: string; attempts: number }[] }
}

export interface LawRound {
  law: LawRun
  none: LawRun
  lawFirst: boolean
}

/** Starts per second with the law over those without: the median of the rounds' own ratios. */
export function lawRatio(rounds: readonly LawRound[]): number {
  return median(rounds.map((round) => round.law.tasksPerSecond / round.none.tasksPerSecond))
}

/** What the project holds itself to: with the law, at least this share of the starts per second without. */
export const LAW_GOAL = 0.9

/**
 * Where the law's time goes, profiled by hand (the figures of a run of this section are above; these are of runs
 * made to profile it, 2026-12-02, on a quiet machine): kept with the section until the law checks change.
 */
const LAW_PROFILE = [
  'Where the time goes (profiled by hand on 2026-12-02 at 6f156c6, in runs on a private PostgreSQL 15 server with `pg_stat_statements`, `shared_buffers` 128 MB and autovacuum off as on the shared server, the same 10-million-number registry; the worker\'s main thread under `--cpu-prof`, its threads\' CPU from `/proc`). Per run of 10,000 starts in 40 batches of 256, what the law adds:',
  '',
  '- PostgreSQL, about 80 µs per start (its CPU per start 77-128 without, 158-181 with): `consentsOfNumbers` 313-330 ms a run (7.8-8.3 ms a batch, about 32 µs a start): the service\'s own ANALYZE gives the planner the 30,000 consents, and a custom plan (the first five runs of a prepared statement on each of the pool\'s 10 connections: all of a 40-batch run) joins the 256 numbers to them by a hash over a sequential scan of every consent, 18.6 ms under EXPLAIN against 1.3-2.3 ms for the index\'s probes; the generic plan probes the index. `beginAttempts` +80 to +200 ms and `recordStarts` +45 ms a run: the decision kept with each attempt is 890 bytes of JSON (five reasons with their citations) against 141 without, written by the insert and written again by the update that records the provider\'s answer (WAL 15.0 -> 20.9 MB and 10.2-11.3 -> 17.0-17.4 MB a run). The registry\'s lookup (`listedIn`) 108-122 ms a run (2.7-3.0 ms a batch, 11-12 µs a start: 256 probes of 3 pages each, its 301 MB key mostly outside the 128 MB of shared buffers; 1.4 ms a batch once cached). The caps: `saveLawAttempts` 91-112 ms and `lockLawAttempts` 65-71 ms a run (a third of the numbers are capped: Florida, Oklahoma, Maryland).',
  '- The worker, about 100 µs per start (119-168 µs without, 219-242 with), 60 % on its main thread and 40 % on its other threads (V8\'s garbage collection helpers: the consents\' rows, the decisions and their JSON are garbage). Of the main thread\'s extra (`--cpu-prof`, inclusive): writing the attempts with their decisions 19 µs (pg\'s array literal escapes each decision\'s JSON: `escapeElement` doubles), the decisions 13 µs (`decideContactability` 11 -> 23 µs a task: the law\'s hours windows in each zone, the rules that bind, the consents matched), the law checks\' reads 13 µs (the registry digests 6, the lookup\'s parameters, the consents\' rows 3, the lock 3), writing the caps\' attempts 8 µs.',
  '- Made since, each measured by this section side by side: the consents\' index probed whatever the plan (`CROSS JOIN LATERAL (SELECT … FROM consents c WHERE c.org_id = v.org_id AND c.phone_digest = phone_digest($3, v.phone) OFFSET 0)`: the ratio 0.51 -> 0.69); the decisions passed to `beginAttempts` and `postponeTasks` as one jsonb array rather than a text[] of JSON (0.67 -> 0.75, worker 183 -> 166 µs and PostgreSQL 143 -> 120 µs a start, at 03:30 UTC, when only California, Germany and the United Kingdom allow marketing calls: no cap binds); a law\'s hours as one schedule object per rule, whose plan is found without serializing it, and each rule\'s effective instant read once (a decision, compiled: 7.1-8.0 -> 3.6-5.6 µs; worker 157 -> 143 µs a start, the ratio 0.83 -> 0.80 within the noise of 3 pairs, hence 7 pairs since).; a number hashed once for both its digests, the consents\' made by the worker rather than by `phone_digest()` in the statement (its execution 2.2-2.3 -> 1.7-1.8 ms a batch), and the rules that bind kept per nature between two effective instants (`rulesBinding` 1.6 -> 0.2 µs a task under `--cpu-prof`): the ratio 0.79 in the run before, 0.77 and 0.72 in two after: within the noise of pairs seen 0.63 to 1.01 apart in one run. Measured on 2026-12-02 at 06:00 UTC, a run with every decision kept as null rather than its 890 bytes moved the law\'s cost within that noise (worker +30 µs, PostgreSQL +31 µs a start, against +35 and +35 with it): keeping it is not where the cost is.',
  '- What would bring it nearer (estimates from the figures above): find a decision\'s windows and caps once per batch for each distinct nature (campaign, jurisdictions, zones, consent on file, no cap reached: the batch\'s 256 tasks are of 9 here) rather than per task (about -3 µs); one statement for a batch\'s caps, not two (about -5 µs); shared buffers that hold the registry\'s key (about -7 µs). Even so the law would still add 50 to 70 µs to the 210 µs of CPU a start costs without it (a ratio near 0.8): within 10 % needs the law checks under about 20 µs a start, which reading each number\'s consents, registry listing and past attempts from PostgreSQL, two to four statements a batch, does not reach on this machine.',
]

export function lawSection(method: LawMethod, load: LawLoad, rounds: readonly LawRound[], explained: readonly { name: string; plans: readonly Explained[] }[]): Section {
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0)
  const ratio = lawRatio(rounds)
  const cpu = (run: LawRun, which: 'worker' | 'postgres') => (run.cpuUsPerStart === undefined ? '—' : run.cpuUsPerStart[which].toFixed(0))
  const medianOf = (pick: (round: LawRound) => number | undefined, digits = 0) => {
    const values = rounds.map(pick).filter((value): value is number => value !== undefined)
    return values.length === 0 ? '—' : median(values).toFixed(digits)
  }
  // The reasons of every law run's decisions, summed over the rounds.
  const reasons = new Map<string, number>()
  for (const round of rounds) for (const reason of round.law.decisions?.reasons ?? []) reasons.set(`${reason.code}|${reason.rule}`, (reasons.get(`${reason.code}|${reason.rule}`) ?? 0) + reason.attempts)
  const lawAttempts = rounds.length * method.tasks
  const added = load.after.total - load.before.total
  return {
    heading: 'Dispatcher with the law: consents, hours, caps and a 10-million-number registry',
    body: [
      `Due tasks started per second by one worker process when every attempt's decision (src/domain/contactability.ts) reads the number's consents, a do-not-call registry of ${method.registryNumbers.toLocaleString('en-US')} numbers and its past attempts under a cap, and allows; beside the same tasks on a campaign the law says nothing of; and what loading the registry takes.`,
      '',
      'Method:',
      '',
      `- One database for the whole section (a new one on the shared server). A file of ${method.registryNumbers.toLocaleString('en-US')} distinct synthetic US numbers in the registry's download format (10 digits a line, ${mb(method.fileBytes)} MB; area codes 201-989 but N9X and N11, exchanges 200-299 but 222-224) is loaded by \`node dist/cli.js registry load --plan nanp --purposes marketing\` (pinned to CPU 0), as an operator loads one: a registry of the whole service, covering marketing. Then ${method.consents.toLocaleString('en-US')} consents are recorded in one bulk call (src/services/consents.ts recordConsents: voice, marketing, \`express_written\`, captured a day before), one for each number of the runs.`,
      `- ${rounds.length} rounds, each of two runs side by side on that database (the registry loaded for both), the order alternating from one round to the next, as the dispatcher's pairs above: ${method.tasks} due tasks on a new simulator campaign (always open, calls of an hour), one number each, each round its own ${method.tasks} numbers, the same for both runs of the round. **With the law**: the campaign's \`compliance\` is \`{ purpose: 'marketing', artificial_voice: true }\`, so that every profile's rules for marketing by an artificial voice bind (hours, holidays, caps, consent), the campaign requires \`express_written\` (marketing's default) and the registry covers it. **Without**: no \`compliance\` (informational): no rule binds, no registry covers it, and the law checks send no statement.`,
      `- The numbers are spread evenly over the jurisdictions whose hours allow marketing calls from the section's start (${method.at.toISOString().replace(/\.\d+Z$/, 'Z')}) to 30 minutes after (checked by decideContactability, every five minutes): ${method.open.map((pool) => `${pool.name} (${pool.jurisdictions.join(', ')})`).join('; ')}.${method.closed.length === 0 ? '' : ` Left out, closed then: ${method.closed.map((pool) => `${pool.name} (${pool.reason})`).join('; ')}.`} No number is in the registry, each has its consent, and none is called more than once, so that every decision allows (checked: every law run's ${method.tasks} attempts were started with an \`allowed\` decision) and both runs do the same work: ${method.tasks} starts.`,
      '- The worker runs alone, pinned to CPU 0; PostgreSQL is not pinned. The rate is the tasks over the time from the first attempt started to the last. CPU per start: the worker\'s and PostgreSQL\'s (the database\'s backends and the server\'s own processes) from the first poll of the starts (every 250 ms) that saw one to the one that saw the last, over the starts between. Registry probes: the index scans PostgreSQL counted on the registry\'s primary key during the run.',
      '',
      'Loading the registry:',
      '',
      '| figure | value |',
      '| --- | ---: |',
      `| numbers loaded (all lines read, none refused) | ${load.numbers.toLocaleString('en-US')} |`,
      `| \`registry load\`, start to exit (s) | ${load.wallSeconds.toFixed(1)} |`,
      `| … of which the load as it reports it (s: lines read, digests, sort, COPY, put in force) | ${load.loadSeconds.toFixed(1)} |`,
      `| numbers per second (start to exit) | ${Math.round(load.numbers / load.wallSeconds).toLocaleString('en-US')} |`,
      `| the command's peak memory (MB, VmHWM) | ${load.peakMemoryMb.toFixed(0)} |`,
      `| database size added (MB: pg_total_relation_size of registry_numbers and registries, after less before) | ${mb(added)} |`,
      `| … registry_numbers' table / its primary key (MB) | ${mb(load.after.numbersTable - load.before.numbersTable)} / ${mb(load.after.numbersIndex - load.before.numbersIndex)} |`,
      `| bytes per number | ${(added / load.numbers).toFixed(1)} |`,
      '',
      'Starts per second:',
      '',
      '| round | first | without: seconds | without: starts/s | with the law: seconds | with the law: starts/s | with over without | worker CPU per start, without / with (µs) | PostgreSQL CPU per start, without / with (µs) | registry probes, without / with |',
      '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rounds.map(
        (round, index) =>
          `| ${index + 1} | ${round.lawFirst ? 'with' : 'without'} | ${round.none.seconds.toFixed(2)} | ${Math.round(round.none.tasksPerSecond)} | ${round.law.seconds.toFixed(2)} | ${Math.round(round.law.tasksPerSecond)} | ${(round.law.tasksPerSecond / round.none.tasksPerSecond).toFixed(2)} | ${cpu(round.none, 'worker')} / ${cpu(round.law, 'worker')} | ${cpu(round.none, 'postgres')} / ${cpu(round.law, 'postgres')} | ${round.none.probes} / ${round.law.probes} |`,
      ),
      `| median |  |  | ${medianOf((round) => round.none.tasksPerSecond)} |  | ${medianOf((round) => round.law.tasksPerSecond)} | ${ratio.toFixed(2)} | ${medianOf((round) => round.none.cpuUsPerStart?.worker)} / ${medianOf((round) => round.law.cpuUsPerStart?.worker)} | ${medianOf((round) => round.none.cpuUsPerStart?.postgres)} / ${medianOf((round) => round.law.cpuUsPerStart?.postgres)} |  |`,
      '',
      `Target (the project's): with the law within 10 % of without, at least ${LAW_GOAL} of its starts per second (the median of the rounds' ratios) — ${ratio.toFixed(2)}, **${ratio >= LAW_GOAL ? 'met' : 'NOT MET'}**`,
      '',
      `The reasons the law runs' ${lawAttempts.toLocaleString('en-US')} decisions gave (each attempt's, kept with it):`,
      '',
      '| reason | rule | attempts |',
      '| --- | --- | ---: |',
      ...[...reasons].map(([key, attempts]) => {
        const [code, rule] = key.split('|')
        return `| ${code} | ${rule} | ${attempts} |`
      }),
      '',
      `The law checks' statements for one batch of ${method.batchTasks} tasks (of round 1's numbers), as src/services/lawChecks.ts sends them, on this database after the runs: EXPLAIN (ANALYZE, BUFFERS) EXECUTE of the statement prepared as the service prepares it, under a custom plan and a generic one (a prepared statement's after its first five runs, when it costs no more), the median of 5 runs each in a transaction rolled back; JIT off.`,
      '',
      '| statement | plan | planning (ms) | execution (ms) | shared buffers hit / read |',
      '| --- | --- | ---: | ---: | ---: |',
      ...explained.flatMap((statement) =>
        statement.plans.map((plan) => `| ${statement.name} | ${plan.plan} | ${plan.planningMs.toFixed(3)} | ${plan.executionMs.toFixed(3)} | ${plan.hit} / ${plan.read} |`),
      ),
      '',
      ...LAW_PROFILE,
      '',
      'Their plans (of the last run of each):',
      '',
      ...explained.flatMap((statement) => statement.plans.flatMap((plan) => [`${statement.name}, ${plan.plan} plan:`, '', '```', plan.outline, '```', ''])),
    ].join('\n'),
  }
}

export function delivererSection(result: DelivererResult): Section {
  return {
    heading: 'Webhook delivery',
    body: [
      'Webhook deliveries sent per second by one worker process (`cli worker`) to a local receiver, on PostgreSQL.',
      '',
      'Method:',
      '',
      `- ${result.warmUp + result.deliveries} task.completed events, each with its delivery to one endpoint, written straight into a fresh database before the worker starts. The worker sends them in one stream; the first ${result.warmUp} warm it up (its code compiled by the JIT, its connections open) and are not measured.`,
      '- The worker runs alone, pinned to CPU 0; the receiver (a bare node:http server in the benchmark process, answering 200 at once) and PostgreSQL are not pinned.',
      '- Per endpoint: a queue of up to 256 due deliveries claimed ahead of the sends and refilled at half, at most the endpoint\'s `max_in_flight` (default 4) sent at once over kept-alive connections whose addresses are checked as each is made, each signed (Standard Webhooks), and the attempts recorded 200 at a time (or 10 ms after the first waits) in one statement.',
      `- The rate is that of the ${result.deliveries} measured: their number over the time from the last of the warm-up received to the last of all. The warm-up's own rate, from the first received, is that of a worker that has just started, for comparison.`,
      '',
      '| deliveries | seconds | deliveries per second | warm-up: deliveries per second |',
      '| ---: | ---: | ---: | ---: |',
      `| ${result.deliveries} | ${result.seconds.toFixed(2)} | ${Math.round(result.deliveriesPerSecond)} | ${Math.round(result.warmUpPerSecond)} |`,
    ].join('\n'),
  }
}

export interface EndToEndMethod {
  /** The bare route's measured run and its warm-up. */
  bareSeconds: number
  warmUpSeconds: number
  /** Triggers taken through the whole pipeline before the measured ones. */
  warmUpTriggers: number
  /** Measured rounds of each variant (without results, with them, through Vapi). */
  rounds: number
}

export function endToEndSection(
  method: EndToEndMethod,
  results: readonly EndToEndResult[],
  bareRequestsPerSecond: number,
  verdicts: readonly EndToEndVerdict[],
): Section {
  const triggers = results[0]!.triggers
  const tables = results.map(
    (result) =>
      `**${result.layout}**\n\n${markdownTable(...endToEndVariantsTable(result))}\n\n${markdownTable(['figure', 'value'], endToEndRunFigures(result, bareRequestsPerSecond))}\n\nEach round:\n\n${markdownTable(...endToEndRoundsTable(result))}\n\n\`/metrics\`, every process's summed (the queue gauges: the highest reading):\n\n${markdownTable(...metricsTable(result))}`,
  )
  const result = SCREENING_RESULT
  const turnLengths = result.transcript.map((turn) => turn.text.length)
  const body = `
The whole pipeline at once: from the first \`POST /api/v2/triggers\` until every webhook of every trigger has reached the client, through intake, dispatch, the call, its settlement with its events, and their delivery; with simulated calls that report no result, with simulated calls that each report a conversation's result, and with calls through Vapi's API and server URL (to a fake of Vapi) that report the same conversation, in the same run: what a real provider's path costs beside the simulator's.

Method:

- ${method.rounds} rounds of ${triggers} triggers each way, without results, with them and through Vapi, after a warm-up (below): bodies generated as for \`POST /api/v2/triggers\` (bench/bodies.ts, the same seed), each a person of its own, addressed to one of three voice campaigns with a schedule open every day from 00:00 to 24:00 in the contact's zones, so that every task is due at once: two on the simulator, alike but for the result their calls report, \`provider_config\` \`${JSON.stringify(CAMPAIGN.provider_config)}\` for the one, the same with a \`result\` for the other (\`${RESULTS_CAMPAIGN.routing_key}\`), each call completing as it starts; and one on Vapi (\`${VAPI_CAMPAIGN.routing_key}\`, \`provider_config\` \`${JSON.stringify(VAPI_CAMPAIGN.provider_config)}\`, the API key and the server URL's secret in the service's environment as \`VAPI_API_KEY\` and \`VAPI_WEBHOOK_SECRET\`, \`VAPI_API_BASE_URL\` pointing at the fake). Each body is posted once, with its own \`X-Request-ID\`, by ${CLIENTS} concurrent clients (node:http, each on a kept-alive connection) that each post the next body as soon as their last is answered. Every POST must be answered 201, or the run fails.
- The Vapi fake (bench/vapiFake.ts) is a node:http server in the benchmark process, on its CPU as the receiver is, speaking Vapi's wire format: it answers each \`POST /call\` (Create Call, \`Authorization: Bearer\` and the private key) 201 at once with the Call (a new \`id\`, \`status\` \`queued\`, the request's \`assistantOverrides\` with the interaction in \`metadata\`), and as soon as that answer is written posts the call's \`end-of-call-report\` to the service's server URL (\`POST /providers/vapi/webhook\` of the API process), on at most ${CLIENTS} kept-alive connections, signed as Vapi's HMAC credential signs it by default (hex HMAC-SHA256 of \`{timestamp}.{body}\` in \`x-signature\`, the Unix milliseconds in \`x-timestamp\`). The report ends the call \`customer-ended-call\` with the result below as Vapi carries it: the turns as \`artifact.messages\` (\`bot\` and \`user\`, each with its \`time\`, after the system prompt), again as \`messagesOpenAIFormatted\` and as the \`transcript\` text, the \`recordingUrl\`, the \`analysis\` with the summary and, as \`structuredData\`, the ${Object.keys(SCREENING_RESULT.data).length} data keys and the disposition, beside the whole Call: ${(results[0]!.vapi.reportBytes / 1024).toFixed(1)} KiB a report. The service reads the structured data, whole, as the result's \`data\` (${Object.keys(VAPI_RESULT.data).length} keys) and its \`${String(VAPI_CAMPAIGN.provider_config.disposition_field)}\` as the disposition. Every Create Call must be taken and every report answered 204, or the section fails. So the Vapi way costs, beside the simulator's with the same result, a Create Call out of the worker and a signed report of ${(results[0]!.vapi.reportBytes / Buffer.byteLength(JSON.stringify(result))).toFixed(1)} times the result's size into the API process, with what the service does for it (find the interaction it names, check its signature, read the result, end the call); Vapi's own time (ringing, the conversation, its analysis) is none here.
- The result (bench/endToEnd.ts, \`screeningResult\`, the same on every run) is a screening call's as a voice app would report it: disposition \`${result.disposition}\`, a summary of ${result.summary.length} characters, \`data\` of ${Object.keys(result.data).length} keys (strings, numbers, booleans, dates as strings), a ${result.transcript.length}-turn transcript, the agent and the person in turn, ${Math.min(...turnLengths)} to ${Math.max(...turnLengths)} characters a turn, each with its \`at\`, and a \`recording_url\`: ${(Buffer.byteLength(JSON.stringify(result)) / 1024).toFixed(1)} KiB as JSON. It has no \`callback_at\` and no \`opt_out\`, which would change what becomes of the task. Every call of the simulator's campaign with a result reports it as it ends, in the transaction that finalizes the call (through Vapi, the end-of-call-report's), and both webhooks of its trigger carry it as \`data.result\`; without a result, \`data.result\` is null.
- The organization has one webhook endpoint, subscribed to \`task.completed\` and \`interaction.finalized\`, pointing to a node:http receiver in the benchmark process that answers 200 at once, counts what it gets by \`webhook-id\` (an id received again is a duplicate) and by event type, and checks each one's \`data.result\`: one webhook in 20 of each campaign parsed and checked field by field (for a trigger of a campaign with a result, every field as reported: the transcript turn by turn, each \`data\` key, instants as the instants they name, the others null and \`opt_out\` false; for the campaign without, null), the others without parsing, by the recording URL and the last turn in their text, or a null result. The receiver shares a CPU with PostgreSQL: parsing every webhook of kilobytes took that CPU from the variants with results alone. A webhook not as expected is counted (the warm-up's too), and fails the section.
- The rounds run one after the other in the same service processes, each posting its triggers once every webhook of the last one has arrived, in cycles of one round each way, each cycle's order the last one's rotated by one (without, with, through Vapi; then with, through Vapi, without; ...), since each round adds rows and no way should always be measured on the larger tables. A round's end: the moment the receiver holds one \`task.completed\` and one \`interaction.finalized\` per trigger of the round, each of its own id; its time is counted from its first POST sent. The figures of each way are the medians over its rounds, each round shown below them: on this shared machine, one round's CPU per trigger is often a third above or below the next one's, and a median of three stays put where one round does not. The ratios of triggers/s with results over without, and through Vapi over with results, are taken within each cycle, whose rounds ran side by side, and the median over the cycles given, so that the machine's drift over the run falls on both sides of them. A round that has not got them all ${WEBHOOKS_TIMEOUT_SECONDS} s after its first POST is reported as it stands, with the webhooks missing, and ends the layout's rounds. Duplicates are counted until the service has shut down.
- Intake: the latency of each POST (from sending it to reading the whole answer), and the rate of a round's triggers over the time from its first POST sent to its last answered; the workers are dispatching and delivering meanwhile.
- CPU per trigger: the CPU time (user and system, all threads, from \`/proc\`) of the service's processes together (and of each), read just before a round's first POST and at its end, divided by its triggers; and on PostgreSQL that of the backends of the layout's database and of the server's own processes (WAL writer, checkpointer...) over the same span, but not of other databases' backends (the machine is shared), each process read every second, since the pools close the connections they leave idle for 10 s and a backend that exits takes its time with it. For a round that did not finish, no CPU figure is given.
- Layouts, each on a fresh database, \`LOG_LEVEL=info\` (a log line per request), \`ALLOW_PRIVATE_WEBHOOK_URLS=true\` (the receiver is on 127.0.0.1), provisioned through the admin API, then warmed up: ${method.warmUpTriggers} triggers of other people, to each campaign in turn, are posted the same way and taken through the whole pipeline, until every one of their webhooks has arrived, before the first measured POST, so that the figures are those of a running service and not of one whose code the JIT compiler has yet to optimize (with no warm-up, \`BENCH_E2E_WARM_UP=0\`, the service's CPU per trigger over 5,000 triggers is about 1.9 times as much). On PostgreSQL an API process (\`node dist/cli.js serve --no-workers\`) and a worker process (\`dist/cli.js worker\`), as production runs them; on PGlite, the embedded default, one \`dist/cli.js serve\` process with a data directory of its own that runs the API and the workers.
- The service's processes are pinned to CPU 0 (\`taskset -c 0\`); the benchmark process, with its clients and its receiver, to CPU 1 for the section; PostgreSQL is not pinned and shares both.
- \`/metrics\`: scraped from every process of the layout (the API's on \`PORT\`, a worker's on \`METRICS_PORT\`, with the operator token) ${SCRAPE_UNDER_LOAD_AFTER_MS / 1000} s after the first POST of the warm-up, while triggers are being posted, and again when the last round's webhooks have all arrived; read by Prometheus's text rules (test/support/prometheus.ts). Counters and histograms are summed over the processes, as Prometheus sums them. Each family the service promises must be in both scrapes, and each figure at the end must be as the run makes it (every trigger posted, of every campaign, the warm-up's included, is accepted, called once, completed as reached, its call finalized as completed by its provider); a family missing or a figure that does not hold fails the section.
- The bare route (bench/bareServer.ts: it parses the JSON body and answers the envelope, nothing more) is measured just before, with wrk on CPU 1 and ${CLIENTS} connections, for ${method.bareSeconds} s after ${method.warmUpSeconds} s of warm-up: what a POST costs with nothing behind it, for scale.

${tables.join('\n\n')}

Targets (the project's; a figure is that of the rounds without results unless the goal says otherwise):

${verdicts.map((verdict) => `- ${verdict.layout}: ${verdict.goal} — ${verdict.measured}, **${verdict.met ? 'met' : 'NOT MET'}**`).join('\n')}
`
  return { heading: 'End to end: trigger to webhook', body }
}

/** A figure a run could not give (it did not finish) as a dash. */
const figure = (value: number | undefined, digits: number) => (value === undefined ? '—' : value.toFixed(digits))

const firstPostToLastWebhook = (round: EndToEndRound | undefined) =>
  round === undefined ? '—' : round.outcome === 'complete' ? round.seconds.toFixed(1) : `${round.outcome} after ${round.seconds.toFixed(0)} s`

/** One layout's figures of each variant, a column each: the medians over its rounds, and its webhooks. */
function endToEndVariantsTable(result: EndToEndResult): [string[], string[][]] {
  const row = (label: string, value: (summary: EndToEndRound | undefined, variant: Variant) => string) => [
    label,
    ...VARIANTS.map((variant) => value(result.summaries[variant], variant)),
  ]
  const rounds = (variant: Variant) => result.rounds.filter((round) => round.variant === variant).length
  return [
    ['figure', ...VARIANTS.map((variant) => VARIANT_LABEL[variant])],
    [
      row('rounds', (summary, variant) => (summary === undefined || summary.outcome === 'complete' ? String(rounds(variant)) : `${rounds(variant)}, the last one ${summary.outcome}`)),
      row('first POST to last webhook (s)', (summary) => firstPostToLastWebhook(summary)),
      row('triggers/s end to end', (summary) => figure(endToEndRate(result, summary), 0)),
      row('intake: triggers/s', (summary) => (summary === undefined ? '—' : (result.triggers / summary.intake.seconds).toFixed(0))),
      row('intake latency p50 (ms)', (summary) => figure(summary?.intake.p50Ms, 1)),
      row('intake latency p99 (ms)', (summary) => figure(summary?.intake.p99Ms, 1)),
      row('service CPU per trigger (ms)', (summary) => figure(summary?.cpuMsPerTrigger.service, 2)),
      row('… by process (ms)', (summary) => summary?.cpuMsPerTrigger.byProcess?.map(({ name, ms }) => `${name} ${ms.toFixed(2)}`).join(' + ') ?? '—'),
      row('PostgreSQL CPU per trigger (ms)', (summary) => figure(summary?.cpuMsPerTrigger.postgres, 2)),
      row('webhooks received / expected (each round)', (summary) => (summary === undefined ? '—' : `${summary.webhooksReceived} / ${result.webhooksExpected}`)),
      row('webhooks missing at the end', (summary) => (summary === undefined ? '—' : String(result.webhooksExpected - summary.webhooksReceived))),
      row('webhooks with data.result not as expected (warm-up\'s included)', (_, variant) => {
        const check = result.resultChecks[variant]
        return `${check.wrong}${check.wrong > 0 ? ' **NOT AS EXPECTED**' : ''} of ${check.checked}`
      }),
    ],
  ]
}

/** The figures of one layout's whole run, as rows of label and value. */
function endToEndRunFigures(result: EndToEndResult, bareRequestsPerSecond: number): string[][] {
  return [
    ['triggers posted in each round (each answered 201)', String(result.triggers)],
    ['triggers/s with results over without (median over the cycles of rounds)', figure(result.resultsRatio, 2)],
    ['triggers/s through Vapi over the simulator with results (median over the cycles of rounds)', figure(result.vapiRatio, 2)],
    ['Vapi fake: calls created, reports answered 204, problems', `${result.vapi.callsCreated}, ${result.vapi.reportsAccepted}, ${result.vapi.problems.count}`],
    ['duplicates (webhook-ids received more than once)', String(result.duplicateWebhooks)],
    ['service log lines at warn or above', String(result.serviceLogProblems.length)],
    ['bare route, same run (req/s)', bareRequestsPerSecond.toFixed(0)],
  ]
}

/** One layout's rounds, a row each, in the order they ran: the figures its summaries take the medians of. */
function endToEndRoundsTable(result: EndToEndResult): [string[], string[][]] {
  return [
    ['round', 'calls', 'first POST to last webhook (s)', 'triggers/s end to end', 'intake p99 (ms)', 'service CPU per trigger (ms)', 'PostgreSQL CPU per trigger (ms)'],
    result.rounds.map((round, index) => [
      String(index + 1),
      VARIANT_LABEL[round.variant],
      firstPostToLastWebhook(round),
      figure(endToEndRate(result, round), 0),
      round.intake.p99Ms.toFixed(1),
      figure(round.cpuMsPerTrigger.service, 2),
      figure(round.cpuMsPerTrigger.postgres, 2),
    ]),
  ]
}

/** One layout's /metrics, a row for each figure read: under load, at the end, and what the end must be. */
function metricsTable(result: EndToEndResult): [string[], string[][]] {
  const value = (figure: number | undefined) => (figure === undefined ? 'missing' : Number.isInteger(figure) ? String(figure) : figure.toPrecision(3))
  return [
    ['family', 'sample', 'under load', 'at the end', 'expected at the end'],
    result.metrics.rows.map((row) => [row.family, row.sample, value(row.underLoad), value(row.atEnd), `${row.expected}${row.holds ? '' : ' **NOT MET**'}`]),
  ]
}

/** Each layout's figures, aligned for a terminal: both variants side by side, the run's, its rounds, and its /metrics. */
export function endToEndTextTable(results: readonly EndToEndResult[], bareRequestsPerSecond: number): string {
  return results
    .map((result) =>
      [
        `${result.layout}:\n${alignedTable(...endToEndVariantsTable(result))}`,
        alignedTable(['the run', ''], endToEndRunFigures(result, bareRequestsPerSecond)),
        `${result.layout}, each round:\n${alignedTable(...endToEndRoundsTable(result))}`,
        `${result.layout}, /metrics:\n${alignedTable(...metricsTable(result))}`,
      ].join('\n\n'),
    )
    .join('\n\n')
}

function freshConnectionTable(results: readonly FreshConnectionResult[]): [string[], string[][]] {
  return [
    ['layout', 'one just after the load\'s 32 (ms)', 'fresh connections, steady', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'kept-alive clients: req/s', 'their p99 (ms)'],
    results.map((result) => [
      result.name,
      result.afterTheLoadMs.toFixed(1),
      String(result.probes),
      result.p50Ms.toFixed(1),
      result.p99Ms.toFixed(1),
      result.maxMs.toFixed(1),
      String(Math.round(result.load.requestsPerSecond)),
      result.load.p99Ms.toFixed(1),
    ]),
  ]
}

export function freshConnectionTextTable(results: readonly FreshConnectionResult[]): string {
  return alignedTable(...freshConnectionTable(results))
}

export function freshConnectionSection(
  method: FreshConnectionMethod,
  results: readonly FreshConnectionResult[],
  verdict: { goal: string; measured: string; met: boolean },
): Section {
  return {
    heading: 'A new client beside a steady load',
    body: [
      `How long the first request on a fresh connection waits while ${method.clients} clients keep the service busy.`,
      '',
      'Method:',
      '',
      `- One \`node dist/cli.js serve\` process (the API and the workers, as \`npm start\` runs it), pinned to CPU 0, on a fresh database; the two campaigns of the trigger bodies, open all week, their calls completing as they start, so that the workers dispatch and settle all along.`,
      `- wrk on CPU 1 posts the trigger bodies on ${method.clients} kept-alive connections, which it opens together. The benchmark process opens one connection ${method.afterTheLoadMs} ms after wrk started, and then, from ${method.steadyAfterSeconds} s on and for ${method.seconds} s, a new connection every ${method.probeEveryMs} ms; on each it posts one trigger (\`Connection: close\`), timed from the connect to the last byte of the 201.`,
      '',
      markdownTable(...freshConnectionTable(results)),
      '',
      'Node.js (libuv 1.45 and later) accepts one new connection per turn of its event loop. PGlite runs each statement synchronously in the service\'s thread, and the statements queued on its session used to follow one another through promise callbacks alone, in one turn: under this load a turn lasted about 40 ms, and a connection arriving just after 32 others waited for each of them to be accepted first. Each PGlite statement now waits for the next turn. Measured side by side before that change (05ca40a) and after it, two runs each, on the embedded database: the connection just after the load\'s 32, 1,333 and 1,263 ms before, 516 and 396 ms after; steady, p50 52 and 52 ms before, 41 and 44 ms after, p99 144 and 141 ms before, 120 and 145 ms after; the kept-alive clients\' p99 614 and 591 ms before, 229 and 178 ms after, at 1,044 and 1,057 requests/s before, 1,209 and 1,125 after.',
      '',
      `Target (the project's): ${verdict.goal} — ${verdict.measured}, **${verdict.met ? 'met' : 'NOT MET'}**`,
    ].join('\n'),
  }
}

/** Batches of triggers beside single requests: each round's figures, in round order. */
export interface BatchMeasured {
  single: RoundResult[]
  batched: BatchRun[]
}

export interface BatchMethod {
  batchSize: number
  batchClients: number
  connections: number
  rounds: number
  durationSeconds: number
  warmUpSeconds: number
  bodies: number
}

/** Each mode's medians over the rounds: triggers per second, and CPU per trigger. */
function batchRows(measured: BatchMeasured, batchSize: number): string[][] {
  const { single, batched } = measured
  const fixed = (values: number[], digits = 0) => median(values).toFixed(digits)
  return [
    [
      'single requests',
      fixed(single.map((round) => round.requestsPerSecond)),
      fixed(single.map((round) => round.latencyMs.p50), 1),
      fixed(single.map((round) => round.latencyMs.p99), 1),
      fixed(single.map((round) => round.cpuUsPerRequest.server)),
      fixed(single.map((round) => round.cpuUsPerRequest.postgres!)),
      '—',
      String(single.reduce((sum, round) => sum + round.requests, 0)),
    ],
    [
      `batches of ${batchSize}`,
      fixed(batched.map((round) => round.triggersPerSecond)),
      fixed(batched.map((round) => round.latencyMs.p50), 1),
      fixed(batched.map((round) => round.latencyMs.p99), 1),
      fixed(batched.map((round) => round.cpuUsPerTrigger.server)),
      fixed(batched.map((round) => round.cpuUsPerTrigger.postgres)),
      fixed(batched.map((round) => round.cpuUsPerTrigger.client)),
      String(batched.reduce((sum, round) => sum + round.triggers, 0)),
    ],
  ]
}

const BATCH_COLUMNS = [
  'mode',
  'triggers/s',
  'request p50 (ms)',
  'request p99 (ms)',
  'server CPU (µs/trigger)',
  'PostgreSQL CPU (µs/trigger)',
  'client CPU (µs/trigger)',
  'triggers',
]

/** Triggers per second through batches over those through single requests, the median of each round's ratio. */
export function batchRatio(measured: BatchMeasured): number {
  return median(measured.batched.map((round, index) => round.triggersPerSecond / measured.single[index]!.requestsPerSecond))
}

export function batchTextTable(measured: BatchMeasured, batchSize: number): string {
  return alignedTable(BATCH_COLUMNS, batchRows(measured, batchSize))
}

export function batchSection(method: BatchMethod, measured: BatchMeasured, verdict: Verdict): Section {
  const rounds = measured.single.map((single, index) => {
    const batched = measured.batched[index]!
    return [
      String(index + 1),
      single.requestsPerSecond.toFixed(0),
      batched.triggersPerSecond.toFixed(0),
      (batched.triggersPerSecond / single.requestsPerSecond).toFixed(2),
      (single.cpuUsPerRequest.server + single.cpuUsPerRequest.postgres!).toFixed(0),
      (batched.cpuUsPerTrigger.server + batched.cpuUsPerTrigger.postgres).toFixed(0),
    ]
  })
  const body = `
Triggers per second through \`POST /api/v2/triggers/batch\`, ${method.batchSize} triggers a request, beside the same triggers through \`POST /api/v2/triggers\`, one a request, on PostgreSQL, with the CPU each trigger costs.

Method:

- One API process (\`node dist/cli.js serve --no-workers\`, pinned to CPU 0) on a fresh PostgreSQL database, set up as for the section above; the load runs on CPU 1; PostgreSQL is not pinned.
- The same ${method.bodies} bodies both ways: singly by wrk over ${method.connections} connections, and ${method.batchSize} at a time (${Math.floor(method.bodies / method.batchSize)} distinct batch bodies, posted in turn) by ${method.batchClients} clients, each on a kept-alive connection, each posting its next batch as soon as the last is answered. Every trigger of every batch answer must be a 201, or the run fails.
- ${method.warmUpSeconds} s of warm-up each way (discarded); then ${method.rounds} rounds of ${method.durationSeconds} s each way, in turn (single first in odd rounds, batches first in even ones, as each round adds rows). The ratio is each round's batched rate over its single rate; the table gives the medians.
- CPU per trigger: the server process's CPU time over the run, and PostgreSQL's (the backends of the benchmark's database and the server's own processes), divided by the triggers recorded in it; for batches also the clients' own (the benchmark's process, on CPU 1 with PostgreSQL's share of it; wrk's is not measured).

${markdownTable(BATCH_COLUMNS, batchRows(measured, method.batchSize))}

Each round:

${markdownTable(['round', 'single (triggers/s)', 'batched (triggers/s)', 'ratio', 'single: CPU (µs/trigger)', 'batched: CPU (µs/trigger)'], rounds)}

Target: ${verdict.goal} — **${verdict.met ? 'met' : 'not met'}** (median ratio ${batchRatio(measured).toFixed(2)}).
`
  return { heading: 'Batches of triggers', body }
}
