/**
 * A year of history, for measuring the service on a database that has been
 * in use for one: reads (an organization's newest tasks, a person's tasks by
 * phone number or by the client's id, a task's page, event pages) and the
 * retention sweep cost what they cost on millions of rows, not on the few
 * thousand a benchmark run writes before it measures.
 *
 * Built in minutes, not in the days it would take the service to write it:
 *
 * 1. Template rows, made by the real service. On the empty database given,
 *    an API process (`serve --no-workers`) and a worker process (`worker`)
 *    apply the migrations; one organization is provisioned as the end-to-end
 *    bench does it, with a webhook endpoint on a receiver here that answers
 *    200 to task.completed and interaction.finalized, and `templateTriggers`
 *    distinct people are triggered (bench/bodies.ts). The mix, by trigger
 *    index (templateKind): most are plain calls of CAMPAIGN that complete at
 *    once (outcome reached, no result); one in 20 goes to RESULTS_CAMPAIGN,
 *    whose calls report the screening result (a 20-turn transcript); one in
 *    50 is in test mode; one in 50 is sent with a not_before a day ahead and
 *    cancelled by its ids (outcome cancelled, no interaction). Once every
 *    webhook has arrived the processes are stopped, and nothing is left
 *    pending.
 * 2. Copies, made by SQL (INSERT ... SELECT, many copies a statement). Each
 *    organization made (the big one, then the others) gets its own copy of
 *    the template organization's setup rows (organization, API key,
 *    campaigns, endpoint, audit log) and as many copies of its pipeline rows
 *    (triggers, tasks, contacts, interactions, events, deliveries...) as its
 *    triggers take. Copy c of an organization is placed at its point of the
 *    timeline, its copies evenly spread over `days` days ending a day ago,
 *    each shifted by a whole number of hours (so that hourly and daily counts
 *    move with their rows exactly). The copies are written oldest first,
 *    batch by batch, each batch one transaction, so that ids, heap order and
 *    events' txid follow time as the service's do.
 *
 * The copying knows the schema only as it finds it: every table and column
 * is read from information_schema when it runs, and rules apply by type,
 * with a few by name (RULES), so that tables and columns added by later
 * migrations are copied too. By type: a timestamp moves by the copy's shift;
 * in text, arrays and JSON, every token the template's rows hold is
 * rewritten (TOKENS): an id (`trg_` + 10 characters of time + 16 random)
 * gets the copy's time and a random part of its own (kept in order within a
 * millisecond), an instant moves with its row, a phone number becomes the
 * copy's own, and a client's id value gets `-c` (its copy) appended, as the
 * contact directory's row for it does. Ids of an organization's setup rows
 * (org, key, cmp, whe) are remapped per organization, every other kind per
 * copy. A table keyed by nothing of a copy's own (a counter by endpoint and
 * hour, by organization and day) is added to when copies share a key. A
 * table the template has no rows in is left alone; one not known to be
 * either setup, pipeline or state to leave alone (SKIPPED) is taken to be
 * pipeline. Bytes are copied as they are: an event's body is deflated
 * (store/eventBodies.ts), opaque to SQL, so a copy's events name the
 * template's task and ids inside their bodies while their columns (task_id,
 * interaction_id) name the copy's; no read the growth benchmark measures
 * opens a body. Before anything is written, rows of the first and of the last
 * copy of every table are made and checked to hold no id of the template.
 *
 * Measured on PostgreSQL 15 with 2 CPUs (indexes kept, as the service's
 * writes keep them): a million triggers for one organization and 10,000 for
 * each of 99 others (1,992,000 with the template's; 14 GB) took 12.5 minutes,
 * 10 s for the template, 10.4 min of copies (3,300 triggers a second) and
 * 1.8 min of VACUUM (ANALYZE); 18 minutes on the same machine busy with
 * another benchmark.
 *
 * The template organization stays, as one more small organization (of the
 * hour the history was built). The endpoints keep the template receiver's
 * URL, which nothing listens on once the build is over: nothing is pending,
 * and a bench that sends webhooks to a history's organization registers its
 * own receiver. The phone hash key's fingerprint is forgotten at the end
 * (the history holds no digest made with it), so that the service may be
 * started on the history with any PHONE_HASH_KEY.
 *
 * `npx tsx bench/history.ts --database-url postgres://.../db [--organizations 100]
 * [--big 1000000] [--others 10000] [--days 360] [--template 2000]` builds one
 * and prints its summary (JSON) on standard output.
 */
import { mkdtemp } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { normalizePhone } from '../src/domain/contact.ts'
import { ID_PREFIXES } from '../src/domain/ids.ts'
import { generateApiKey, KEY_PREFIX_LENGTH } from '../src/services/credentials.ts'
import { generateBodies } from './bodies.ts'
import { hasExited, stopChild } from './children.ts'
import { CAMPAIGN, EVENT_TYPES, type EventType, RESULTS_CAMPAIGN, startReceiver } from './endToEnd.ts'
import { OPERATOR_TOKEN, PHONE_HASH_KEY, provision, type Server, sleep, startServer, tail, waitUntilReady, withClient } from './harness.ts'

export interface HistoryOptions {
  /** An empty database: the service's migrations make its tables. */
  databaseUrl: string
  /** Organizations made from the template: the big one and `organizations - 1` others. */
  organizations: number
  /** At least this many triggers for the big organization (whole copies of the template). */
  bigOrganizationTriggers: number
  /** At least this many for each of the others. */
  otherOrganizationTriggers: number
  /** The history's length: its copies are spread over this many days, ending a day ago. */
  days: number
  /** Triggers the service records for the template. */
  templateTriggers?: number
  /** Where the service's logs go; a new temporary directory if left out. */
  workDir?: string
  log?: (message: string) => void
}

export interface HistoryOrganization {
  id: string
  /** An API key of its own (the template key's scopes). */
  apiKey: string
  triggers: number
}

export interface HistorySummary {
  template: {
    orgId: string
    triggers: number
    /** How many of its triggers were of each kind (see templateKind). */
    mix: Record<TemplateKind, number>
    routingKeys: string[]
  }
  bigOrganization: HistoryOrganization & {
    campaigns: { id: string; routingKey: string; channel: string }[]
    /** Tasks to read, from the oldest to the newest. */
    taskIds: string[]
    /** Ids its triggers carried (one a trigger, not in test mode), oldest to newest. */
    externalIds: { source: string; type: string; value: string }[]
    /** Numbers its tasks reach (valid, so that a query by them is accepted), with how many tasks reach each. */
    phones: { phone: string; tasks: number }[]
  }
  /** Every organization made, the big one first. */
  organizations: HistoryOrganization[]
  rows: Record<string, number>
  /** Rows of each table per trigger of the history (the template's included). */
  rowsPerTrigger: Record<string, number>
  seconds: { template: number; copies: number; vacuumAnalyze: number; total: number }
  databaseBytes: number
}

