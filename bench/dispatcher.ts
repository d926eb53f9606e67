/**
 * Dispatcher throughput: how many due tasks one worker process (`cli worker`,
 * pinned to its CPU) starts per second on the simulator, on PostgreSQL.
 *
 * The tasks are written straight into the database through the store
 * (the trigger path is measured on its own), all due and in an always-open
 * window, on a simulator campaign whose calls last an hour, so that the
 * worker only claims, checks the schedule, records attempts and starts them.
 * With `perSecond`, the campaign sets its sender's pace (src/domain/pacing.ts)
 * that high, so that nothing waits for it and what is measured is what pacing
 * costs each batch: its sender's row locked and its slots saved.
 *
 * With the law (the law section, bench/run.ts): the tasks' numbers are spread
 * over jurisdictions that have calling-law profiles, on a marketing campaign
 * (hours, caps, consent and the registries all bind), each number with a
 * consent on file that satisfies every rule that asks for one, and only
 * numbers of jurisdictions whose hours are open while the section runs: each
 * decision reads the number's consents, the registries and its past attempts,
 * and still allows, so that the work measured (the starts) is the same as
 * without the law. Beside it, the same numbers on a campaign without
 * compliance settings (informational: nothing binds, nothing is read).
 */
import { type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { createChannels } from '../src/channels/index.ts'
import { COMMAND_LINE } from '../src/domain/audit.ts'
import { type Jurisdiction, shippedProfiles } from '../src/domain/callingLaw.ts'
import { type Schedule, WEEKDAYS } from '../src/domain/campaignSettings.ts'
import type { ComplianceSettings, ConsentOnFile } from '../src/domain/consent.ts'
import { normalizePhone } from '../src/domain/contact.ts'
import { decideContactability, decisionNeeds } from '../src/domain/contactability.ts'
import { newId } from '../src/domain/ids.ts'
import { jurisdictionKey, jurisdictionsOfNumber } from '../src/domain/jurisdictions.ts'
import { scheduleZones } from '../src/domain/schedule.ts'
import { zonesOfPhone } from '../src/domain/timezones.ts'
import type { CandidateZones } from '../src/domain/types.ts'
import { createCampaign, createOrganization, issueApiKey } from '../src/services/administration.ts'
import { recordConsents } from '../src/services/consents.ts'
import { type Database, openDatabase } from '../src/store/database.ts'
import { migrate } from '../src/store/migrate.ts'
import { insertTriggersWithTasks, type NewTrigger } from '../src/store/triggers.ts'
import { startChild, stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { SERVICE_NODE_FLAGS } from './harness.ts'

export interface DispatcherResult {
  tasks: number
  /** From the first attempt started to the last. */
  seconds: number
  tasksPerSecond: number
}

/** One run of the worker, with what its starts cost in CPU. */
export interface DispatcherRun extends DispatcherResult {
  /**
   * CPU time per start, in µs: the worker's (all its threads) and PostgreSQL's (the backends of the database and
   * the server's own processes), from the first poll that saw a start to the one that saw the last, over the
   * starts between; undefined when the first poll saw them all.
   */
  cpuUsPerStart: { worker: number; postgres: number } | undefined
}

const INSERT_BATCH = 500
export const ALWAYS_OPEN: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '00:00', end: '24:00' }] }
/** How often the bench counts the starts: often enough for the span's ends, seldom enough not to load PostgreSQL. */
const POLL_MS = 250
/** No start for this long before all are started: something holds them (a decision, the worker's death): the run fails. */
const STALL_MS = 20_000
/**
 * Extra node flags for the worker, as for the servers (bench/harness.ts): BENCH_SERVER_NODE_FLAGS, e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof` to profile the worker's batches.
 */
const WORKER_NODE_FLAGS = (process.env.BENCH_SERVER_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '')

/** A task's contact: its number and the zones the number places it in, as the trigger path would have found them. */
export interface BenchContact {
  phone: string
  zones: CandidateZones
}

