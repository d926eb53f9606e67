/**
 * The process's metrics, in prom-client's registry, served at GET /metrics
 * in Prometheus's text format. Counters and histograms count what this
 * process did (Prometheus sums the processes); the queue gauges are read
 * from the database when scraped, at most once per QUEUE_READ_INTERVAL_MS,
 * each from the partial index its workers take work by (store/queues.ts), so
 * that a scrape costs the size of the queues, never of the history.
 *
 * A registry per process (per app, in tests), not prom-client's global one:
 * tests build many apps in one process, and each must count its own.
 *
 * The service's own metrics are named with METRIC_PREFIX, so that they stand
 * apart from every other exporter's in one Prometheus. prom-client's process
 * metrics (process_*, nodejs_*) keep their names: every exporter writes
 * process_* unprefixed, and the common Node.js dashboards read those names;
 * the `job` label tells whose they are.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { FinalizedInteraction, TaskCompletion } from '../domain/events.ts'
import type { Database } from '../store/database.ts'
import { disabledEndpointCount } from '../store/webhookEndpoints.ts'
import { queueDepths } from '../store/queues.ts'

/** The prefix of each of the service's own metrics. */
const METRIC_PREFIX = 'conversation_trigger_'

/** How often a scrape may read the queues from the database; scrapes in between answer the last reading. */
export const QUEUE_READ_INTERVAL_MS = 5_000

/** Seconds, for request and webhook latencies: 1 ms to 15 s (the deliverer's timeout). */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15]

export class ServiceMetrics {
  readonly registry = new Registry()