export type TemplateKind = 'plain' | 'results' | 'test' | 'cancelled'

/**
 * What the template's trigger of this index is: one in 20 a call that
 * reports a result, one in 50 in test mode, one in 50 cancelled before it is
 * due, the rest plain calls.
 */
function templateKind(index: number): TemplateKind {
  if (index % 20 === 1) return 'results'
  if (index % 50 === 2) return 'test'
  if (index % 50 === 3) return 'cancelled'
  return 'plain'
}

const DEFAULT_TEMPLATE_TRIGGERS = 2_000
/** Concurrent clients posting the template's triggers. */
const TEMPLATE_CLIENTS = 16
/** How long the template's webhooks may take to arrive. */
const TEMPLATE_TIMEOUT_MS = 300_000
/** How far ahead a cancelled trigger's not_before is: it is still pending when cancelled. */
const CANCELLED_NOT_BEFORE_MS = 86_400_000
/**
 * How long the service runs on once every webhook has arrived: its workers'
 * rounds that follow finished work (the daily counts are moved every
 * second) run on the template's, as they would in a service that went on.
 */
const SETTLE_MS = 3_000
/** The most ids POST /api/v2/tasks/cancel takes. */
const CANCEL_IDS_PER_REQUEST = 100
/** Triggers' worth of copies written per transaction. */
const BATCH_TRIGGERS = 50_000
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** Rows of a copy searched for the template's ids before anything is written. */
const CHECKED_ROWS = 1_000
/** The big organization's triggers given as samples in the summary. */
const SAMPLES = 10

/**
 * Tables that hold no history: the migrations' own, the service's key
 * fingerprint, the rate limits' buckets (state, refilled in a second), and
 * idempotency keys (kept 24 hours).
 */
const SKIPPED = new Set(['schema_migrations', 'service_keys', 'rate_buckets', 'idempotency_keys'])
/** An organization's setup: one copy per organization made, at its start. Every other table of the template is the pipeline's, copied per copy. */
const SETUP = new Set(['organizations', 'api_keys', 'campaigns', 'webhook_endpoints', 'sources', 'suppressions', 'audit_log'])

/**
 * Columns with rules of their own, as SQL over the template row `t` and the
 * copy `s` (history_copies: its organization's setup rows take its first
 * copy). DELIVERY_ID stands for the copy's delivery id of a template's.
 */
const RULES: Record<string, Record<string, string>> = {
  organizations: {
    // Where the retention sweep stands, in the template's events: a new organization has not been swept.
    retention_swept_txid: 'NULL',
    retention_swept_event: 'NULL',
  },
  // A key of its own (made in history_keys), so that each organization's key works and prefixes stay unique.
  api_keys: {
    prefix: '(SELECT k.prefix FROM history_keys k WHERE k.org_no = s.org_no AND k.template_prefix = t.prefix)',
    key_hash: '(SELECT k.hash FROM history_keys k WHERE k.org_no = s.org_no AND k.template_prefix = t.prefix)',
  },
  webhook_endpoints: { secret: `'whsec_' || encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'base64')` },
  // The client's id values, as TOKENS rewrites them in JSON.
  contact_ids: { value: `t.value || '-' || s.c` },
  provider_messages: { message_id: `t.message_id || '-' || s.k` },
  // deliveries.id is an identity: each copy's are the template's moved past every earlier copy's.
  deliveries: { id: 'DELIVERY_ID(t.id)' },
  delivery_attempts: { delivery_id: 'DELIVERY_ID(t.delivery_id)' },
  events: { delivery_ids: 'ARRAY(SELECT DELIVERY_ID(d) FROM unnest(t.delivery_ids) WITH ORDINALITY AS u(d, n) ORDER BY n)' },
}

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const ID_BODY = '[0-9a-hjkmnp-tv-z]{26}'

/**
 * The tokens rewritten in text, arrays and JSON, each a capturing group of
 * one regular expression, in this order: an id of any kind the service makes;
 * an ISO 8601 instant; an E.164 number; the value of a client's id
 * ({source, type, value}, as jsonb writes it); an API key's prefix (as the
 * audit log names a key issued).
 */
const TOKENS = [
  `(?<![0-9a-z])((?:${Object.values(ID_PREFIXES).join('|')})_${ID_BODY})(?![0-9a-z])`,
  '([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2}))',
  '(?<![0-9A-Za-z])(\\+[1-9][0-9]{6,14})(?![0-9])',
  '(?<=\\{"type": "(?:[^"\\\\]|\\\\.)*", "value": ")((?:[^"\\\\]|\\\\.)+)(?=", "source": ")',
  `(?<![0-9a-z])(ctk_[0-9a-z]{${KEY_PREFIX_LENGTH - 'ctk_'.length}})(?![0-9a-z])`,
].join('|')
const ID_TOKEN = `(?:${Object.values(ID_PREFIXES).join('|')})_${ID_BODY}`

/**
 * The SQL functions the copies are made with, in pg_temp (the session's own),
 * dropped once they are made. Each is inlined into the statements that call it
 * (an SQL function that is not runs as a query of its own at every call,
 * several times slower): so each names an argument more than once only where
 * its callers pass a column or a sum of two.
 */
