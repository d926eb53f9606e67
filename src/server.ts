/**
 * Running the service: open the database, apply migrations, build the app,
 * listen (and run the dispatcher, unless this process is API-only), and close
 * in order on SIGTERM/SIGINT so that every accepted trigger is committed and
 * answered before the process exits. `worker` runs the dispatcher alone, and
 * serves what every process serves its operator: /metrics and the health checks.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { DestinationStream } from 'pino'
import { buildApp } from './app.ts'
import { createChannels } from './channels/index.ts'
import { type Config, ConfigError, type LogFormat } from './config.ts'
import { generateOperatorToken, generatePhoneHashKey } from './services/credentials.ts'
import { type Database, openDatabase } from './store/database.ts'
import { prepareSchema } from './store/migrate.ts'
import { matchesPhoneHashKey } from './store/phoneHashKey.ts'
import { startTracing } from './tracing.ts'

const SHUTDOWN_TIMEOUT_MS = 15_000

/** The HTTP API, with the workers unless `workers` is false (an API process beside worker processes). */
export function serve(config: Config, options: { workers: boolean }): Promise<void> {
  return run(config, { api: true, workers: options.workers, port: config.port })
}

/** The workers (dispatcher, deliverer) without the HTTP API, for worker processes beside API-only ones on one PostgreSQL. */
export function runWorker(config: Config): Promise<void> {
  return run(config, { api: false, workers: true, port: config.metricsPort })
}

async function run(config: Config, options: { api: boolean; workers: boolean; port: number }): Promise<void> {
  if (config.databaseUrl !== undefined && config.operatorToken === undefined) {
    // Processes sharing a database must share the token; one kept in a local data directory would differ.
    throw new ConfigError('OPERATOR_TOKEN must be set when DATABASE_URL is (at least 24 characters)')
  }
  if (config.databaseUrl !== undefined && config.phoneHashKey === undefined) {
    throw new ConfigError('PHONE_HASH_KEY must be set when DATABASE_URL is (at least 32 characters), the same in every process')
  }
  const startedTracing = await startTracing()
  // On the embedded database this takes the data directory's lock first, before its secrets are read or made below.
  const db = await openDatabase({ ...config, command: options.api ? (options.workers ? 'serve' : 'serve --no-workers') : 'worker' })
  await prepareSchema(db, config.migrateOnStart)
  const phoneHashKey = await phoneHashKeyFor(config, db)
  const operatorToken = config.operatorToken ?? (await operatorTokenFromDataDir(config.dataDir))
  const channels = createChannels(config, (name) => process.env[name])
  const app = await buildApp(
    {
      operatorToken,
      metricsToken: config.metricsToken,
      metricsLegacyNames: config.metricsLegacyNames,
      phoneHashKey,
      logLevel: config.logLevel,
      logStream: await logStreamFor(config.logFormat),
      allowPrivateWebhookUrls: config.allowPrivateWebhookUrls,
      workers: options.workers,
      api: options.api,
      historyBounds: config.historyBounds,
      publicBaseUrl: config.publicBaseUrl,
    },
    { db, channels },
  )

  onSignal(app.log, async () => {
    await app.close()
    app.log.info('shutdown: closing the database')
    await db.close()
    if (startedTracing !== undefined) {
      app.log.info('shutdown: sending the last traces')
      await startedTracing.shutdown()
    }
  })

  await app.listen({ port: options.port, host: config.host })
  // A command line refused the data directory names where the same operation can be done meanwhile.
  if (options.api) db.dataDirLock?.announce(`${localUrl(config.host, (app.server.address() as AddressInfo).port)}/admin/v1`)
  await app.workers?.start()
  const traces = startedTracing?.exporter ?? 'off'
  if (options.api) app.log.info({ database: db.kind, dataDir: db.kind === 'pglite' ? config.dataDir : undefined, workers: options.workers, traces }, 'ready')
  // The port it listens on, which the system chose when METRICS_PORT is 0.
  else app.log.info({ database: db.kind, metricsPort: (app.server.address() as AddressInfo).port, traces }, 'worker ready')
}

