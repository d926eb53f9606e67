/**
 * A service under test: the app built in-process on a fresh database, either
 * PGlite in memory or, when DATABASE_URL is set, a schema of its own in that
 * PostgreSQL database (dropped at the end). Requests go through app.inject,
 * which runs the whole HTTP stack without a socket.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { type AddressInfo, createServer } from 'node:net'
import { Writable } from 'node:stream'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { buildApp } from '../../src/app.ts'
import { type ChannelSettings, type Channels, createChannels } from '../../src/channels/index.ts'
import { MAX_RATE_LIMIT, type RateLimitPolicy } from '../../src/domain/rateLimit.ts'
import type { HistoryBounds } from '../../src/domain/retention.ts'
import { type Database, type DatabaseOptions, openDatabase, type PoolMode } from '../../src/store/database.ts'
import { decodeEventBody } from '../../src/store/eventBodies.ts'
import { loadMigrations, migrate } from '../../src/store/migrate.ts'
import { embeddedStart } from './embeddedStart.ts'
import { type AnswerRecorder, recordAnswers } from './openapiConformance.ts'
import { type Family, parsePrometheusText } from './prometheus.ts'

export const OPERATOR_TOKEN = 'test-operator-token-0123456789abcdef'
/** The scrape-only credential of a service started with `metricsToken: METRICS_TOKEN`. */
export const METRICS_TOKEN = 'test-metrics-token-0123456789abcdef'
/** The phone hash key of every test process: on PostgreSQL they share databases, whose digests are made with it. */
export const PHONE_HASH_KEY = 'test-phone-hash-key-0123456789abcdef'
export const onPostgres = process.env.DATABASE_URL !== undefined

export interface TestDatabase {
  db: Database
  /** How to open this database again, in this process (PostgreSQL only). */
  connection: Pick<DatabaseOptions, 'databaseUrl' | 'poolMode' | 'databaseDirectUrl'> | undefined
  /** What another process on this database is started with: DATABASE_URL and, behind a pooler, its mode and direct URL. */
  environment: Record<string, string>
  drop(): Promise<void>
}

/**
 * This run's pooler mode: `DATABASE_POOL_MODE=transaction` runs the suite
 * through a transaction-mode pooler (.ci/run starts PgBouncer), with
 * DATABASE_DIRECT_URL past it for LISTEN when given.
 */
export const poolMode: PoolMode = process.env.DATABASE_POOL_MODE === 'transaction' ? 'transaction' : 'session'

/** A fresh database of the kind this run tests, migrated unless asked not to be. */
export async function freshDatabase(options: { migrated: boolean } = { migrated: true }): Promise<TestDatabase> {
  const baseUrl = process.env.DATABASE_URL
  if (baseUrl === undefined) {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: 'memory://', loadDataDir: await embeddedStart(options.migrated) })
    return { db, connection: undefined, environment: {}, drop: () => db.close() }
  }
  // A schema of its own, on a session's search_path; behind a transaction-mode pooler no session setting
  // holds, so a database of its own there.
  const name = `test_${randomBytes(6).toString('hex')}`
  const own = poolMode === 'session' ? { schema: name } : { database: name }
  const admin = new pg.Client({ connectionString: baseUrl })
  await admin.connect()
  await admin.query('schema' in own ? `CREATE SCHEMA ${name}` : `CREATE DATABASE ${name}`)
  await admin.end()
  const at = (base: string) => {
    const url = new URL(base)
    if ('schema' in own) url.searchParams.set('options', `-c search_path=${name}`)
    else url.pathname = `/${name}`
    return url.toString()
  }
  const directBase = process.env.DATABASE_DIRECT_URL
  const connection = { databaseUrl: at(baseUrl), poolMode, databaseDirectUrl: directBase === undefined ? undefined : at(directBase) }
  const db = await openDatabase({ ...connection, dataDir: 'memory://' })
  if (options.migrated) await migrate(db)
  return {
    db,
    connection,
    environment: {
      DATABASE_URL: connection.databaseUrl,
      ...(poolMode === 'transaction' ? { DATABASE_POOL_MODE: poolMode } : {}),
      ...(connection.databaseDirectUrl === undefined ? {} : { DATABASE_DIRECT_URL: connection.databaseDirectUrl }),
    },
    async drop() {
      await db.close()
      const cleanup = new pg.Client({ connectionString: baseUrl })
      await cleanup.connect()
      await cleanup.query('schema' in own ? `DROP SCHEMA ${name} CASCADE` : `DROP DATABASE ${name} WITH (FORCE)`)
      await cleanup.end()
    },
  }
}