const FUNCTIONS = {
  // The milliseconds in an id's first 10 characters after its prefix (<< and | bind alike: each shift in brackets).
  history_ms: `(id text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT ${Array.from({ length: 10 }, (_, i) => `((strpos('${ALPHABET}', substr(id, length(id) - ${25 - i}, 1)) - 1)::bigint << ${5 * (9 - i)})`).join(' | ')}
   $$`,
  // Milliseconds as an id's 10 characters of Crockford base32 (src/domain/ids.ts), each looked up in an array of
  // single bytes ("char"): substr() counts its way through a UTF-8 text, and was a tenth of the copying's time.
  history_base32: `(ms bigint) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT ${Array.from({ length: 10 }, (_, i) => `('{${[...ALPHABET].join(',')}}'::"char"[])[((ms >> ${5 * (9 - i)}) & 31)::int + 1]::text`).join(' || ')}
   $$`,
  // An instant moved by whole hours: its minutes, seconds, fraction and offset stay. STABLE, as the casts and to_char
  // it calls are: declared IMMUTABLE, it would not be inlined.
  history_instant: `(instant text, hours int) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
     SELECT to_char((replace(left(instant, 13), 'T', ' ') || ':00')::timestamp + hours * interval '1 hour', 'YYYY-MM-DD"T"HH24') || substr(instant, 14)
   $$`,
  // The copy's number: the three digits before the last four move on by the copy's index (the template's numbers of a
  // country differ in their last four), so that a number is reached by the few tasks of one copy that reach it in the
  // template. Digits from 200 stay from 200, where a North American number's exchange is, which starts at 2; they come
  // round again after 800 copies (1,000 below 200). So moved, the template's 642 numbers are valid in each of 995 copies
  // (libphonenumber, as the service checks a number it is asked for); moved through 0-999, 1 % of a history's were not.
  history_phone: `(phone text, k int) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
     SELECT CASE WHEN length(phone) < 10 THEN phone
                 ELSE left(phone, -7) || lpad(CASE WHEN substr(phone, length(phone) - 6, 3)::int >= 200
                                                   THEN 200 + (substr(phone, length(phone) - 6, 3)::int - 200 + k) % 800
                                                   ELSE (substr(phone, length(phone) - 6, 3)::int + k) % 1000 END::text, 3, '0') || right(phone, 4) END
   $$`,
}

/**
 * SQL: the copy's id of the template's id `id`, whose time is `ms`: its time
 * moved by the copy's shift, the first 4 of its 16 random characters the
 * copy's tag, the other 12 its own (so that ids made in one millisecond keep
 * their order). Scope 'o': an id of the organization's setup, as its
 * organization's copy has it.
 */
function copiedId(id: string, ms: string, scope: 'i' | 'o'): string {
  const [delta, tag] = scope === 'i' ? ['s.delta_ms', 's.tag'] : ['s.org_delta_ms', 's.org_tag']
  return `left(${id}, -26) || pg_temp.history_base32(${ms} + ${delta}) || ${tag} || right(${id}, 12)`
}

/** SQL: a text of the template (its parts, tokens' kinds, values and ids' times, from tokenize) with every token rewritten for the copy. */
function filled(column: string): string {
  const [p, k, v, ms] = ['p', 'k', 'v', 'ms'].map((suffix) => `t.${ident(`${column}__${suffix}`)}`)
  // The parts outnumber the tokens by one: the last part comes with a NULL token, written as ''.
  return `(SELECT string_agg(u.part || coalesce(CASE u.kind
       WHEN 'i' THEN ${copiedId('u.val', 'u.ms', 'i')}
       WHEN 'o' THEN ${copiedId('u.val', 'u.ms', 'o')}
       WHEN 't' THEN pg_temp.history_instant(u.val, s.hours)
       WHEN 'p' THEN pg_temp.history_phone(u.val, s.k)
       WHEN 'x' THEN u.val || '-' || s.c
       WHEN 'a' THEN (SELECT h.prefix FROM history_keys h WHERE h.org_no = s.org_no AND h.template_prefix = u.val) END, ''), '' ORDER BY u.n)
     FROM unnest(${p}, ${k}, ${v}, ${ms}) WITH ORDINALITY AS u(part, kind, val, ms, n))`
}

export async function buildHistory(options: HistoryOptions): Promise<HistorySummary> {
  const log = options.log ?? (() => {})
  const started = performance.now()
  const templateTriggers = options.templateTriggers ?? DEFAULT_TEMPLATE_TRIGGERS
  if (options.organizations < 1) throw new Error('organizations must be at least 1')
  const client = new pg.Client({ connectionString: options.databaseUrl })
  await client.connect()
  try {
    const tables = await client.query(`SELECT 1 FROM pg_tables WHERE schemaname = 'public' LIMIT 1`)
    if (tables.rows.length > 0) throw new Error(`the database ${options.databaseUrl} is not empty: the history is built on an empty one`)
    const workDir = options.workDir ?? (await mkdtemp(path.join(os.tmpdir(), 'history-')))
    log(`template: ${templateTriggers} triggers through the service (logs in ${workDir})`)
    const template = await makeTemplate(options.databaseUrl, templateTriggers, workDir, log)
    const templateSeconds = (performance.now() - started) / 1000
    log(`template: made in ${templateSeconds.toFixed(1)} s`)

    const copiesStarted = performance.now()
    // No commit waits for its WAL flush; no JIT, which made the copying statements ten times slower; a batch's rows
    // sorted in memory (the events of one took a quarter longer sorted on disk).
    await client.query('SET synchronous_commit = off')
    await client.query('SET jit = off')
    await client.query(`SET work_mem = '256MB'`)
    const copier = await Copier.prepare(client, template, options, log)
    const organizations = await copier.copy()
    const copiesSeconds = (performance.now() - copiesStarted) / 1000
    log(`copies: written in ${copiesSeconds.toFixed(1)} s`)

    const vacuumStarted = performance.now()
    await client.query(`SET maintenance_work_mem = '1GB'`)
    await client.query('VACUUM (ANALYZE)')
    const vacuumSeconds = (performance.now() - vacuumStarted) / 1000
    log(`VACUUM (ANALYZE) in ${vacuumSeconds.toFixed(1)} s`)
    return await summarize(client, template, organizations, {
      template: templateSeconds,
      copies: copiesSeconds,
      vacuumAnalyze: vacuumSeconds,
      total: (performance.now() - started) / 1000,
    })
  } finally {
    await client.end()
  }
}

interface Template {
  orgId: string
  triggers: number
  mix: Record<TemplateKind, number>
  /** When the service's processes had stopped: the template's last instant. */
  endedAt: number
}