/** A database migrated, with one organization and API key the runs' campaigns and tasks belong to. */
export interface DispatcherDatabase {
  db: Database
  databaseUrl: string
  orgId: string
  apiKeyId: string
  /** What the service's operations take: the database, the clock, the channels. */
  ops: Parameters<typeof createCampaign>[0]
}

export async function openDispatcherDatabase(databaseUrl: string): Promise<DispatcherDatabase> {
  const db = await openDatabase({ databaseUrl, dataDir: 'memory://' })
  try {
    await migrate(db)
    const channels = createChannels({ publicBaseUrl: 'http://127.0.0.1:1', twilioApiBaseUrl: 'http://127.0.0.1:1', whatsappApiBaseUrl: 'http://127.0.0.1:1' }, () => undefined)
    const ops = { db, now: Date.now, channels: channels.registry }
    const org = await createOrganization(ops, COMMAND_LINE, 'Dispatcher Bench')
    const { apiKey } = await issueApiKey(ops, COMMAND_LINE, org.id, { name: 'bench' })
    return { db, databaseUrl, orgId: org.id, apiKeyId: apiKey.id, ops }
  } catch (error) {
    await db.close()
    throw error
  }
}

/** A simulator campaign, always open, whose calls last an hour (nothing settles while a run lasts). */
export async function createBenchCampaign(
  base: DispatcherDatabase,
  routingKey: string,
  settings: { perSecond?: number; compliance?: ComplianceSettings } = {},
): Promise<string> {
  const campaign = await createCampaign(base.ops, COMMAND_LINE, base.orgId, {
    routing_key: routingKey,
    channel: 'voice',
    schedule: ALWAYS_OPEN,
    provider_config: { outcomes: ['completed'], duration_ms: 3_600_000 },
    ...(settings.perSecond === undefined ? {} : { pacing: { per_second: settings.perSecond } }),
    ...(settings.compliance === undefined ? {} : { compliance: settings.compliance }),
  })
  return campaign.id
}

export async function benchDispatcher(options: {
  databaseUrl: string
  tasks: number
  root: string
  cpu: number
  logFile: string
  timeoutMs: number
  /** The campaign's pace; unpaced (the simulator's default) without it. */
  perSecond?: number
}): Promise<DispatcherResult> {
  const base = await openDispatcherDatabase(options.databaseUrl)
  try {
    const campaignId = await createBenchCampaign(base, 'dispatch', { perSecond: options.perSecond })
    const contact: BenchContact = { phone: '+442079460958', zones: { zones: ['Europe/London'], source: 'country' } }
    const { tasks, seconds, tasksPerSecond } = await dispatchOnce({
      ...options,
      base,
      campaignId,
      contacts: Array.from({ length: options.tasks }, () => contact),
      phoneHashKey: randomBytes(32).toString('hex'),
      label: 'dispatch-bench',
    })
    return { tasks, seconds, tasksPerSecond }
  } finally {
    await base.db.close()
  }
}

/**
 * Writes one due task for each contact, on the campaign, then starts a worker and waits until it has started them
 * all; answers the rate from the first start to the last and its CPU per start. The database may hold earlier runs'
 * tasks (all started, their calls running): only the campaign's are counted.
 */