  readonly httpRequests = new Histogram({
    name: 'conversation_trigger_http_request_duration_seconds',
    help: 'HTTP requests answered, by method, route pattern and status code, and how long each took.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  })

  readonly triggers = new Counter({
    name: 'conversation_trigger_triggers_total',
    help: 'Triggers submitted (one a request, one a batch item): accepted (recorded, or a repeat answered with its first answer), or refused, by reason (invalid, or the error code).',
    labelNames: ['result', 'reason'] as const,
    registers: [this.registry],
  })

  readonly groupCommits = new Histogram({
    name: 'conversation_trigger_group_commit_items',
    help: 'Items in each group commit, by committer (triggers: the intake; interaction_endings: settlement).',
    labelNames: ['committer'] as const,
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    registers: [this.registry],
  })

  readonly attemptsStarted = new Histogram({
    name: 'conversation_trigger_task_dispatch_lag_seconds',
    help: 'Attempts this process\'s dispatcher started, by channel, and how long each task had been due when it did (due to started).',
    labelNames: ['channel'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  })

  readonly providerErrors = new Counter({
    name: 'conversation_trigger_provider_errors_total',
    help: 'Starts a provider refused (refused), deferred (deferred: its throttling; the attempt is made again later) or left unknown (uncertain: no answer, or one that could not be read), by provider.',
    labelNames: ['provider', 'kind'] as const,
    registers: [this.registry],
  })

  readonly #tasksCompleted = new Counter({
    name: 'conversation_trigger_tasks_completed_total',
    help: 'Tasks this process completed, by channel and outcome (reached, unreachable, failed, cancelled, expired, opted_out).',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  })

  readonly #interactionsFinalized = new Counter({
    name: 'conversation_trigger_interactions_finalized_total',
    help: 'Interactions this process finalized (outbound attempts and inbound messages), by provider, channel and outcome.',
    labelNames: ['provider', 'channel', 'outcome'] as const,
    registers: [this.registry],
  })

  readonly rateLimited = new Counter({
    name: 'conversation_trigger_rate_limited_requests_total',
    help: 'Requests to /api/v2 refused with 429 by their organization\'s rate limit.',
    registers: [this.registry],
  })

  readonly deliveryAttempts = new Histogram({
    name: 'conversation_trigger_webhook_delivery_attempt_duration_seconds',
    help: 'Webhook attempts made by this process, by result (succeeded; retry: failed and due again; failed: failed and given up), and how long each took.',
    labelNames: ['result'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  })

  readonly retentionDeletedRows = new Counter({
    name: 'conversation_trigger_retention_deleted_rows_total',
    help: 'Rows this process\'s history sweep deleted: completed tasks with all they left, messages that answered no task, contacts on file, endpoint health and audit entries past their bounds.',
    registers: [this.registry],
  })

  readonly retentionBacklog = new Gauge({
    name: 'conversation_trigger_retention_backlog_age_seconds',
    help: 'How long the oldest history due for deletion has waited past its due time, as this process\'s sweep saw it before and after its last run (0: none waiting).',
    registers: [this.registry],
  })

  readonly #queueGauges = {
    tasksPending: this.#gauge('conversation_trigger_tasks_pending', 'Tasks waiting for their next attempt, due or not.'),
    tasksDue: this.#gauge('conversation_trigger_tasks_due', 'Pending tasks whose time has come.'),
    tasksInProgress: this.#gauge('conversation_trigger_tasks_in_progress', 'Tasks with an attempt running.'),
    tasksOldestDue: this.#gauge('conversation_trigger_tasks_oldest_due_age_seconds', 'How long the longest-waiting due task has been due, a paused campaign\'s included (0: none due).'),
    tasksOldestDispatchable: this.#gauge(
      'conversation_trigger_tasks_oldest_dispatchable_age_seconds',
      'How long the longest-waiting due task of a campaign not paused has been due (0: none due): the dispatchers\' lag, unless a campaign at its max_concurrent holds its tasks back.',
    ),
    interactionsRunning: this.#gauge('conversation_trigger_interactions_running', 'Attempts started and not yet finalized.'),
    deliveriesPending: this.#gauge('conversation_trigger_webhook_deliveries_pending', 'Webhook deliveries still to be made.'),
    deliveriesRetrying: this.#gauge('conversation_trigger_webhook_deliveries_retrying', 'Pending deliveries that have failed at least once.'),
    deliveriesOldestDue: this.#gauge('conversation_trigger_webhook_delivery_lag_seconds', 'How long the most overdue delivery has been due.'),
    endpointsDisabled: this.#gauge('conversation_trigger_webhook_endpoints_disabled', 'Endpoints the service disabled after a 410.'),
  }

  readonly #db: Database
  readonly #now: () => number
  readonly #queueReadIntervalMs: number
  readonly #legacyNames: boolean
  #lastRead: { at: number; reading: Promise<void> } | undefined

  /**
   * `legacyNames`: also serve each of the service's metrics under its name of
   * before METRIC_PREFIX (see {@link withLegacyNames}).
   */
  constructor(db: Database, now: () => number, options: { queueReadIntervalMs?: number | undefined; legacyNames?: boolean | undefined } = {}) {
    this.#db = db
    this.#now = now
    this.#queueReadIntervalMs = options.queueReadIntervalMs ?? QUEUE_READ_INTERVAL_MS
    this.#legacyNames = options.legacyNames ?? false
    collectDefaultMetrics({ register: this.registry })
    const pool = db.poolUse
    if (pool !== undefined) {
      new Gauge({
        name: 'conversation_trigger_db_pool_connections',
        help: 'The database pool\'s connections, by state (idle, busy), and the queries waiting for one (waiting).',
        labelNames: ['state'] as const,
        registers: [this.registry],
        collect() {
          const use = pool()
          this.set({ state: 'idle' }, use.idle)
          this.set({ state: 'busy' }, use.total - use.idle)
          this.set({ state: 'waiting' }, use.waiting)
        },
      })
    }
  }

  /**
   * Counts the tasks a transaction completed and the interactions it
   * finalized. Called once it has committed, never inside it: a transaction
   * tried again (a group commit rolled back, then retried item by item) would
   * count twice.
   */
  countCommitted(committed: { tasks?: readonly TaskCompletion[]; interactions?: readonly FinalizedInteraction[] }): void {
    for (const { task, outcome } of committed.tasks ?? []) this.#tasksCompleted.inc({ channel: task.campaign.channel, outcome })
    for (const { provider, channel, outcome } of committed.interactions ?? []) this.#interactionsFinalized.inc({ provider, channel, outcome })
  }

  /** The metrics in Prometheus's text format, with the queues read from the database unless read within the interval. */
  async text(): Promise<string> {
    // The interval on the process's own monotonic clock: scrapes come in real time, whatever the service's clock says.
    const at = performance.now()
    if (this.#lastRead === undefined || at - this.#lastRead.at >= this.#queueReadIntervalMs) {
      this.#lastRead = { at, reading: this.#readQueues(this.#now()) }
    }
    try {
      await this.#lastRead.reading
    } catch (error) {
      // The scrape fails, as Prometheus sees and alerts on, rather than answer stale gauges; the next one reads again.
      this.#lastRead = undefined
      throw error
    }
    const text = await this.registry.metrics()
    return this.#legacyNames ? withLegacyNames(text) : text
  }

  get contentType(): string {
    return this.registry.contentType
  }

  async #readQueues(now: number): Promise<void> {
    const [depths, disabled] = await Promise.all([queueDepths(this.#db, now), disabledEndpointCount(this.#db)])
    const ageS = (iso: string | null) => (iso === null ? 0 : Math.max(0, (now - Date.parse(iso)) / 1000))
    const gauges = this.#queueGauges
    gauges.tasksPending.set(depths.tasks.pending)
    gauges.tasksDue.set(depths.tasks.due)
    gauges.tasksInProgress.set(depths.tasks.inProgress)
    gauges.tasksOldestDue.set(ageS(depths.tasks.oldestDueAt))
    gauges.tasksOldestDispatchable.set(ageS(depths.tasks.oldestDispatchableAt))
    gauges.interactionsRunning.set(depths.interactions.running)
    gauges.deliveriesPending.set(depths.deliveries.pending)
    gauges.deliveriesRetrying.set(depths.deliveries.retrying)
    gauges.deliveriesOldestDue.set(ageS(depths.deliveries.oldestDueAt))
    gauges.endpointsDisabled.set(disabled)
  }

  #gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] })
  }
}