/** The template organization and its triggers, through the service, which is stopped once every webhook has arrived. */
async function makeTemplate(databaseUrl: string, count: number, workDir: string, log: (message: string) => void): Promise<Template> {
  const receiver = await startReceiver()
  const servers: Server[] = []
  try {
    const env = { DATABASE_URL: databaseUrl, OPERATOR_TOKEN, PHONE_HASH_KEY, LOG_LEVEL: 'warn', ALLOW_PRIVATE_WEBHOOK_URLS: 'true' }
    // The API process first: it applies the migrations before the worker starts on them.
    servers.push(await startServer('History API', ['dist/cli.js', 'serve', '--no-workers'], env, workDir))
    await waitUntilReady(servers[0]!, async () => (await fetch(`${servers[0]!.baseUrl}/readyz`)).status === 200)
    servers.push(await startServer('History worker', ['dist/cli.js', 'worker'], env, workDir))
    await waitUntilReady(servers[1]!, async () => (await fetch(`${servers[1]!.baseUrl}/readyz`)).status === 200)
    const api = servers[0]!.baseUrl
    const { orgId, apiKey } = await provision(api, [CAMPAIGN, RESULTS_CAMPAIGN], ['triggers:write', 'triggers:read', 'webhooks:manage'])
    const endpoint = await fetch(`${api}/api/v2/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: EVENT_TYPES }),
    })
    if (endpoint.status !== 201) throw new Error(`POST /api/v2/webhook-endpoints answered ${endpoint.status}: ${await endpoint.text()}`)

    const mix: Record<TemplateKind, number> = { plain: 0, results: 0, test: 0, cancelled: 0 }
    const toCancel: unknown[] = []
    const bodies = generateBodies(count).bodies.map((text, index) => {
      const kind = templateKind(index)
      mix[kind]++
      const body = JSON.parse(text)
      const campaign = kind === 'results' ? RESULTS_CAMPAIGN : CAMPAIGN
      body.campaign = campaign.routing_key
      if ('channel' in body) body.channel = campaign.channel
      if (kind === 'test') body.test_mode = true
      if (kind === 'cancelled') {
        body.not_before = new Date(Date.now() + CANCELLED_NOT_BEFORE_MS).toISOString()
        toCancel.push(body.ids[0])
      }
      return JSON.stringify(body)
    })
    // No X-Request-ID: the service names each request itself (req_...), as for a client that sends none.
    let next = 0
    const post = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!
        const answer = await fetch(`${api}/api/v2/triggers`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body,
        })
        if (answer.status !== 201) throw new Error(`POST /api/v2/triggers answered ${answer.status}: ${await answer.text()}\n${body}`)
        await answer.arrayBuffer()
      }
    }
    await Promise.all(Array.from({ length: TEMPLATE_CLIENTS }, post))
    for (let from = 0; from < toCancel.length; from += CANCEL_IDS_PER_REQUEST) {
      const answer = await fetch(`${api}/api/v2/tasks/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ids: toCancel.slice(from, from + CANCEL_IDS_PER_REQUEST) }),
      })
      const text = await answer.text()
      const cancelled = answer.status === 200 ? (JSON.parse(text).data as unknown[]).length : -1
      if (cancelled !== Math.min(CANCEL_IDS_PER_REQUEST, toCancel.length - from)) throw new Error(`POST /api/v2/tasks/cancel answered ${answer.status}: ${text}`)
    }
    // A task.completed for every trigger, an interaction.finalized for every one that was called.
    const expected: Record<EventType, number> = { 'task.completed': count, 'interaction.finalized': count - mix.cancelled }
    const deadline = Date.now() + TEMPLATE_TIMEOUT_MS
    while (EVENT_TYPES.some((type) => receiver.received(type) < expected[type])) {
      const exited = servers.find((server) => hasExited(server.child))
      if (exited !== undefined) throw new Error(`${exited.name} exited:\n${await tail(exited.logFile)}`)
      if (Date.now() > deadline) throw new Error(`the template's webhooks did not all arrive: ${EVENT_TYPES.map((type) => `${receiver.received(type)} ${type}`).join(', ')} of ${JSON.stringify(expected)}`)
      await sleep(100)
    }
    log(`template: ${count} triggers (${Object.entries(mix).map(([kind, n]) => `${n} ${kind}`).join(', ')}), every webhook received`)
    await sleep(SETTLE_MS)
    await Promise.all(servers.map((server) => stopChild(server.child)))
    await checkSettled(databaseUrl)
    return { orgId, triggers: count, mix, endedAt: Date.now() }
  } finally {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    await receiver.close()
  }
}

/** Refuses a template with anything still to do: a history's work is over. */
async function checkSettled(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ tasks: string; interactions: string; deliveries: string }>(
      `SELECT (SELECT count(*) FROM tasks WHERE status <> 'completed') AS tasks,
              (SELECT count(*) FROM interactions WHERE status <> 'finalized') AS interactions,
              (SELECT count(*) FROM deliveries WHERE status = 'pending') AS deliveries`,
    )
    const open = rows[0]!
    if (open.tasks !== '0' || open.interactions !== '0' || open.deliveries !== '0') {
      throw new Error(`the template is not settled: ${open.tasks} tasks, ${open.interactions} interactions, ${open.deliveries} deliveries still open`)
    }
  })
}

/** A column as information_schema describes it. */
interface Column {
  name: string
  /** What a text made of its value is cast back to. */
  type: string
  dataType: string
  identity: boolean
  hasDefault: boolean
}

/** How a text-like column of the template is copied, from the tokens its rows hold. */
type Rewrite =
  | { kind: 'none' }
  /** Every value is one id of a kind whose scope is the copy's ('i') or the organization's ('o'). */
  | { kind: 'id'; scope: 'i' | 'o' }
  /** Every value is one phone number. */
  | { kind: 'phone' }
  /** Tokens anywhere: the value is filled in again around them (filled). */
  | { kind: 'fill' }

interface Table {
  name: string
  columns: Column[]
  primaryKey: string[]
  /** The tables its foreign keys name: written before it. */
  references: string[]
  setup: boolean
  rows: number
  rewrites: Map<string, Rewrite>
}

/** One copy of the template: which organization, which of its copies, and how far it moves. */
interface Copy {
  orgNo: number
  c: number
  hours: number
}

/** The copying, from the template's rows as the service left them. */
class Copier {
  readonly #client: pg.Client
  readonly #tables: Table[]
  readonly #copies: Copy[]
  readonly #keys: string[][]
  readonly #log: (message: string) => void

  private constructor(client: pg.Client, tables: Table[], copies: Copy[], keys: string[][], log: (message: string) => void) {
    this.#client = client
    this.#tables = tables
    this.#copies = copies
    this.#keys = keys
    this.#log = log
  }