export async function dispatchOnce(options: {
  base: DispatcherDatabase
  campaignId: string
  contacts: readonly BenchContact[]
  /** PHONE_HASH_KEY for the worker: the one the database's digests (consents, registries) were made with. */
  phoneHashKey: string
  /** Request ids and the ids of the triggers are made of it. */
  label: string
  root: string
  cpu: number
  logFile: string
  timeoutMs: number
}): Promise<DispatcherRun> {
  const { db, databaseUrl, orgId, apiKeyId } = options.base
  const total = options.contacts.length
  for (let written = 0; written < total; written += INSERT_BATCH) {
    const now = Date.now()
    const batch: NewTrigger[] = options.contacts.slice(written, written + INSERT_BATCH).map((contact, index) => ({
      id: newId('trigger', now),
      taskId: newId('task', now),
      orgId,
      apiKeyId,
      campaignId: options.campaignId,
      contactId: null,
      numberZones: contact.zones,
      requestId: `${options.label}-${written + index}`,
      ids: [{ source: 'bench', type: 'row', value: String(written + index) }],
      contact: { phone: contact.phone },
      context: {},
      testMode: true,
      createdAt: new Date(now).toISOString(),
      notBefore: null,
      expiresAt: null,
      dueAt: new Date(now).toISOString(),
      idempotency: null,
    }))
    await insertTriggersWithTasks(db, batch)
  }

  let worker: ChildProcess | undefined
  const output = openSync(options.logFile, 'w')
  try {
    worker = startChild('taskset', ['-c', String(options.cpu), process.execPath, ...SERVICE_NODE_FLAGS, ...WORKER_NODE_FLAGS, 'dist/cli.js', 'worker'], {
      cwd: options.root,
      // METRICS_PORT 0: not scraped here, so any free port.
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        OPERATOR_TOKEN: randomBytes(24).toString('hex'),
        PHONE_HASH_KEY: options.phoneHashKey,
        METRICS_PORT: '0',
      },
      stdio: ['ignore', output, output],
    })
  } finally {
    closeSync(output)
  }
  try {
    const database = new URL(databaseUrl).pathname.slice(1)
    const deadline = Date.now() + options.timeoutMs
    let first: { started: number; workerCpu: number; postgres: ReturnType<typeof meterPostgresCpu> } | undefined
    let lastProgress = { started: 0, at: Date.now() }
    for (;;) {
      const [row] = await db.query<{ started: number }>(`SELECT count(*)::int AS started FROM interactions WHERE campaign_id = $1 AND status <> 'finalized'`, [
        options.campaignId,
      ])
      const started = row!.started
      if (started > 0 && first === undefined) first = { started, workerCpu: processCpuSeconds(worker.pid!), postgres: meterPostgresCpu(database) }
      if (started >= total) {
        const workerCpu = processCpuSeconds(worker.pid!) - first!.workerCpu
        const postgresCpu = first!.postgres.stop()
        const counted = total - first!.started
        const [span] = await db.query<{ seconds: number }>(
          `SELECT extract(epoch FROM max(started_at) - min(started_at))::float8 AS seconds FROM interactions WHERE campaign_id = $1`,
          [options.campaignId],
        )
        const seconds = span!.seconds
        return {
          tasks: total,
          seconds,
          tasksPerSecond: total / seconds,
          cpuUsPerStart: counted === 0 ? undefined : { worker: (workerCpu * 1e6) / counted, postgres: (postgresCpu * 1e6) / counted },
        }
      }
      if (started > lastProgress.started) lastProgress = { started, at: Date.now() }
      if (Date.now() > deadline || Date.now() - lastProgress.at > STALL_MS) {
        first?.postgres.stop()
        throw new Error(`the worker started ${started} of ${total} tasks (${await heldTasks(db, options.campaignId)}); see ${options.logFile}`)
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    }
  } finally {
    await stopChild(worker)
  }
}

/** What became of a run's tasks that did not start: by status, outcome and the decision kept with them. */
async function heldTasks(db: Database, campaignId: string): Promise<string> {
  const rows = await db.query<{ status: string; outcome: string | null; decision: string | null; reasons: string | null; tasks: number }>(
    `SELECT status, outcome, decision->>'decision' AS decision, (decision->'reasons')::text AS reasons, count(*)::int AS tasks
     FROM tasks WHERE campaign_id = $1 AND (status <> 'in_progress' OR outcome IS NOT NULL)
     GROUP BY 1, 2, 3, 4 ORDER BY 5 DESC LIMIT 5`,
    [campaignId],
  )
  return rows.length === 0 ? 'none held' : rows.map((row) => `${row.tasks} ${row.status} ${row.outcome ?? ''} ${row.decision ?? ''} ${row.reasons ?? ''}`).join('; ')
}

/**
 * Numbers of jurisdictions that have calling-law profiles, by prefix: each pool has 10^digits numbers a prefix, all
 * valid (normalizePhone), placed in the zones shown (zonesOfPhone) and in the profile's jurisdictions
 * (jurisdictionsOfNumber). Registry numbers (bench/registry.ts) are of other exchanges: none of these is listed.
 */
