/**
 * /metrics as Prometheus would scrape it during the end-to-end run: from
 * every process of the service (the API's on PORT, a worker's on
 * METRICS_PORT), read by Prometheus's text rules (the tests' parser, the one
 * the project has), once while the first triggers are being posted and once
 * when every webhook has arrived. Each family the service promises must be
 * there, with a value that makes sense of the run: a family missing, or a
 * figure that does not add up, is a problem the section reports and fails on.
 */
import { type Family, parsePrometheusText, sampleValue } from '../test/support/prometheus.ts'
import { OPERATOR_TOKEN, type Server } from './harness.ts'

/** Each process's families, as one scrape of the service read them. */
export type Scrape = Map<string, Family>[]

export async function scrapeService(servers: readonly Server[]): Promise<Scrape> {
  return Promise.all(
    servers.map(async (server) => {
      const response = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      if (response.status !== 200) throw new Error(`${server.name}: GET /metrics answered ${response.status}`)
      return parsePrometheusText(await response.text())
    }),
  )
}

/** One figure of the scrapes: what it reads, and what it must be once the run has ended. */
interface MetricsFigure {
  family: string
  /** The sample read, in Prometheus's notation. */
  sample: string
  read: (scrape: Scrape) => number | undefined
  /** What it must be at the end, for a run that posted what `run` says. */
  expected: (run: PostedRun) => { text: string; holds: (value: number) => boolean }
  /** The database's pool: PostgreSQL's only. */
  postgresOnly?: boolean
}

/** Counters and histograms: what the processes did, summed as Prometheus sums them. */
const summed = (family: string, name: string, labels: Record<string, string> = {}) => (scrape: Scrape) => {
  const values = scrape.map((families) => sampleValue(families, family, name, labels)).filter((value) => value !== undefined)
  return values.length === 0 ? undefined : values.reduce((sum, value) => sum + value, 0)
}
/** Gauges every process reads from the database alike: the highest reading. */
const highest = (family: string) => (scrape: Scrape) => {
  const values = scrape.map((families) => sampleValue(families, family, family)).filter((value) => value !== undefined)
  return values.length === 0 ? undefined : Math.max(...values)
}
/** A histogram's mean: its sum over its count, of every process. */
const mean = (family: string, labels: Record<string, string> = {}) => (scrape: Scrape) => {
  const sum = summed(family, `${family}_sum`, labels)(scrape)
  const count = summed(family, `${family}_count`, labels)(scrape)
  return sum === undefined || count === undefined || count === 0 ? undefined : sum / count
}

/** What a run posted: its triggers, each one task, one call and two webhooks; of them, those whose calls went through Vapi, the others' on the simulator. */
export interface PostedRun {
  posted: number
  throughVapi: number
}

const exactly = (what: string, of: (run: PostedRun) => number) => (run: PostedRun) => ({ text: `= ${of(run)} (${what})`, holds: (value: number) => value === of(run) })
const atLeast = (minimum: number) => () => ({ text: `≥ ${minimum}`, holds: (value: number) => value >= minimum })
const positive = () => ({ text: '> 0', holds: (value: number) => value > 0 })
const none = () => ({ text: '0', holds: (value: number) => value === 0 })