  static async prepare(client: pg.Client, template: Template, options: HistoryOptions, log: (message: string) => void): Promise<Copier> {
    const tables = await readTables(client)
    const copied = tables.filter((table) => table.rows > 0 && !SKIPPED.has(table.name))

    for (const [name, definition] of Object.entries(FUNCTIONS)) await client.query(`CREATE FUNCTION pg_temp.${name}${definition}`)
    // The template's rows, numbered in heap order (the order the service left them in), which each copy keeps.
    for (const table of copied) {
      await client.query(`CREATE TEMP TABLE ${ident(`history_tpl_${table.name}`)} AS SELECT row_number() OVER () AS history_n, * FROM ${ident(table.name)}`)
    }
    const orgPrefixes = await setupIdPrefixes(client, copied)
    await client.query('CREATE TEMP TABLE history_template_ids (id text PRIMARY KEY)')
    for (const table of copied) await tokenize(client, table, orgPrefixes)

    const copies = placeCopies(template, options, copied)
    // Each organization's keys, one for each of the template's, in its order.
    const prefixes = (await client.query<{ prefix: string }>('SELECT prefix FROM history_tpl_api_keys ORDER BY history_n')).rows.map((row) => row.prefix)
    const keys: string[][] = []
    await client.query('CREATE TEMP TABLE history_keys (org_no int, template_prefix text, prefix text, hash bytea, PRIMARY KEY (org_no, template_prefix))')
    for (let orgNo = 0; orgNo < options.organizations; orgNo++) {
      const made = prefixes.map(() => generateApiKey())
      keys.push(made.map((key) => key.key))
      await client.query('INSERT INTO history_keys SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bytea[])', [
        orgNo,
        prefixes,
        made.map((key) => key.prefix),
        made.map((key) => key.hash),
      ])
    }
    const copier = new Copier(client, copied, copies, keys, log)
    await copier.#writeCopies()
    return copier
  }

  /** history_copies: every copy, oldest first (k), with what its rows are rewritten with. */
  async #writeCopies(): Promise<void> {
    const triggersTpl = (await this.#client.query<{ at: Date }>('SELECT min(created_at) AS at FROM history_tpl_triggers')).rows[0]!.at
    const firstHours = new Map<number, number>()
    for (const copy of this.#copies) if (copy.c === 0) firstHours.set(copy.orgNo, copy.hours)
    const tag = (n: number) => Array.from({ length: 4 }, (_, i) => ALPHABET[Math.floor(n / 32 ** (3 - i)) % 32]).join('')
    // Dates (daily counts) move by the days the template's first trigger moves across.
    const days = (hours: number) => Math.round((utcDay(triggersTpl.getTime() + hours * HOUR_MS) - utcDay(triggersTpl.getTime())) / DAY_MS)
    await this.#client.query(`CREATE TEMP TABLE history_copies (
      k int PRIMARY KEY, org_no int NOT NULL, c int NOT NULL, hours int NOT NULL, days int NOT NULL, delta_ms bigint NOT NULL, tag text NOT NULL,
      org_delta_ms bigint NOT NULL, org_tag text NOT NULL)`)
    await this.#client.query(
      `INSERT INTO history_copies
       SELECT k - 1, org_no, c, hours, days, hours * ${HOUR_MS}::bigint, tag, org_hours * ${HOUR_MS}::bigint, org_tag
       FROM unnest($1::int[], $2::int[], $3::int[], $4::int[], $5::text[], $6::int[], $7::text[]) WITH ORDINALITY AS v(org_no, c, hours, days, tag, org_hours, org_tag, k)`,
      [
        this.#copies.map((copy) => copy.orgNo),
        this.#copies.map((copy) => copy.c),
        this.#copies.map((copy) => copy.hours),
        this.#copies.map((copy) => days(copy.hours)),
        this.#copies.map((_, k) => tag(k)),
        this.#copies.map((copy) => firstHours.get(copy.orgNo)!),
        this.#copies.map((copy) => tag(copy.orgNo)),
      ],
    )
  }

  /** Every copy, checked first; returns the organizations made. */
  async copy(): Promise<HistoryOrganization[]> {
    const delivery = await this.#deliveryIds()
    const statements = new Map(this.#tables.map((table) => [table.name, insertStatement(table, delivery)]))
    await this.#checkNoTemplateIds(statements)

    const setup = this.#tables.filter((table) => table.setup)
    await this.#client.query('BEGIN')
    for (const table of setup) await this.#client.query(statements.get(table.name)!.setup)
    await this.#client.query('COMMIT')
    this.#log(`copies: ${this.#keys.length} organizations set up`)

    const pipeline = this.#tables.filter((table) => !table.setup)
    const triggersPerCopy = this.#tables.find((table) => table.name === 'triggers')!.rows
    const perBatch = Math.max(1, Math.floor(BATCH_TRIGGERS / triggersPerCopy))
    const started = performance.now()
    for (let from = 0; from < this.#copies.length; from += perBatch) {
      const to = Math.min(from + perBatch, this.#copies.length)
      await this.#client.query('BEGIN')
      for (const table of pipeline) {
        const statement = statements.get(table.name)!
        if (statement.counter === undefined) {
          await this.#client.query(statement.batch, [from, to])
        } else {
          // A counter's copies may share a key (an hour, a day): added one copy at a time.
          for (let k = from; k < to; k++) await this.#client.query(statement.counter, [k])
        }
      }
      await this.#client.query('COMMIT')
      const seconds = (performance.now() - started) / 1000
      this.#log(`copies: ${to} of ${this.#copies.length} (${((to * triggersPerCopy) / seconds).toFixed(0)} triggers/s)`)
    }
    for (const table of this.#tables) {
      for (const column of table.columns.filter((candidate) => candidate.identity)) {
        await this.#client.query(`SELECT setval(pg_get_serial_sequence($1, $2), (SELECT max(${ident(column.name)}) FROM ${ident(table.name)}))`, [
          table.name,
          column.name,
        ])
      }
    }
    // No digest of a number was made with the template's key: the first process on the history keeps its own.
    const digests = await this.#client.query(`SELECT 1 FROM suppressions WHERE phone LIKE 'sha256:%' LIMIT 1`)
    if (digests.rows.length === 0) await this.#client.query(`DELETE FROM service_keys WHERE name = 'phone_hash'`)

    const orgIds = await this.#client.query<{ org_no: number; id: string }>(
      `SELECT s.org_no, ${copiedId('t.id', 'pg_temp.history_ms(t.id)', 'o')} AS id
       FROM history_copies s CROSS JOIN history_tpl_organizations t WHERE s.c = 0 ORDER BY s.org_no`,
    )
    await this.#client.query(
      `DROP TABLE history_template_ids, history_keys, history_copies, ${this.#tables.map((table) => ident(`history_tpl_${table.name}`)).join(', ')}`,
    )
    for (const name of Object.keys(FUNCTIONS)) await this.#client.query(`DROP FUNCTION pg_temp.${name}`)
    const triggers = this.#tables.find((table) => table.name === 'triggers')!.rows
    return orgIds.rows.map((row) => ({
      id: row.id,
      apiKey: this.#keys[row.org_no]![0]!,
      triggers: triggers * this.#copies.filter((copy) => copy.orgNo === row.org_no).length,
    }))
  }

  /** How the copies' delivery ids are made: the template's, moved past the template's and every earlier copy's. */
  async #deliveryIds(): Promise<{ min: string; max: string; span: string }> {
    const { rows } = await this.#client.query<{ min: string | null; max: string | null }>(
      this.#tables.some((table) => table.name === 'deliveries') ? 'SELECT min(id)::text AS min, max(id)::text AS max FROM deliveries' : 'SELECT NULL AS min, NULL AS max',
    )
    const min = rows[0]!.min ?? '0'
    const max = rows[0]!.max ?? '0'
    return { min, max, span: String(BigInt(max) - BigInt(min) + 1n) }
  }

  /**
   * Refuses copies that would hold an id of the template (its
   * organization's among them): CHECKED_ROWS rows of the first and of the
   * last copy of every table (and the setup rows) are made, not written, and
   * searched for one.
   */
  async #checkNoTemplateIds(statements: Map<string, Statements>): Promise<void> {
    const last = this.#copies.length - 1
    for (const table of this.#tables) {
      const statement = statements.get(table.name)!
      const probes = (table.setup ? [{ sql: statement.setupSelect, params: [] }] : [0, last].map((k) => ({ sql: statement.select, params: [k, k + 1] }))).map(
        (probe) => ({ ...probe, sql: `${probe.sql} LIMIT ${CHECKED_ROWS}` }),
      )
      for (const probe of probes) {
        const { rows } = await this.#client.query<{ id: string; cloned: string }>(
          `SELECT found.token[1] AS id, left(row_to_json(c)::text, 300) AS cloned
           FROM (${probe.sql}) c CROSS JOIN LATERAL regexp_matches(row_to_json(c)::text, '${ID_TOKEN}', 'g') AS found(token)
           WHERE found.token[1] IN (SELECT id FROM history_template_ids) LIMIT 1`,
          probe.params,
        )
        if (rows.length > 0) throw new Error(`a copy of a row of ${table.name} holds the template's id ${rows[0]!.id}: ${rows[0]!.cloned}`)
      }
    }
  }
}

