/**
 * End to end: the whole pipeline at once, from the first POST
 * /api/v2/triggers until every webhook of every trigger has reached the
 * client: intake, dispatch, the simulated call, its settlement with its two
 * events, and their delivery.
 *
 * The triggers are posted by CLIENTS concurrent clients on kept-alive
 * connections, to simulator campaigns whose calls complete as soon as they
 * start, in a window open all week; the organization's one webhook endpoint
 * points to a receiver in this process that answers 200 at once. Each trigger
 * ends in one task.completed and one interaction.finalized, each with a
 * webhook-id of its own, and a round ends when the receiver holds all of them.
 *
 * Three variants, measured in the same run and the same service processes:
 * the triggers of one (plain) go to CAMPAIGN, whose calls report no result;
 * those of another (results) to RESULTS_CAMPAIGN, identical but for the
 * result every one of its calls reports as it ends (SCREENING_RESULT: a
 * disposition, a summary, 10 data keys, a 20-turn transcript, a recording
 * URL), which both webhooks of the trigger then carry; those of the third
 * (vapi) to VAPI_CAMPAIGN, whose calls go through Vapi's REST API and server
 * URL to a fake of it in this process (bench/vapiFake.ts) that ends each call
 * at once with the same conversation in Vapi's end-of-call-report: what a
 * real provider's path costs beside the simulator's. The receiver checks each
 * webhook's data.result against its campaign's (the screening result for the
 * results variant and, as the service reads it from Vapi's report, for the
 * vapi one; null for the plain one): one in FULL_CHECK_EVERY parsed and
 * checked field by field, the others by what their text holds, so that the
 * receiver, which shares a CPU with PostgreSQL, takes no more of it for one
 * variant than for another.
 *
 * Two layouts: on PostgreSQL an API process (`serve --no-workers`) beside a
 * worker process (`worker`), as production runs; and the embedded default,
 * one `serve` process on PGlite that runs the workers too. Each is warmed up
 * with triggers of every variant, then measured in rounds of their own
 * triggers, one after the other in the same service, in cycles of one round
 * of each variant, each cycle's order the last one's rotated by one (each
 * round adds rows, and no variant is always measured on the larger tables).
 * Each variant's figures are the medians of its rounds, since on a shared
 * machine one round's CPU per trigger can be a third above or below the next
 * one's; the ratio of the results variant's triggers/s to the plain one's,
 * and of the vapi one's to the results one's, is the median of each cycle's.
 * Every process's /metrics is scraped while the first triggers are posted and
 * at the end, and checked against what the run did (bench/metrics.ts).
 */
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { generateBodies } from './bodies.ts'
import { hasExited, stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { ALWAYS_OPEN } from './dispatcher.ts'
import { type MetricsReading, readMetrics, type Scrape, scrapeService } from './metrics.ts'
import { startVapiFake } from './vapiFake.ts'
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
export const EVENT_TYPES = ['task.completed', 'interaction.finalized'] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** Every task is due at once, and its call completes as soon as it starts. */
export const CAMPAIGN = {
  routing_key: 'end-to-end',
  channel: 'voice',
  schedule: ALWAYS_OPEN,
  provider: 'simulator',
  provider_config: { outcomes: ['completed'], duration_ms: 0 } as Record<string, unknown>,
}

/** One turn of a transcript, as a voice app reports it. */
interface Turn {
  role: 'agent' | 'contact'
  text: string
  at: string
}

/** What a call of RESULTS_CAMPAIGN reports as it ends: no callback_at and no opt_out, which would change what becomes of the task. */
export interface ScreeningResult {
  disposition: string
  summary: string
  data: Record<string, string | number | boolean>
  transcript: Turn[]
  recording_url: string
}

/** When the screening call of the transcript began. */
const SCREENING_CALL_STARTED_AT = Date.UTC(2026, 2, 2, 9, 15, 0)

/** The screening call, turn by turn, the agent first. */
const SCREENING_TURNS = [
  'Hello, this is Mia calling from Acme Staffing about your application for the warehouse role.',
  'Oh hi, yes, I applied last week through the website. Thanks for getting back to me so quickly.',
  'Great. Do you have about five minutes now to answer a few screening questions about the position?',
  "Sure, I'm on my break at the moment, so now is actually a good time for me to talk about it.",
  'The role is a Warehouse Associate at our Kraków site. Are you still interested in that position?',
  'Yes, definitely. I live about twenty minutes away by tram, so the location works well for me.',
  'How many years of warehouse or logistics experience do you have, roughly speaking?',
  'About four years in total, mostly picking and packing, and the last two years on inventory control.',
  'Do you hold a valid forklift licence, and if so, until when is it valid?',
  "I do, I renewed it last spring and it's valid until June 2027. I can send you a copy of it today.",
  'Thank you. The site runs day, night and weekend shifts. Which of those would you prefer to work?',
  'Day shifts would suit me best. I could do the odd weekend, but nights are hard with my two kids.',
  'Understood. When would you be available to start, if you were offered the position?',
  'My notice period ends on the thirteenth of March, so I could start on Monday the sixteenth.',
  'And what hourly rate are you expecting? The posted range for this role is 22 to 26 euros.',
  'Something around twenty-four fifty an hour would be fair, given my experience and the licence.',
  "That's within the range. Would a weekday morning suit you for an interview with the site manager?",
  'Yes, any weekday morning is fine, ideally before ten so that I can still make it to my shift.',
  "Perfect. You'll get a text with the interview time and the address shortly. Any questions for me?",
  'No, that covers it. Thanks very much for calling, and I look forward to hearing from you soon.',
]

/**
 * A screening call's result, as a voice app would report it: the same on
 * every run (and every call). Each turn's `at` follows the last by about the
 * time it takes to say it, in whole seconds.
 */
export function screeningResult(): ScreeningResult {
  let at = SCREENING_CALL_STARTED_AT
  const transcript = SCREENING_TURNS.map((text, index): Turn => {
    const turn: Turn = { role: index % 2 === 0 ? 'agent' : 'contact', text, at: new Date(at).toISOString() }
    at += Math.round(1 + text.length / 15) * 1000
    return turn
  })
  return {
    disposition: 'interested',
    summary:
      'Interested in the Warehouse Associate role at the Kraków site. Four years of picking, packing and inventory control; forklift licence valid until June 2027. ' +
      'Prefers day shifts, no nights. Available from 16 March. Expects 24.50 EUR an hour, within the posted range. Interview on a weekday morning before 10:00.',
    data: {
      interested: true,
      role: 'Warehouse Associate',
      site: 'Kraków',
      years_experience: 4,
      forklift_licence: true,
      licence_valid_until: '2027-06-30',
      preferred_shift: 'day',
      night_shifts: false,
      available_from: '2026-03-16',
      expected_hourly_rate_eur: 24.5,
    },
    transcript,
    recording_url: 'https://recordings.example.com/acme/2026/03/02/call-7f3a9c21d4e84b0e.wav',
  }
}

export const SCREENING_RESULT = screeningResult()

/** CAMPAIGN's twin, but for the result each of its calls reports as it ends. */
export const RESULTS_CAMPAIGN = {
  ...CAMPAIGN,
  routing_key: 'end-to-end-results',
  provider_config: { ...CAMPAIGN.provider_config, result: SCREENING_RESULT },
}

/** The Vapi credentials the service's processes get, as VAPI_CAMPAIGN's provider_config names them by default (VAPI_API_KEY, VAPI_WEBHOOK_SECRET). */
const VAPI_API_KEY = `bench-vapi-key-${randomBytes(16).toString('hex')}`
const VAPI_WEBHOOK_SECRET = randomBytes(32).toString('hex')
/** The key of the assistant's structured data that holds the disposition. */
const VAPI_DISPOSITION_FIELD = 'disposition'

/** A voice campaign on Vapi, due at once as CAMPAIGN is; each of its calls ends, through the fake, with SCREENING_RESULT's conversation. */
export const VAPI_CAMPAIGN = {
  ...CAMPAIGN,
  routing_key: 'end-to-end-vapi',
  provider: 'vapi',
  // Its calls are taken as a live voice's, as the simulator's are: an AI voice would need consent on file for
  // the bench's US numbers (the TCPA), and the cost of the decision before each attempt is the law section's.
  compliance: { artificial_voice: false },
  provider_config: {
    assistant_id: 'b2f6c1e4-0d3a-4c8e-9a57-3f1d2e6b8c90',
    phone_number_id: '7e4a9d21-5b6c-4f08-8e3d-1a2b3c4d5e6f',
    disposition_field: VAPI_DISPOSITION_FIELD,
  } as Record<string, unknown>,
}

/**
 * SCREENING_RESULT as the service reads it from Vapi's end-of-call-report: the same, but that the structured data,
 * whole, is its data, the disposition among its keys.
 */
export const VAPI_RESULT: ScreeningResult = { ...SCREENING_RESULT, data: { ...SCREENING_RESULT.data, [VAPI_DISPOSITION_FIELD]: SCREENING_RESULT.disposition } }

/**
 * The three variants each layout is measured in: simulated calls that report no result, simulated calls that
 * report SCREENING_RESULT, and Vapi calls that report it.
 */
export const VARIANTS = ['plain', 'results', 'vapi'] as const
export type Variant = (typeof VARIANTS)[number]
/** As the report names each variant. */
export const VARIANT_LABEL: Record<Variant, string> = { plain: 'without results', results: 'with results', vapi: 'through Vapi, with results' }
const CAMPAIGN_OF: Record<Variant, typeof CAMPAIGN> = { plain: CAMPAIGN, results: RESULTS_CAMPAIGN, vapi: VAPI_CAMPAIGN }
/** What the webhooks of each variant's triggers carry as data.result. */
const RESULT_OF: Record<Variant, ScreeningResult | null> = { plain: null, results: SCREENING_RESULT, vapi: VAPI_RESULT }

/**
 * The variant of each measured round, in order: `rounds` cycles of one round
 * of each, each cycle's order the last one's rotated by one, so that each
 * variant comes first, second and last in turn.
 */
export function roundVariants(rounds: number): Variant[] {
  return Array.from({ length: rounds }, (_, cycle) => VARIANTS.map((_, index) => VARIANTS[(index + cycle) % VARIANTS.length]!)).flat()
}

export interface Layout {
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
  /** Whose campaign its triggers went to. */
  variant: Variant
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

/** The webhooks of one variant's triggers (the warm-up's too) whose data.result the receiver checked, and those not as their campaign's calls report it. */
export interface ResultCheck {
  checked: number
  wrong: number
  /** The first few wrong ones: what was wrong with each. */
  examples: string[]
}

export interface EndToEndResult {
  layout: string
  /** Triggers posted in each round. */
  triggers: number
  /** In order, the variants alternating (roundVariants); they stop at the first that does not complete. */
  rounds: EndToEndRound[]
  /**
   * Per variant, the median of each figure over its rounds when every one completed; otherwise its round that did
   * not; none for a variant whose first round was not reached.
   */
  summaries: Record<Variant, EndToEndRound | undefined>
  /** The median over the cycles of rounds whose two rounds compared both completed of the results round's triggers/s over the plain one's; none without such a cycle. */
  resultsRatio: number | undefined
  /** Likewise, the vapi round's triggers/s over the results one's: the provider's path beside the simulator's, for the same conversation. */
  vapiRatio: number | undefined
  /** What the Vapi fake saw: calls created, reports the service answered 204, and each request or report that went wrong. */
  vapi: { callsCreated: number; reportsAccepted: number; reportBytes: number; problems: { count: number; examples: string[] } }
  /** Of each round. */
  webhooksExpected: number
  /** webhook-ids received more than once, up to the service's shutdown. */
  duplicateWebhooks: number
  /** Each variant's webhooks, their data.result checked; any wrong one is a fault of the service. */
  resultChecks: Record<Variant, ResultCheck>
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
  /** Measured rounds of each variant. */
  rounds: number
  /** Triggers taken through the whole pipeline before the measured ones, so that what is measured is a running service's steady state. */
  warmUpTriggers: number
  layouts: readonly EndToEndLayoutName[]
  workDir: string
}): Promise<EndToEndResult[]> {
  const variants = roundVariants(options.rounds)
  const all = generateBodies(options.warmUpTriggers + variants.length * options.triggers).bodies
  const bodies: Bodies = {
    // To each campaign in turn, so that every way through the service is warm.
    warmUp: all.slice(0, options.warmUpTriggers).map((text, index) => addressedTo(text, CAMPAIGN_OF[VARIANTS[index % VARIANTS.length]!])),
    rounds: variants.map((variant, round) => {
      const start = options.warmUpTriggers + round * options.triggers
      return { variant, bodies: all.slice(start, start + options.triggers).map((text) => addressedTo(text, CAMPAIGN_OF[variant])) }
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

/** One of the trigger benchmark's bodies (each a person of its own), sent to this campaign; one that names a channel names its channel. */
export function addressedTo(text: string, campaign: typeof CAMPAIGN): string {
  const body = JSON.parse(text)
  body.campaign = campaign.routing_key
  if ('channel' in body) body.channel = campaign.channel
  return JSON.stringify(body)
}

/** The warm-up's bodies (of every variant) and each measured round's, with its variant; each a person of their own. */
interface Bodies {
  warmUp: readonly string[]
  rounds: readonly { variant: Variant; bodies: readonly string[] }[]
}

async function runLayout(layout: Layout, databaseEnv: Record<string, string>, bodies: Bodies, workDir: string): Promise<EndToEndResult> {
  const receiver = await startReceiver()
  const vapi = await startVapiFake({
    apiKey: VAPI_API_KEY,
    webhookSecret: VAPI_WEBHOOK_SECRET,
    conversation: SCREENING_RESULT,
    dispositionField: VAPI_DISPOSITION_FIELD,
    // As many as the clients posting triggers: Vapi posts each report on its own, and this bounds the fake's sockets.
    connections: CLIENTS,
  })
  const servers: Server[] = []
  let rounds: EndToEndRound[]
  let metrics: MetricsReading
  try {
    const env = {
      ...databaseEnv,
      OPERATOR_TOKEN,
      PHONE_HASH_KEY,
      LOG_LEVEL: 'info',
      ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      VAPI_API_BASE_URL: vapi.url,
      VAPI_API_KEY,
      VAPI_WEBHOOK_SECRET,
    }
    for (const { name, args } of layout.processes) servers.push(await startServer(name, args, env, workDir))
    // Vapi posts to the assistant's server URL, set in Vapi and not sent with the call: the API process's route.
    vapi.setServerUrl(`${servers[0]!.baseUrl}/providers/vapi/webhook`)
    await Promise.all(servers.map(untilReady))
    let underLoad: Scrape
    ;({ rounds, underLoad } = await measure(layout, databaseEnv.DATABASE_URL, servers, receiver, bodies))
    // The warm-up's and every round's that was posted, of every variant: each one task, one call and two webhooks.
    const posted = bodies.warmUp.length + bodies.rounds.slice(0, rounds.length).reduce((sum, round) => sum + round.bodies.length, 0)
    const throughVapi = warmUpThroughVapi(bodies.warmUp.length) + bodies.rounds.slice(0, rounds.length).reduce((sum, round) => sum + (round.variant === 'vapi' ? round.bodies.length : 0), 0)
    metrics = readMetrics(underLoad, await scrapeService(servers), { posted, throughVapi, onPostgres: databaseEnv.DATABASE_URL !== undefined })
  } finally {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    await receiver.close()
    await vapi.close()
  }
  const vapiSeen = { callsCreated: vapi.callsCreated(), reportsAccepted: vapi.reportsAccepted(), reportBytes: vapi.reportBytes(), problems: vapi.problems() }
  if (vapiSeen.problems.count > 0) log(`${layout.name}: the Vapi fake met ${vapiSeen.problems.count} problems, e.g.\n${vapiSeen.problems.examples.join('\n')}`)
  // Read once the service has stopped, so that a webhook sent again up to its shutdown counts, and so does a problem on its way out.
  const serviceLogProblems = (await Promise.all(servers.map(logProblems))).flat()
  for (const line of serviceLogProblems.slice(0, 5)) log(`${layout.name}: in the service's log: ${line}`)
  for (const problem of metrics.problems) log(`${layout.name}: /metrics: ${problem}`)
  const resultChecks = receiver.resultChecks()
  for (const variant of VARIANTS) {
    const check = resultChecks[variant]
    if (check.wrong > 0) log(`${layout.name}: ${check.wrong} of ${check.checked} webhooks (${variant}) with a data.result not as expected, e.g.\n${check.examples.join('\n')}`)
  }
  const triggers = bodies.rounds[0]!.bodies.length
  const ofVariant = (variant: Variant) => rounds.filter((round) => round.variant === variant)
  return {
    layout: layout.name,
    triggers,
    rounds,
    summaries: { plain: summarize(ofVariant('plain')), results: summarize(ofVariant('results')), vapi: summarize(ofVariant('vapi')) },
    resultsRatio: ratioWithinCycles(rounds, 'results', 'plain'),
    vapiRatio: ratioWithinCycles(rounds, 'vapi', 'results'),
    vapi: vapiSeen,
    webhooksExpected: 2 * triggers,
    duplicateWebhooks: receiver.duplicates(),
    resultChecks,
    serviceLogProblems,
    metrics,
  }
}

/** The median of each figure over rounds that all completed; the one that did not, otherwise (it is the last); none without rounds. */
export function summarize(rounds: readonly EndToEndRound[]): EndToEndRound | undefined {
  if (rounds.length === 0) return undefined
  const incomplete = rounds.find((round) => round.outcome !== 'complete')
  if (incomplete !== undefined) return incomplete
  const of = (figure: (round: EndToEndRound) => number) => median(rounds.map(figure))
  const first = rounds[0]!.cpuMsPerTrigger
  return {
    variant: rounds[0]!.variant,
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

/** How many of `warmUp` triggers went to VAPI_CAMPAIGN: every VARIANTS.length-th, as Bodies deals them. */
function warmUpThroughVapi(warmUp: number): number {
  const vapiIndex = VARIANTS.indexOf('vapi')
  return Math.max(0, Math.ceil((warmUp - vapiIndex) / VARIANTS.length))
}

/**
 * One variant's triggers/s over another's: in each cycle of rounds (one of each, side by side, so that the machine's
 * drift between them is small) whose two rounds compared both completed, then the median over the cycles.
 */
function ratioWithinCycles(rounds: readonly EndToEndRound[], over: Variant, under: Variant): number | undefined {
  const ratios: number[] = []
  for (let cycle = 0; cycle + VARIANTS.length <= rounds.length; cycle += VARIANTS.length) {
    const these = rounds.slice(cycle, cycle + VARIANTS.length)
    const numerator = these.find((round) => round.variant === over)
    const denominator = these.find((round) => round.variant === under)
    if (numerator?.outcome !== 'complete' || denominator?.outcome !== 'complete') continue
    // Each round posts as many triggers: the rates' ratio is that of the times, the other way round.
    ratios.push(denominator.seconds / numerator.seconds)
  }
  return ratios.length === 0 ? undefined : median(ratios)
}

/**
 * Provisions the organization (every variant's campaign), warms the service up, then measures the rounds in turn,
 * up to the first that does not complete; with /metrics of every process as scraped while the first triggers were
 * being posted.
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
  const { apiKey } = await provision(api.baseUrl, VARIANTS.map((variant) => CAMPAIGN_OF[variant]), ['triggers:write', 'webhooks:manage'])
  await postCreating(api.baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiver.url, events: EVENT_TYPES })
  // Taken during the warm-up when there is one, so that the measured rounds pay nothing for it.
  const underLoad = sleep(SCRAPE_UNDER_LOAD_AFTER_MS).then(() => scrapeService(servers))

  let triggersSoFar = 0
  if (bodies.warmUp.length > 0) {
    log(`${layout.name}: warming up with ${bodies.warmUp.length} triggers, to each campaign in turn`)
    const warmUp = await postEvery(layout, api, apiKey, bodies.warmUp, 'warm-up')
    triggersSoFar += bodies.warmUp.length
    const warmedUp = await untilAllDelivered(layout, receiver, triggersSoFar, warmUp.startedAt, servers)
    if (warmedUp !== 'complete') throw new Error(`${layout.name}: the warm-up ended with ${warmedUp}`)
  }
  const rounds: EndToEndRound[] = []
  for (const [index, { variant, bodies: roundBodies }] of bodies.rounds.entries()) {
    const phase = `round ${index + 1} of ${bodies.rounds.length} (${VARIANT_LABEL[variant]})`
    log(`${layout.name}: ${phase}, ${roundBodies.length} triggers from ${CLIENTS} clients`)
    const round = await measureRound(layout, databaseUrl, servers, receiver, {
      apiKey,
      variant,
      bodies: roundBodies,
      triggersBefore: triggersSoFar,
      requestIds: `round-${index + 1}-${variant}`,
    })
    triggersSoFar += roundBodies.length
    rounds.push(round)
    if (round.outcome !== 'complete') break
  }
  return { rounds, underLoad: await underLoad }
}

export async function measureRound(
  layout: Layout,
  databaseUrl: string | undefined,
  servers: readonly Server[],
  receiver: Receiver,
  /** requestIds: what the round's X-Request-IDs start with. */
  round: { apiKey: string; variant: Variant; bodies: readonly string[]; triggersBefore: number; requestIds: string },
): Promise<EndToEndRound> {
  const api = servers[0]!
  const { bodies } = round
  const cpuBefore = servers.map((server) => processCpuSeconds(server.child.pid!))
  const postgresCpu = databaseUrl === undefined ? undefined : meterPostgresCpu(new URL(databaseUrl).pathname.slice(1))
  const intake = await postEvery(layout, api, round.apiKey, bodies, round.requestIds)
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
    variant: round.variant,
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
export async function postEvery(layout: Layout, api: Server, apiKey: string, bodies: readonly string[], phase: string): Promise<Intake> {
  const intake = await postAll(api, apiKey, bodies, phase)
  if (intake.refusals.length > 0) {
    throw new Error(
      `${layout.name}: ${intake.refusals.length} of ${bodies.length} POSTs (${phase}) were not answered 201, e.g.\n${intake.refusals.slice(0, 5).join('\n')}\n${api.name} log:\n${await tail(api.logFile)}`,
    )
  }
  return intake
}

/** A process is ready when its /readyz answers (a worker process's, on METRICS_PORT). */
export function untilReady(server: Server): Promise<void> {
  return waitUntilReady(server, async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200)
}

export interface Intake {
  /** performance.now() when the first POST was sent. */
  startedAt: number
  seconds: number
  latenciesMs: Float64Array
  /** Each answer other than 201, or the error of a request that got none. */
  refusals: string[]
}

/** Every body posted once, by CLIENTS clients each taking the next body when its last one is answered. */
export async function postAll(api: Server, apiKey: string, bodies: readonly string[], phase: string): Promise<Intake> {
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


export interface Receiver {
  url: string
  /** Distinct webhook-ids received of one event type. */
  received(type: EventType): number
  distinct(): number
  /** webhook-ids received more than once. */
  duplicates(): number
  /** performance.now() when the last new webhook-id arrived. */
  lastNewAt(): number
  /** Of each variant's webhooks so far (each webhook-id once), the data.result checked against its campaign's. */
  resultChecks(): Record<Variant, ResultCheck>
  close(): Promise<void>
}

/** Wrong results kept as examples, per variant. */
const RESULT_EXAMPLES = 5

/**
 * The client's webhook endpoint: answers 200 at once, and counts what it got by webhook-id and event type. Each
 * webhook-id's first body is checked against what its campaign's calls report (see FULL_CHECK_EVERY).
 */
export async function startReceiver(): Promise<Receiver> {
  const timesReceived = new Map<string, number>()
  const byType = new Map<string, number>()
  const checks = Object.fromEntries(VARIANTS.map((variant): [Variant, ResultCheck] => [variant, { checked: 0, wrong: 0, examples: [] }])) as Record<Variant, ResultCheck>
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
      // Read without parsing: the receiver shares a CPU with PostgreSQL, and parsing every webhook of kilobytes
      // cost the variant with results throughput that was the receiver's, not the service's. Every
      // FULL_CHECK_EVERY-th webhook of a variant is parsed and its result checked field by field.
      const type = EVENT_TYPES.find((candidate) => body.includes(`"${candidate}"`)) ?? 'unknown'
      byType.set(type, (byType.get(type) ?? 0) + 1)
      const variant = VARIANTS.find((candidate) => body.includes(`"${CAMPAIGN_OF[candidate].routing_key}"`))
      // A webhook of none of the campaigns (or not JSON) cannot be right: it counts against the plain variant.
      const check = checks[variant ?? 'plain']
      check.checked++
      const problem =
        variant === undefined
          ? `${id}: not an event of any of the campaigns: ${body.slice(0, 200)}`
          : check.checked % FULL_CHECK_EVERY === 1
            ? resultProblem(parsedResult(body), RESULT_OF[variant])
            : markerProblem(body, RESULT_OF[variant])
      if (problem === undefined) return
      check.wrong++
      if (check.examples.length < RESULT_EXAMPLES) check.examples.push(`${type} ${id}: ${problem}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received: (type) => byType.get(type) ?? 0,
    distinct: () => timesReceived.size,
    duplicates: () => [...timesReceived.values()].filter((times) => times > 1).length,
    lastNewAt: () => lastNewAt,
    resultChecks: () => Object.fromEntries(VARIANTS.map((variant) => [variant, { ...checks[variant], examples: [...checks[variant].examples] }])) as Record<Variant, ResultCheck>,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** One webhook of a variant in this many is parsed and checked field by field; the others by what their text holds. */
const FULL_CHECK_EVERY = 20

function parsedResult(body: string): unknown {
  try {
    return (JSON.parse(body) as { data?: { result?: unknown } }).data?.result
  } catch {
    return undefined
  }
}

/**
 * What is wrong with a webhook, read as text: one whose trigger's calls reported the result holds its recording URL and
 * its last turn's text; one whose calls reported none holds a null result (as JSON.stringify writes it, or as the
 * events table gives it back).
 */
function markerProblem(body: string, reported: ScreeningResult | null): string | undefined {
  if (reported === null) return /"result": ?null/.test(body) ? undefined : 'no null data.result'
  const lastTurn = JSON.stringify(reported.transcript.at(-1)!.text)
  return body.includes(reported.recording_url) && body.includes(lastTurn) ? undefined : "the campaign's result is not in it"
}

/**
 * What is wrong with a webhook's data.result, given what its trigger's calls reported (null for none); undefined
 * when nothing is. A result is sent with every field, null where not reported, opt_out false, and the time it was
 * received; its instants may be written otherwise than reported (the service keeps them in UTC), and its data's
 * keys in another order (PostgreSQL's jsonb orders them its own way).
 */
function resultProblem(result: unknown, reported: ScreeningResult | null): string | undefined {
  const shown = (value: unknown) => JSON.stringify(value)?.slice(0, 120) ?? 'undefined'
  if (reported === null) return result === null ? undefined : `data.result ${shown(result)}, expected null`
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return `data.result ${shown(result)}, expected the campaign's result`
  const sent = result as Record<string, unknown>
  for (const field of ['disposition', 'summary', 'recording_url'] as const) {
    if (sent[field] !== reported[field]) return `${field} ${shown(sent[field])}, expected ${shown(reported[field])}`
  }
  for (const field of ['transcript_url', 'callback_at'] as const) if (sent[field] !== null) return `${field} ${shown(sent[field])}, expected null`
  if (sent.opt_out !== false) return `opt_out ${shown(sent.opt_out)}, expected false`
  if (typeof sent.received_at !== 'string' || Number.isNaN(Date.parse(sent.received_at))) return `received_at ${shown(sent.received_at)}`
  const data = sent.data as Record<string, unknown> | null
  const keys = Object.keys(reported.data)
  if (typeof data !== 'object' || data === null || Array.isArray(data) || Object.keys(data).length !== keys.length) {
    return `data ${shown(data)}, expected ${keys.length} keys`
  }
  const differing = keys.find((key) => data[key] !== reported.data[key])
  if (differing !== undefined) return `data.${differing} ${shown(data[differing])}, expected ${shown(reported.data[differing])}`
  const transcript = sent.transcript
  if (!Array.isArray(transcript) || transcript.length !== reported.transcript.length) {
    return `transcript of ${Array.isArray(transcript) ? transcript.length : shown(transcript)} turns, expected ${reported.transcript.length}`
  }
  for (const [index, turn] of reported.transcript.entries()) {
    const got = transcript[index] as Partial<Turn> | null
    if (typeof got !== 'object' || got === null) return `transcript[${index}] ${shown(got)}`
    for (const field of ['role', 'text'] as const) {
      if (got[field] !== turn[field]) return `transcript[${index}].${field} ${shown(got[field])}, expected ${shown(turn[field])}`
    }
    if (typeof got.at !== 'string' || Date.parse(got.at) !== Date.parse(turn.at)) return `transcript[${index}].at ${shown(got.at)}, expected ${turn.at}`
  }
  return undefined
}

/** Waits until the receiver has one event of each type per trigger posted so far, or the timeout, or a service process dies. */
export async function untilAllDelivered(
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

export async function logProblems(server: Server): Promise<string[]> {
  const lines = (await readFile(server.logFile, 'utf8')).split('\n').filter((line) => line !== '')
  return lines
    .filter((line) => {
      const level = /^\{"level":(\d+)/.exec(line)?.[1]
      return level === undefined || Number(level) >= WARN
    })
    .map((line) => `${server.name}: ${line}`)
}

/** Triggers per second from the first POST to the last webhook; undefined for a round (or a variant's summary) that did not finish, or none. */
export function endToEndRate(result: EndToEndResult, round: EndToEndRound | undefined): number | undefined {
  return round?.outcome === 'complete' ? result.triggers / round.seconds : undefined
}

/** How the layout's rounds ended: complete, or as the last one that did not. */
export function endToEndOutcome(result: EndToEndResult): EndToEndRound['outcome'] {
  return result.rounds.find((round) => round.outcome !== 'complete')?.outcome ?? 'complete'
}

/** One figure the project holds a layout to, and this run's. */
export interface EndToEndVerdict {
  layout: string
  goal: string
  measured: string
  met: boolean
}

/** The results variant's triggers/s over the plain one's that meets the goal: 10 % below at most. */
const RESULTS_RATIO_GOAL = 0.9

/** A figure of a layout's run, and the value that meets the project's goal for it. */
interface Goal {
  layout: Layout
  goal: string
  figure: (result: EndToEndResult) => number | undefined
  unit: string
  digits: number
  met: (value: number) => boolean
}

/**
 * What the project holds itself to, end to end: the rounds without results (as the pipeline was measured before
 * calls reported any), and the results variant beside them. A figure a run could not give (it did not finish) does
 * not meet its goal.
 */
const GOALS: Goal[] = [
  { layout: POSTGRES_LAYOUT, goal: 'at least 1,000 triggers/s end to end', figure: (r) => endToEndRate(r, r.summaries.plain), unit: 'triggers/s', digits: 0, met: (rate) => rate >= 1000 },
  { layout: POSTGRES_LAYOUT, goal: 'at most 0.8 ms of service CPU per trigger', figure: (r) => r.summaries.plain?.cpuMsPerTrigger.service, unit: 'ms', digits: 2, met: (ms) => ms <= 0.8 },
  { layout: POSTGRES_LAYOUT, goal: 'at most 0.6 ms of PostgreSQL CPU per trigger', figure: (r) => r.summaries.plain?.cpuMsPerTrigger.postgres, unit: 'ms', digits: 2, met: (ms) => ms <= 0.6 },
  withResultsGoal(POSTGRES_LAYOUT),
  { layout: EMBEDDED_LAYOUT, goal: 'at least 300 triggers/s end to end', figure: (r) => endToEndRate(r, r.summaries.plain), unit: 'triggers/s', digits: 0, met: (rate) => rate >= 300 },
  { layout: EMBEDDED_LAYOUT, goal: 'intake p99 under 250 ms', figure: (r) => r.summaries.plain?.intake.p99Ms, unit: 'ms', digits: 0, met: (ms) => ms < 250 },
  withResultsGoal(EMBEDDED_LAYOUT),
]

/** The results variant's triggers/s beside the plain one's, of the same run. */
function withResultsGoal(layout: Layout): Goal {
  return {
    layout,
    goal: `with results: triggers/s within ${Math.round((1 - RESULTS_RATIO_GOAL) * 100)} % of the same run without results`,
    figure: (result) => result.resultsRatio,
    unit: 'times the triggers/s without results (median over the cycles of rounds)',
    digits: 2,
    met: (ratio) => ratio >= RESULTS_RATIO_GOAL,
  }
}

/** Whether a webhook's data.result was not as its trigger's calls reported it: a fault of the service. */
export function resultChecksFailed(result: EndToEndResult): boolean {
  return VARIANTS.some((variant) => result.resultChecks[variant].wrong > 0)
}

export function endToEndVerdicts(results: readonly EndToEndResult[]): EndToEndVerdict[] {
  const checks = results.flatMap((result) => [
    {
      layout: result.layout,
      goal: `every webhook carries its trigger's data.result: with results, the ${SCREENING_RESULT.transcript.length}-turn transcript and the ${Object.keys(SCREENING_RESULT.data).length} data keys as reported (through Vapi, ${Object.keys(VAPI_RESULT.data).length}: the structured data, whole); without, null`,
      measured: VARIANTS.map((variant) => `${VARIANT_LABEL[variant]} ${result.resultChecks[variant].wrong} wrong of ${result.resultChecks[variant].checked}`).join(', '),
      // A variant none of whose webhooks arrived (a run that ended early) has not shown it either.
      met: !resultChecksFailed(result) && VARIANTS.every((variant) => result.resultChecks[variant].checked > 0),
    },
    {
      layout: result.layout,
      goal: 'through Vapi: every Create Call the service made taken, and every end-of-call-report the fake posted answered 204',
      measured: `${result.vapi.callsCreated} calls, ${result.vapi.reportsAccepted} reports answered 204, ${result.vapi.problems.count} problems${result.vapi.problems.examples.length > 0 ? ` (${result.vapi.problems.examples.join('; ')})` : ''}`,
      met: result.vapi.problems.count === 0 && result.vapi.callsCreated > 0 && result.vapi.reportsAccepted === result.vapi.callsCreated,
    },
    {
      layout: result.layout,
      goal: '/metrics of every process: each family present, each figure sensible',
      measured: result.metrics.problems.length === 0 ? `${result.metrics.rows.length} figures as expected` : result.metrics.problems.join('; '),
      met: result.metrics.problems.length === 0,
    },
  ])
  const goals = GOALS.flatMap(({ layout, goal, figure, unit, digits, met }) => {
    const result = results.find((candidate) => candidate.layout === layout.name)
    if (result === undefined) return []
    const value = figure(result)
    return {
      layout: layout.name,
      goal,
      measured: value === undefined ? `none (${endToEndOutcome(result)})` : `${value.toFixed(digits)} ${unit}`,
      met: value !== undefined && met(value),
    }
  })
  return [...goals, ...checks]
}