/**
 * A fresh database with the migrations before `version` applied, for a test
 * of what migration `version` does to rows written before it: `upgrade()`
 * applies it and every one after, as an upgrade of an install does, so that
 * the test reads the rows with today's code.
 */
export async function databaseBeforeMigration(version: number): Promise<TestDatabase & { upgrade(): Promise<void> }> {
  const database = await freshDatabase({ migrated: false })
  const migrations = await loadMigrations()
  const apply = async (wanted: (candidate: { version: number }) => boolean) => {
    for (const migration of migrations.filter(wanted)) await database.db.transaction((tx) => tx.exec(migration.sql))
  }
  await apply((candidate) => candidate.version < version)
  return { ...database, upgrade: () => apply((candidate) => candidate.version >= version) }
}

export interface TestService {
  app: FastifyInstance
  db: Database
  /** What another process on this service's database is started with (PostgreSQL only; empty on PGlite). */
  environment: Record<string, string>
  logs: string[]
  /** A second app on the same database: another process, with caches of its own. */
  peer(): Promise<FastifyInstance>
  close(): Promise<void>
}

/** Channels whose providers are unreachable: enough for every test that uses the simulator only. */
export const simulatorOnly = () =>
  createChannels(
    { publicBaseUrl: 'http://service.test', twilioApiBaseUrl: 'http://127.0.0.1:9', whatsappApiBaseUrl: 'http://127.0.0.1:9' },
    () => undefined,
  )

export async function startService(
  options: {
    now?: () => number
    channels?: Channels
    allowPrivateWebhookUrls?: boolean
    /** False for an API-only process, beside worker processes of its own. */
    workers?: boolean
    /** The organizations' default rate limit; by default so high that no test meets it unless it means to. */
    rateLimit?: RateLimitPolicy
    /** How long endpoint health and the audit log are kept; the service's defaults unless given. */
    historyBounds?: HistoryBounds
    /** The scrape-only credential; none unless given, as without METRICS_TOKEN. */
    metricsToken?: string
    /** Whether /metrics also serves the old unprefixed names (METRICS_LEGACY_NAMES); not unless given. */
    metricsLegacyNames?: boolean
  } = {},
): Promise<TestService> {
  const database = await freshDatabase()
  const logs: string[] = []
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const build = () =>
    buildApp(
      {
        operatorToken: OPERATOR_TOKEN,
        metricsToken: options.metricsToken,
        metricsLegacyNames: options.metricsLegacyNames,
        phoneHashKey: Buffer.from(PHONE_HASH_KEY),
        logLevel: 'info',
        logStream,
        allowPrivateWebhookUrls: options.allowPrivateWebhookUrls,
        workers: options.workers,
        rateLimit: options.rateLimit ?? { perSecond: MAX_RATE_LIMIT, burst: MAX_RATE_LIMIT },
        metricsQueueReadIntervalMs: 0,
        historyBounds: options.historyBounds,
      },
      { db: database.db, now: options.now, channels: options.channels ?? simulatorOnly() },
    )
  // Every answer the test gets is held to the OpenAPI documents when the service closes.
  const recorders: AnswerRecorder[] = []
  const recorded = async () => {
    const app = await build()
    recorders.push(recordAnswers(app))
    return app
  }
  const app = await recorded()
  const peers: FastifyInstance[] = []
  return {
    app,
    db: database.db,
    environment: database.environment,
    logs,
    async peer() {
      const peer = await recorded()
      peers.push(peer)
      return peer
    },
    async close() {
      const undeclared = [...new Set(recorders.flatMap((recorder) => recorder.undeclared()))]
      for (const peer of peers) await peer.close()
      await app.close()
      await database.drop()
      assert.deepEqual(undeclared, [], 'answers the OpenAPI documents do not declare')
    },
  }
}