export const LAW_POOLS: readonly { name: string; prefixes: readonly string[]; digits: number }[] = [
  { name: 'Florida (Miami)', prefixes: ['+1305777', '+1305778', '+1305779'], digits: 4 },
  { name: 'Oklahoma (Oklahoma City)', prefixes: ['+1405222', '+1405223', '+1405224'], digits: 4 },
  { name: 'Maryland (Baltimore)', prefixes: ['+1410222', '+1410223', '+1410224'], digits: 4 },
  { name: 'Washington (Seattle)', prefixes: ['+1206222', '+1206223', '+1206224'], digits: 4 },
  { name: 'Texas (Austin)', prefixes: ['+1512222', '+1512223', '+1512224'], digits: 4 },
  { name: 'California (Los Angeles: federal rules only)', prefixes: ['+1213222', '+1213223', '+1213224'], digits: 4 },
  { name: 'Ontario (Toronto)', prefixes: ['+1416222', '+1416223', '+1416224'], digits: 4 },
  { name: 'France (Paris)', prefixes: ['+33142'], digits: 6 },
  // Nine prefixes each: at night in the Americas these two may be the only pools open, for every round's 10,000 numbers.
  { name: 'Germany (Berlin)', prefixes: ['+4930222', '+4930223', '+4930224', '+4930225', '+4930226', '+4930227', '+4930228', '+4930229', '+4930231'], digits: 4 },
  { name: 'United Kingdom (London)', prefixes: ['+44207946', '+44207947', '+44207948', '+44207940', '+44207941', '+44207942', '+44207943', '+44207944', '+44207945'], digits: 4 },
]

/** The law run's compliance: marketing by an artificial voice, so that every profile's consent, hours and cap rules bind. */
export const LAW_COMPLIANCE: ComplianceSettings = { purpose: 'marketing', artificial_voice: true }
/** The consent each number of the law runs has on file: written, which satisfies every rule and the campaign's default. */
export const LAW_CONSENT = { channel: 'voice', purpose: 'marketing', kind: 'express_written', source: 'web_form' } as const

/** A pool's jurisdictions, a number of it and its zones. */
function poolSample(pool: (typeof LAW_POOLS)[number]): { phone: string; zones: CandidateZones; jurisdictions: Jurisdiction[] } {
  const phone = `${pool.prefixes[0]}${'1'.padStart(pool.digits, '0')}`
  if (normalizePhone(phone) !== phone) throw new Error(`${phone} (${pool.name}) is not a valid number`)
  return { phone, zones: zonesOfPhone(phone, undefined)!, jurisdictions: jurisdictionsOfNumber(phone) }
}

/**
 * The pools whose numbers a law run's decision allows from `from` to `until` (checked every five minutes, and at
 * `until`): with the consent on file, no registry listing them and no past attempt, it is the law's hours and
 * holidays that say, in the pool's zones. The others are left out of this run's numbers, with why.
 */
export function poolsOpen(from: number, until: number): { open: (typeof LAW_POOLS)[number][]; closed: { name: string; reason: string }[] } {
  const profiles = shippedProfiles().profiles
  const consent: ConsentOnFile = { id: 'consent_bench', ...LAW_CONSENT, capturedAt: from - 86_400_000, expiresAt: null, revokedAt: null }
  const open: (typeof LAW_POOLS)[number][] = []
  const closed: { name: string; reason: string }[] = []
  for (const pool of LAW_POOLS) {
    const sample = poolSample(pool)
    let reason: string | undefined
    for (let at = from; reason === undefined; at = Math.min(at + 300_000, until)) {
      const decision = decideContactability(
        {
          suppressed: false,
          channel: 'voice',
          purpose: 'marketing',
          subject: 'bench',
          artificialVoice: true,
          jurisdictions: sample.jurisdictions,
          zones: sample.zones.zones,
          profiles,
          campaignWindow: { schedule: ALWAYS_OPEN, zones: scheduleZones(ALWAYS_OPEN, sample.zones.zones) },
          requiredConsent: ['express_written'],
          consents: [consent],
          registries: [],
          pastAttempts: [],
        },
        at,
      )
      if (decision.decision !== 'allowed') reason = `${decision.decision} at ${new Date(at).toISOString()}: ${decision.reasons.map((r) => r.rule ?? r.code).join(', ')}`
      if (at >= until) break
    }
    if (reason === undefined) open.push(pool)
    else closed.push({ name: pool.name, reason })
  }
  return { open, closed }
}