/**
 * The text with a copy of each of the service's metrics under its name of
 * before METRIC_PREFIX, its help marked deprecated: for one release, so that
 * dashboards and alerts written for the old names go on working while they
 * are moved (METRICS_LEGACY_NAMES=false leaves the copies out). Copied from
 * the text rather than counted twice (prom-client has no aliases), so the
 * two names can never differ.
 *
 * Served by default for that release, since they cost little: measured on
 * a scrape of a service that had answered 17 routes with several statuses
 * each and dispatched 20 tasks (863 lines, 91 KB), the copies make it 162 KB
 * (+78 %, the request histogram most of it) and take 0.1 to 0.2 ms of a
 * scrape that took 9 to 18 ms (the queue read from PGlite included).
 * Prometheus stores the service's series twice while they are served.
 */
function withLegacyNames(text: string): string {
  const legacy: string[] = []
  let copying = false
  for (const line of text.split('\n')) {
    // Each family's lines run together from its # HELP line: copied whole, or not at all.
    const help = /^# HELP (\S+) (.*)$/.exec(line)
    if (help !== null) {
      const oldName = help[1]!.slice(METRIC_PREFIX.length)
      copying = help[1]!.startsWith(METRIC_PREFIX) && LEGACY_FAMILIES.has(oldName)
      if (copying) legacy.push(`# HELP ${oldName} Deprecated: renamed ${help[1]}; this name is gone in the next release. ${help[2]}`)
    } else if (copying && line !== '') {
      legacy.push(line.startsWith('# TYPE ') ? `# TYPE ${line.slice(`# TYPE ${METRIC_PREFIX}`.length)}` : line.slice(METRIC_PREFIX.length))
    }
  }
  return `${text}${legacy.join('\n')}\n`
}

/** The families served before METRIC_PREFIX, by their names of then; those added since have no old name. */
const LEGACY_FAMILIES = new Set([
  'http_request_duration_seconds',
  'triggers_total',
  'group_commit_items',
  'task_dispatch_lag_seconds',
  'provider_errors_total',
  'tasks_completed_total',
  'interactions_finalized_total',
  'rate_limited_requests_total',
  'webhook_delivery_attempt_duration_seconds',
  'retention_deleted_rows_total',
  'retention_backlog_age_seconds',
  'tasks_pending',
  'tasks_due',
  'tasks_in_progress',
  'tasks_oldest_due_age_seconds',
  'interactions_running',
  'webhook_deliveries_pending',
  'webhook_deliveries_retrying',
  'webhook_delivery_lag_seconds',
  'webhook_endpoints_disabled',
  'db_pool_connections',
])