/**
 * The tables of the service's schema with a row that holds `needle` anywhere
 * (as text, case ignored), by name; events' bodies read as the JSON they
 * deflate (store/eventBodies.ts).
 */
export async function tablesHolding(db: Database, needle: string): Promise<string[]> {
  const tables = await db.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
  const holding: string[] = []
  for (const { name } of tables) {
    const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${name} AS r WHERE r::text ILIKE '%' || $1 || '%'`, [needle])
    if (rows[0]!.n > 0 || (name === 'events' && (await eventBodiesHold(db, needle)))) holding.push(name)
  }
  return holding
}

async function eventBodiesHold(db: Database, needle: string): Promise<boolean> {
  const lowered = needle.toLowerCase()
  const rows = await db.query<{ body: Uint8Array }>('SELECT body FROM events')
  return rows.some((row) => decodeEventBody(row.body).toLowerCase().includes(lowered))
}

/** A port nothing listens on now, as the system picks one. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** GET /metrics with the operator token, which must answer; its families, read by Prometheus's text rules. */
export async function scrapeMetrics(app: FastifyInstance): Promise<Map<string, Family>> {
  const response = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(OPERATOR_TOKEN) })
  assert.equal(response.statusCode, 200, response.body)
  return parsePrometheusText(response.body)
}

export function json(response: LightMyRequestResponse): any {
  return JSON.parse(response.body)
}

/** A task as GET /api/v2/tasks/{id} shows it to the organization of `key`, which must find it. */
export async function taskOf(app: FastifyInstance, key: string, id: string): Promise<any> {
  const response = await app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(key) })
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data
}

/** A campaign of the organization, made through the admin API: it must be created. Its `data`. */
export async function createCampaign(app: FastifyInstance, orgId: string, payload: Record<string, unknown>): Promise<any> {
  const response = await app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN), payload })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

/** POST /api/v2/triggers with the organization's `key`. */
export function postTrigger(app: FastifyInstance, key: string, payload: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { ...bearer(key), 'content-type': 'application/json' }, payload })
}

/** A trigger that must be accepted: its 201's `data`. */
export async function acceptedTrigger(app: FastifyInstance, key: string, payload: Record<string, unknown>): Promise<{ id: string; task_id: string }> {
  const response = await postTrigger(app, key, payload)
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data
}

/**
 * A service that a provider's fake calls back over HTTP: listening on a port
 * of its own, which its channels take for their public URL; their APIs the
 * fakes' named in `apiBaseUrls` (the others a closed port), their secrets
 * from `secrets`; and an organization seeded in it.
 */
export async function startCalledBackService(options: {
  now: () => number
  apiBaseUrls: Partial<Omit<ChannelSettings, 'publicBaseUrl'>>
  secrets: Record<string, string>
}): Promise<{ service: TestService; baseUrl: string; org: Awaited<ReturnType<typeof seedOrganization>> }> {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const closed = 'http://127.0.0.1:9'
  const channels = createChannels(
    { publicBaseUrl: baseUrl, twilioApiBaseUrl: closed, whatsappApiBaseUrl: closed, ...options.apiBaseUrls },
    (name) => options.secrets[name],
  )
  const service = await startService({ now: options.now, channels })
  await service.app.listen({ port, host: '127.0.0.1' })
  return { service, baseUrl, org: await seedOrganization(service.app) }
}

/** An organization with a key (default scopes unless given) and one voice campaign (default schedule unless given), made through the admin API. */
export async function seedOrganization(
  app: FastifyInstance,
  options: { routingKey?: string; context?: object; scopes?: string[]; schedule?: object } = {},
) {
  const admin = bearer(OPERATOR_TOKEN)
  const org = json(await app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Acme Recruiting' } })).data
  const key = json(
    await app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/api-keys`,
      headers: admin,
      payload: { name: 'ats', ...(options.scopes === undefined ? {} : { scopes: options.scopes }) },
    }),
  ).data
  const routingKey = options.routingKey ?? 'screening'
  const campaign = await createCampaign(app, org.id, {
    routing_key: routingKey,
    channel: 'voice',
    context: options.context ?? {},
    ...(options.schedule === undefined ? {} : { schedule: options.schedule }),
  })
  return { orgId: org.id as string, key: key.key as string, keyId: key.id as string, campaign, routingKey }
}