/** Whether a law's cap binds a law run's attempt to the number: its past attempts are then locked and written each batch. */
export function capBinds(phone: string, at: number): boolean {
  const nature = { profiles: shippedProfiles().profiles, jurisdictions: jurisdictionsOfNumber(phone), purpose: 'marketing', channel: 'voice', artificialVoice: true } as const
  return decisionNeeds(nature, ['express_written'], at).capHours !== null
}

/** The jurisdictions a pool's numbers are in, as the decision sees them ("US", "US-FL"). */
export const poolJurisdictions = (pool: (typeof LAW_POOLS)[number]) => poolSample(pool).jurisdictions.map(jurisdictionKey)

/**
 * `count` distinct numbers, taken in turn from each pool (its prefixes one after the other), starting after the
 * `skip` first numbers of each: the numbers of round r are those after round r-1's.
 */
export function lawContacts(pools: readonly (typeof LAW_POOLS)[number][], count: number, skip: number): BenchContact[] {
  const contacts: BenchContact[] = []
  const zonesOf = new Map<string, CandidateZones>()
  for (let index = 0; contacts.length < count; index++) {
    const pool = pools[index % pools.length]!
    const within = skip + Math.floor(index / pools.length)
    const perPrefix = 10 ** pool.digits
    const prefix = pool.prefixes[Math.floor(within / perPrefix)]
    if (prefix === undefined) throw new Error(`${pool.name} has no more than ${pool.prefixes.length * perPrefix} numbers`)
    const phone = `${prefix}${String(within % perPrefix).padStart(pool.digits, '0')}`
    if (normalizePhone(phone) !== phone) throw new Error(`${phone} (${pool.name}) is not a valid number`)
    // Zones by prefix: a pool's numbers share their area, and zonesOfPhone answers alike for each.
    let zones = zonesOf.get(prefix)
    if (zones === undefined) zonesOf.set(prefix, (zones = zonesOfPhone(phone, undefined)!))
    contacts.push({ phone, zones })
  }
  return contacts
}

/** Records LAW_CONSENT for each number (captured a day ago, no expiry), through the service, in one bulk call. */
export async function recordLawConsents(base: DispatcherDatabase, phoneHashKey: string, phones: readonly string[]): Promise<number> {
  const now = Date.now()
  const ops = { db: base.db, now: Date.now, phoneHashKey: Buffer.from(phoneHashKey) }
  const recorded = await recordConsents(
    ops,
    COMMAND_LINE,
    base.orgId,
    phones.map((phone) => ({ phone, ...LAW_CONSENT, capturedAt: now - 86_400_000 })),
  )
  return recorded.length
}

/** Each decision the campaign's attempts were started with, tallied by its kind and its reasons' codes and rules. */
export async function decisionsOf(db: Database, campaignId: string): Promise<{ decisions: Record<string, number>; reasons: { code: string; rule: string; attempts: number }[] }> {
  const kinds = await db.query<{ decision: string | null; attempts: number }>(
    `SELECT decision->>'decision' AS decision, count(*)::int AS attempts FROM interactions WHERE campaign_id = $1 GROUP BY 1`,
    [campaignId],
  )
  const reasons = await db.query<{ code: string; rule: string | null; attempts: number }>(
    `SELECT r->>'code' AS code, r->>'rule' AS rule, count(*)::int AS attempts
     FROM interactions i CROSS JOIN LATERAL jsonb_array_elements(i.decision->'reasons') AS r
     WHERE i.campaign_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
    [campaignId],
  )
  return {
    decisions: Object.fromEntries(kinds.map((row) => [row.decision ?? 'none', row.attempts])),
    reasons: reasons.map((row) => ({ code: row.code, rule: row.rule ?? '—', attempts: row.attempts })),
  }
}