const FIGURES: MetricsFigure[] = [
  {
    family: 'conversation_trigger_http_request_duration_seconds',
    sample: '_count{route="/api/v2/triggers",status_code="201"}',
    read: summed('conversation_trigger_http_request_duration_seconds', 'conversation_trigger_http_request_duration_seconds_count', { route: '/api/v2/triggers', status_code: '201' }),
    expected: exactly('triggers posted', (run) => run.posted),
  },
  { family: 'conversation_trigger_triggers_total', sample: '{result="accepted"}', read: summed('conversation_trigger_triggers_total', 'conversation_trigger_triggers_total', { result: 'accepted' }), expected: exactly('triggers posted', (run) => run.posted) },
  { family: 'conversation_trigger_triggers_total', sample: '{result="refused"}', read: (scrape) => summed('conversation_trigger_triggers_total', 'conversation_trigger_triggers_total', { result: 'refused' })(scrape) ?? 0, expected: () => none() },
  { family: 'conversation_trigger_rate_limited_requests_total', sample: '', read: summed('conversation_trigger_rate_limited_requests_total', 'conversation_trigger_rate_limited_requests_total'), expected: () => none() },
  { family: 'conversation_trigger_group_commit_items', sample: '_count{committer="triggers"}', read: summed('conversation_trigger_group_commit_items', 'conversation_trigger_group_commit_items_count', { committer: 'triggers' }), expected: () => positive() },
  { family: 'conversation_trigger_group_commit_items', sample: 'mean{committer="triggers"}', read: mean('conversation_trigger_group_commit_items', { committer: 'triggers' }), expected: atLeast(1) },
  {
    family: 'conversation_trigger_group_commit_items',
    sample: '_count{committer="interaction_endings"}',
    read: summed('conversation_trigger_group_commit_items', 'conversation_trigger_group_commit_items_count', { committer: 'interaction_endings' }),
    expected: () => positive(),
  },
  { family: 'conversation_trigger_group_commit_items', sample: 'mean{committer="interaction_endings"}', read: mean('conversation_trigger_group_commit_items', { committer: 'interaction_endings' }), expected: atLeast(1) },
  { family: 'conversation_trigger_task_dispatch_lag_seconds', sample: '_count', read: summed('conversation_trigger_task_dispatch_lag_seconds', 'conversation_trigger_task_dispatch_lag_seconds_count'), expected: exactly('one call a trigger', (run) => run.posted) },
  { family: 'conversation_trigger_task_dispatch_lag_seconds', sample: 'mean (s)', read: mean('conversation_trigger_task_dispatch_lag_seconds'), expected: atLeast(0) },
  { family: 'conversation_trigger_provider_errors_total', sample: '', read: (scrape) => summed('conversation_trigger_provider_errors_total', 'conversation_trigger_provider_errors_total')(scrape) ?? 0, expected: () => none() },
  { family: 'conversation_trigger_tasks_completed_total', sample: '{outcome="reached"}', read: summed('conversation_trigger_tasks_completed_total', 'conversation_trigger_tasks_completed_total', { outcome: 'reached' }), expected: exactly('triggers posted', (run) => run.posted) },
  {
    family: 'conversation_trigger_interactions_finalized_total',
    sample: '{provider="simulator",outcome="completed"}',
    read: summed('conversation_trigger_interactions_finalized_total', 'conversation_trigger_interactions_finalized_total', { provider: 'simulator', outcome: 'completed' }),
    expected: exactly('one call a trigger on the simulator', (run) => run.posted - run.throughVapi),
  },
  {
    family: 'conversation_trigger_interactions_finalized_total',
    sample: '{provider="vapi",outcome="completed"}',
    read: (scrape) => summed('conversation_trigger_interactions_finalized_total', 'conversation_trigger_interactions_finalized_total', { provider: 'vapi', outcome: 'completed' })(scrape) ?? 0,
    expected: exactly('one call a trigger through Vapi', (run) => run.throughVapi),
  },
  {
    family: 'conversation_trigger_webhook_delivery_attempt_duration_seconds',
    sample: '_count{result="succeeded"}',
    read: summed('conversation_trigger_webhook_delivery_attempt_duration_seconds', 'conversation_trigger_webhook_delivery_attempt_duration_seconds_count', { result: 'succeeded' }),
    // The last few may be recorded just after the receiver has them.
    expected: () => positive(),
  },
  { family: 'conversation_trigger_webhook_delivery_attempt_duration_seconds', sample: 'mean (s)', read: mean('conversation_trigger_webhook_delivery_attempt_duration_seconds', { result: 'succeeded' }), expected: atLeast(0) },
  // The queues, read from the database at most every 5 s: under load, what waited then; at the end, at least there.
  ...['conversation_trigger_tasks_pending', 'conversation_trigger_tasks_due', 'conversation_trigger_tasks_oldest_due_age_seconds', 'conversation_trigger_tasks_in_progress', 'conversation_trigger_interactions_running', 'conversation_trigger_webhook_deliveries_pending', 'conversation_trigger_webhook_deliveries_retrying', 'conversation_trigger_webhook_delivery_lag_seconds', 'conversation_trigger_webhook_endpoints_disabled'].map(
    (family): MetricsFigure => ({ family, sample: '', read: highest(family), expected: atLeast(0) }),
  ),
  { family: 'conversation_trigger_db_pool_connections', sample: '{state="busy"} + {state="idle"}', read: (scrape) => sumOf(scrape, 'conversation_trigger_db_pool_connections', ['busy', 'idle']), expected: () => positive(), postgresOnly: true },
  { family: 'process_cpu_seconds_total', sample: '', read: summed('process_cpu_seconds_total', 'process_cpu_seconds_total'), expected: () => positive() },
  { family: 'process_resident_memory_bytes', sample: '', read: summed('process_resident_memory_bytes', 'process_resident_memory_bytes'), expected: () => positive() },
  { family: 'nodejs_eventloop_lag_seconds', sample: '', read: highest('nodejs_eventloop_lag_seconds'), expected: atLeast(0) },
]

function sumOf(scrape: Scrape, family: string, states: string[]): number | undefined {
  const values = states.map((state) => summed(family, family, { state })(scrape))
  return values.some((value) => value === undefined) ? undefined : values.reduce((sum: number, value) => sum + value!, 0)
}

/** One figure as the report shows it. */
export interface MetricsRow {
  family: string
  sample: string
  underLoad: number | undefined
  atEnd: number | undefined
  expected: string
  holds: boolean
}

export interface MetricsReading {
  rows: MetricsRow[]
  /** Each family missing, and each figure that does not hold at the end; none for a sound run. */
  problems: string[]
}

/**
 * The figures of both scrapes, each checked at the end against a run that posted `posted` triggers: all of them, the
 * warm-up's and every round's, to every campaign (end to end, calls that report a result count as any other).
 */
export function readMetrics(underLoad: Scrape, atEnd: Scrape, options: PostedRun & { onPostgres: boolean }): MetricsReading {
  const problems: string[] = []
  const rows = FIGURES.filter((figure) => options.onPostgres || !figure.postgresOnly).map((figure) => {
    const expected = figure.expected(options)
    const end = figure.read(atEnd)
    for (const [when, scrape] of [['under load', underLoad], ['at the end', atEnd]] as const) {
      if (!scrape.some((families) => families.has(figure.family))) problems.push(`${figure.family} missing from /metrics ${when}`)
    }
    const holds = end !== undefined && expected.holds(end)
    if (!holds) problems.push(`${figure.family}${figure.sample} at the end: ${end ?? 'none'}, expected ${expected.text}`)
    return { family: figure.family, sample: figure.sample, underLoad: figure.read(underLoad), atEnd: end, expected: expected.text, holds }
  })
  return { rows, problems: [...new Set(problems)] }
}