/** The public schema's tables, their columns and primary keys, and how many rows each holds. */
async function readTables(client: pg.Client): Promise<Table[]> {
  const columns = await client.query<{
    table_name: string
    column_name: string
    data_type: string
    udt_name: string
    is_identity: string
    column_default: string | null
  }>(
    `SELECT c.table_name, c.column_name, c.data_type, c.udt_name, c.is_identity, c.column_default
     FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
     WHERE c.table_schema = 'public' AND c.is_generated = 'NEVER'
     ORDER BY c.table_name, c.ordinal_position`,
  )
  const keys = await client.query<{ table_name: string; column_name: string }>(
    `SELECT k.table_name, k.column_name
     FROM information_schema.table_constraints tc
     JOIN information_schema.key_column_usage k ON k.constraint_schema = tc.constraint_schema AND k.constraint_name = tc.constraint_name
     WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY'
     ORDER BY k.table_name, k.ordinal_position`,
  )
  const references = await client.query<{ table_name: string; referenced: string }>(
    `SELECT DISTINCT tc.table_name, u.table_name AS referenced
     FROM information_schema.table_constraints tc
     JOIN information_schema.constraint_column_usage u ON u.constraint_schema = tc.constraint_schema AND u.constraint_name = tc.constraint_name
     WHERE tc.table_schema = 'public' AND tc.constraint_type = 'FOREIGN KEY' AND u.table_name <> tc.table_name`,
  )
  const tables = new Map<string, Table>()
  for (const row of columns.rows) {
    let table = tables.get(row.table_name)
    if (table === undefined) {
      table = { name: row.table_name, columns: [], primaryKey: [], references: [], setup: SETUP.has(row.table_name), rows: 0, rewrites: new Map() }
      tables.set(row.table_name, table)
    }
    table.columns.push({
      name: row.column_name,
      type: row.data_type === 'ARRAY' ? `${row.udt_name.slice(1)}[]` : row.udt_name,
      dataType: row.data_type === 'ARRAY' ? row.udt_name : row.data_type,
      identity: row.is_identity === 'YES',
      hasDefault: row.column_default !== null,
    })
  }
  for (const row of keys.rows) tables.get(row.table_name)?.primaryKey.push(row.column_name)
  for (const row of references.rows) tables.get(row.table_name)?.references.push(row.referenced)
  for (const table of tables.values()) {
    table.rows = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(table.name)}`)).rows[0]!.n)
  }
  // Each after the tables it references.
  const ordered: Table[] = []
  const visit = (table: Table) => {
    if (ordered.includes(table)) return
    for (const name of table.references) visit(tables.get(name)!)
    ordered.push(table)
  }
  for (const table of tables.values()) visit(table)
  return ordered
}

/** The prefixes of the ids of the setup tables' rows: ids remapped per organization rather than per copy. */
async function setupIdPrefixes(client: pg.Client, tables: Table[]): Promise<string[]> {
  const prefixes = new Set<string>()
  for (const table of tables.filter((candidate) => candidate.setup && candidate.columns.some((column) => column.name === 'id' && column.dataType === 'text'))) {
    const { rows } = await client.query<{ prefix: string }>(`SELECT DISTINCT split_part(id, '_', 1) AS prefix FROM ${ident(`history_tpl_${table.name}`)}`)
    for (const row of rows) prefixes.add(row.prefix)
  }
  return [...prefixes]
}

const TEXT_TYPES = new Set(['text', 'character varying', 'jsonb', 'json', '_text', '_varchar', '_jsonb', '_json'])

/**
 * Cuts each text-like value of the template's table into the parts around
 * its tokens, their kinds ('i' an id of the copy's, 'o' of the
 * organization's, 't' an instant, 'p' a number, 'x' a client's id value, 'a'
 * a key prefix), their values and, for ids, their times (columns
 * `<name>__p`, `__k`, `__v`, `__ms`); decides how each column is copied, and
 * records the ids met.
 */
async function tokenize(client: pg.Client, table: Table, orgPrefixes: string[]): Promise<void> {
  const tpl = ident(`history_tpl_${table.name}`)
  for (const column of table.columns.filter((candidate) => TEXT_TYPES.has(candidate.dataType) && RULES[table.name]?.[candidate.name] === undefined)) {
    const [p, k, v, ms] = ['p', 'k', 'v', 'ms'].map((suffix) => ident(`${column.name}__${suffix}`))
    const text = `${ident(column.name)}::text`
    await client.query(`ALTER TABLE ${tpl} ADD COLUMN ${p} text[], ADD COLUMN ${k} text[], ADD COLUMN ${v} text[], ADD COLUMN ${ms} bigint[]`)
    await client.query(
      `UPDATE ${tpl} SET ${p} = regexp_split_to_array(${text}, $1), (${k}, ${v}, ${ms}) = (
         SELECT array_agg(tokens.kind ORDER BY tokens.n), array_agg(tokens.val ORDER BY tokens.n),
                array_agg(CASE WHEN tokens.kind IN ('i', 'o') THEN pg_temp.history_ms(tokens.val) END ORDER BY tokens.n)
         FROM (
           SELECT r.n, coalesce(r.m[1], r.m[2], r.m[3], r.m[4], r.m[5]) AS val,
                  CASE WHEN r.m[1] IS NOT NULL THEN CASE WHEN split_part(r.m[1], '_', 1) = ANY($2::text[]) THEN 'o' ELSE 'i' END
                       WHEN r.m[2] IS NOT NULL THEN 't' WHEN r.m[3] IS NOT NULL THEN 'p' WHEN r.m[4] IS NOT NULL THEN 'x' ELSE 'a' END AS kind
           FROM regexp_matches(${text}, $1, 'g') WITH ORDINALITY AS r(m, n)) tokens)
       WHERE ${text} ~ $1`,
      [TOKENS, orgPrefixes],
    )
    const { rows } = await client.query<{ tokened: string; values: string; misaligned: string; whole: string; kinds: string[] | null }>(
      `SELECT count(${v}) AS tokened, count(${ident(column.name)}) AS values,
              count(*) FILTER (WHERE cardinality(${p}) <> cardinality(${v}) + 1) AS misaligned,
              count(*) FILTER (WHERE ${p} = '{"",""}') AS whole,
              (SELECT array_agg(DISTINCT u.kind) FROM ${tpl} CROSS JOIN LATERAL unnest(${k}) AS u(kind)) AS kinds
       FROM ${tpl}`,
    )
    const found = rows[0]!
    if (found.misaligned !== '0') throw new Error(`${table.name}.${column.name}: tokens and the text around them do not line up`)
    const kinds = found.kinds ?? []
    const whole = found.whole === found.values && kinds.length === 1 ? kinds[0] : undefined
    const rewrite: Rewrite =
      found.tokened === '0' ? { kind: 'none' } : whole === 'i' || whole === 'o' ? { kind: 'id', scope: whole } : whole === 'p' ? { kind: 'phone' } : { kind: 'fill' }
    table.rewrites.set(column.name, rewrite)
    if (rewrite.kind === 'none') {
      await client.query(`ALTER TABLE ${tpl} DROP COLUMN ${p}, DROP COLUMN ${k}, DROP COLUMN ${v}, DROP COLUMN ${ms}`)
      continue
    }
    await client.query(
      `INSERT INTO history_template_ids
       SELECT DISTINCT u.val FROM ${tpl} CROSS JOIN LATERAL unnest(${k}, ${v}) AS u(kind, val) WHERE u.kind IN ('i', 'o')
       ON CONFLICT DO NOTHING`,
    )
  }
}

/**
 * Where each organization's copies go: its copies evenly spread over the
 * history, the last one ending a day ago (the big organization's), the
 * others' an hour earlier each, so that organizations do not all move at
 * once; whole hours, rounded down. Numbered oldest first.
 */
function placeCopies(template: Template, options: HistoryOptions, tables: Table[]): Copy[] {
  const triggers = tables.find((table) => table.name === 'triggers')?.rows ?? 0
  if (triggers === 0) throw new Error('the template has no triggers')
  const end = Date.now() - DAY_MS
  const span = options.days * DAY_MS
  const copies: Copy[] = []
  for (let orgNo = 0; orgNo < options.organizations; orgNo++) {
    const wanted = orgNo === 0 ? options.bigOrganizationTriggers : options.otherOrganizationTriggers
    const count = Math.max(1, Math.ceil(wanted / triggers))
    const slot = span / count
    // Copies move by whole hours: an organization's each by hours of its own.
    if (slot < HOUR_MS) throw new Error(`${count} copies of the template in ${options.days} days are less than an hour apart: make the template larger`)
    for (let c = 0; c < count; c++) {
      const at = end - (count - 1 - c) * slot - orgNo * HOUR_MS
      copies.push({ orgNo, c, hours: Math.floor((at - template.endedAt) / HOUR_MS) })
    }
  }
  return copies.sort((a, b) => a.hours - b.hours || a.orgNo - b.orgNo || a.c - b.c)
}

interface Statements {
  /** The copies k in [$1, $2), as rows. */
  select: string
  /** Those copies, written. */
  batch: string
  /** For a counter table: copy $1 written, added to the rows it shares a key with. */
  counter: string | undefined
  /** For a setup table: every organization's rows. */
  setupSelect: string
  setup: string
}

/** The statements that copy a table: its columns as information_schema gave them, each by its rule. */
function insertStatement(table: Table, delivery: { min: string; max: string; span: string }): Statements {
  const tpl = ident(`history_tpl_${table.name}`)
  const deliveryId = (value: string) => `(${value} - ${delivery.min} + ${delivery.max} + 1 + s.k::bigint * ${delivery.span})`
  const targets: string[] = []
  const values: string[] = []
  let overriding = false
  for (const column of table.columns) {
    const name = ident(column.name)
    const rule = RULES[table.name]?.[column.name]
    let value: string
    if (rule !== undefined) {
      value = rule.replace(/DELIVERY_ID\(([^()]*)\)/g, (_, inner: string) => deliveryId(inner))
      if (column.identity) overriding = true
    } else if (column.identity) {
      continue
    } else if (column.dataType === 'xid8') {
      // The transaction that writes the copy (events.txid), so that (txid, id) follows time; NULL for one that names another.
      if (column.hasDefault) continue
      value = 'NULL'
    } else if (column.dataType === 'timestamp with time zone' || column.dataType === 'timestamp without time zone') {
      value = `t.${name} + s.hours * interval '1 hour'`
    } else if (column.dataType === 'date') {
      value = `t.${name} + s.days`
    } else {
      const rewrite = table.rewrites.get(column.name) ?? { kind: 'none' }
      if (rewrite.kind === 'none') value = `t.${name}`
      else if (rewrite.kind === 'id') value = copiedId(`t.${name}`, `t.${ident(`${column.name}__ms`)}[1]`, rewrite.scope)
      else if (rewrite.kind === 'phone') value = `pg_temp.history_phone(t.${name}, s.k)`
      else value = `CASE WHEN t.${ident(`${column.name}__v`)} IS NULL THEN t.${name} ELSE ${filled(column.name)}::${column.type} END`
    }
    targets.push(name)
    values.push(value)
  }
  const into = `INSERT INTO ${ident(table.name)} AS x (${targets.join(', ')}) ${overriding ? 'OVERRIDING SYSTEM VALUE ' : ''}`
  const select = `SELECT ${values.map((value, index) => `${value} AS ${targets[index]}`).join(', ')}
    FROM history_copies s CROSS JOIN ${tpl} t`
  const copies = `${select} WHERE s.k >= $1 AND s.k < $2`
  const setupSelect = `${select} WHERE s.c = 0`
  return {
    select: copies,
    batch: `${into}${copies} ORDER BY s.k, t.history_n`,
    counter: isCounter(table) ? `${into}${select} WHERE s.k = $1 ${onConflictAdding(table)}` : undefined,
    setupSelect,
    setup: `${into}${setupSelect} ORDER BY s.org_delta_ms, s.org_no, t.history_n`,
  }
}

/**
 * A table whose primary key holds nothing of a copy's own (a count by
 * endpoint and hour, by organization and day): copies of one organization
 * may meet on a key, where their counts add up.
 */
function isCounter(table: Table): boolean {
  if (table.setup || table.primaryKey.length === 0) return false
  return table.primaryKey.every((name) => {
    const rewrite = table.rewrites.get(name)
    const identity = table.columns.some((column) => column.name === name && column.identity)
    return !identity && RULES[table.name]?.[name] === undefined && (rewrite === undefined || rewrite.kind === 'none' || (rewrite.kind === 'id' && rewrite.scope === 'o'))
  })
}

/** A counter's copy meeting a row: numbers add up (a *_max keeps the greater, a *_min the lesser, arrays of numbers add up element by element). */
function onConflictAdding(table: Table): string {
  const numbers = new Set(['smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision'])
  const arrays = new Set(['_int2', '_int4', '_int8', '_numeric', '_float4', '_float8'])
  const sets: string[] = []
  for (const column of table.columns.filter((candidate) => !table.primaryKey.includes(candidate.name))) {
    const name = ident(column.name)
    if (numbers.has(column.dataType)) {
      if (column.name.endsWith('_max')) sets.push(`${name} = greatest(x.${name}, excluded.${name})`)
      else if (column.name.endsWith('_min')) sets.push(`${name} = least(x.${name}, excluded.${name})`)
      else sets.push(`${name} = x.${name} + excluded.${name}`)
    } else if (arrays.has(column.dataType)) {
      sets.push(`${name} = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0) FROM unnest(x.${name}, excluded.${name}) WITH ORDINALITY AS u(a, b, n) ORDER BY n)`)
    }
  }
  const key = table.primaryKey.map(ident).join(', ')
  return sets.length === 0 ? `ON CONFLICT (${key}) DO NOTHING` : `ON CONFLICT (${key}) DO UPDATE SET ${sets.join(', ')}`
}

/** The history as built: rows, the big organization's ids and samples to read it by, size. */
async function summarize(client: pg.Client, template: Template, organizations: HistoryOrganization[], seconds: HistorySummary['seconds']): Promise<HistorySummary> {
  const big = organizations[0]!
  const tables = await readTables(client)
  const rows = Object.fromEntries(tables.filter((table) => table.rows > 0 && !SKIPPED.has(table.name)).map((table) => [table.name, table.rows]))
  const allTriggers = rows.triggers ?? 0
  const rowsPerTrigger = Object.fromEntries(Object.entries(rows).map(([name, n]) => [name, Math.round((n / allTriggers) * 1000) / 1000]))
  const routingKeys = (await client.query<{ routing_key: string }>('SELECT routing_key FROM campaigns WHERE org_id = $1 ORDER BY routing_key', [template.orgId])).rows
  const campaigns = await client.query<{ id: string; routing_key: string; channel: string }>(
    'SELECT id, routing_key, channel FROM campaigns WHERE org_id = $1 ORDER BY routing_key',
    [big.id],
  )
  // Spread over the history: at SAMPLES evenly spaced instants of it (the last a copy before its end), a trigger a little after (each a
  // copy of another of the template's).
  const spread = await client.query<{ task_id: string; id: { source: string; type: string; value: string } | null; phone: string }>(
    `WITH range AS (SELECT min(created_at) AS first, max(created_at) AS last FROM triggers WHERE org_id = $1)
     SELECT tr.task_id, CASE WHEN NOT tr.test_mode THEN tr.ids->0 END AS id, tr.phone
     FROM range CROSS JOIN generate_series(0, $2 - 1) AS g(n)
     CROSS JOIN LATERAL (
       SELECT * FROM triggers WHERE org_id = $1 AND created_at >= range.first + (range.last - range.first) * g.n / $2
       ORDER BY created_at, id LIMIT 1 OFFSET g.n * 37 % $3) tr
     ORDER BY g.n`,
    [big.id, SAMPLES, template.triggers],
  )
  const phones: { phone: string; tasks: number }[] = []
  for (const row of spread.rows) {
    if (normalizePhone(row.phone) !== row.phone) continue
    const count = await client.query<{ n: string }>('SELECT count(*) AS n FROM triggers WHERE org_id = $1 AND phone = $2', [big.id, row.phone])
    phones.push({ phone: row.phone, tasks: Number(count.rows[0]!.n) })
  }
  const size = await client.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes')
  return {
    template: { orgId: template.orgId, triggers: template.triggers, mix: template.mix, routingKeys: routingKeys.map((row) => row.routing_key) },
    bigOrganization: {
      ...big,
      campaigns: campaigns.rows.map((row) => ({ id: row.id, routingKey: row.routing_key, channel: row.channel })),
      taskIds: spread.rows.map((row) => row.task_id),
      externalIds: spread.rows.flatMap((row) => (row.id === null ? [] : [row.id])),
      phones,
    },
    organizations,
    rows,
    rowsPerTrigger,
    seconds,
    databaseBytes: Number(size.rows[0]!.bytes),
  }
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

function utcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'database-url': { type: 'string' },
      organizations: { type: 'string', default: '100' },
      big: { type: 'string', default: '1000000' },
      others: { type: 'string', default: '10000' },
      days: { type: 'string', default: '360' },
      template: { type: 'string', default: String(DEFAULT_TEMPLATE_TRIGGERS) },
    },
  })
  const databaseUrl = values['database-url']
  if (databaseUrl === undefined) throw new Error('--database-url is required (an empty database)')
  const summary = await buildHistory({
    databaseUrl,
    organizations: Number(values.organizations),
    bigOrganizationTriggers: Number(values.big),
    otherOrganizationTriggers: Number(values.others),
    days: Number(values.days),
    templateTriggers: Number(values.template),
    log: (message) => process.stderr.write(`[history] ${message}\n`),
  })
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  })
}