/** The address an operator on this machine reaches a server listening on `host` at. */
function localUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host
  return `http://${name}:${port}`
}

/**
 * The first SIGTERM or SIGINT starts the drain; any later one is logged and
 * ignored. A signal seldom comes once: Ctrl-C in a terminal and a supervisor
 * stopping a process group send it to every process of the group, and a
 * parent such as npm passes its own copy on too, so a second signal is no
 * sign of impatience. The drain ends within SHUTDOWN_TIMEOUT_MS whatever
 * happens (SIGKILL ends it at once, and loses nothing acknowledged).
 */
function onSignal(log: FastifyBaseLogger, drain: () => Promise<void>) {
  let stopping = false
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.info({ signal }, 'already shutting down; signal ignored')
      return
    }
    stopping = true
    log.info({ signal }, 'shutting down')
    // A drain that hangs (a database that no longer answers) must still end.
    setTimeout(() => {
      log.error({ timeoutMs: SHUTDOWN_TIMEOUT_MS }, 'shutdown did not end in time; exiting')
      process.exit(1)
    }, SHUTDOWN_TIMEOUT_MS).unref()
    drain().then(
      () => {
        log.info('shut down')
        process.exit(0)
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

/**
 * The key of the hash an erased suppression keeps of its number: from
 * PHONE_HASH_KEY, which processes sharing a PostgreSQL must share, or on the
 * embedded database kept in the data directory beside it (generated on first
 * start). Refused when the database's digests were made with another key.
 */
export async function phoneHashKeyFor(config: Config, db: Database): Promise<Buffer> {
  const key = Buffer.from(config.phoneHashKey ?? (await secretFromDataDir(config.dataDir, 'phone-hash-key', generatePhoneHashKey)).value)
  if (!(await matchesPhoneHashKey(db, key, Date.now()))) {
    throw new ConfigError('PHONE_HASH_KEY is not the key this database was first used with: erased numbers would no longer meet their suppressions')
  }
  return key
}

/**
 * On the embedded database without OPERATOR_TOKEN, the token is kept in the
 * data directory: generated on first start and printed that once, on standard
 * error and never in a log line, so that a newcomer can use the admin API at
 * once and it survives restarts.
 */
async function operatorTokenFromDataDir(dataDir: string): Promise<string> {
  const { value, generatedIn } = await secretFromDataDir(dataDir, 'operator-token', generateOperatorToken)
  if (generatedIn === 'memory') announce(value, 'It lasts as long as this process (DATA_DIR=memory://).')
  if (generatedIn === 'file') announce(value, `It is kept in ${path.join(dataDir, 'operator-token')}; set OPERATOR_TOKEN to use your own.`)
  return value
}

/** A secret kept in a file of the data directory (readable by its owner only), generated when there is none; with DATA_DIR=memory://, one for this process. */
async function secretFromDataDir(
  dataDir: string,
  name: string,
  generate: () => string,
): Promise<{ value: string; generatedIn: 'memory' | 'file' | undefined }> {
  if (dataDir === 'memory://') return { value: generate(), generatedIn: 'memory' }
  const file = path.join(dataDir, name)
  try {
    return { value: (await readFile(file, 'utf8')).trim(), generatedIn: undefined }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const value = generate()
  await mkdir(dataDir, { recursive: true })
  await writeFile(file, `${value}\n`, { mode: 0o600, flag: 'wx' })
  await chmod(file, 0o600)
  return { value, generatedIn: 'file' }
}

/**
 * Where log lines go: JSON lines on standard output (the app's default), or,
 * for a person at a terminal, pino-pretty's one line per entry with the
 * level as a word and the time of day. pino-pretty is an optional
 * dependency: an install without it (`npm ci --omit=optional`) logs JSON.
 */
async function logStreamFor(format: LogFormat): Promise<DestinationStream | undefined> {
  if (format === 'json' || (format === 'auto' && !process.stdout.isTTY)) return undefined
  try {
    const { PinoPretty } = await import('pino-pretty')
    return PinoPretty({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true })
  } catch {
    return undefined
  }
}

function announce(token: string, where: string) {
  process.stderr.write(`\nOperator token (shown once): ${token}\n${where}\n\n`)
}
