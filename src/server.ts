/**
 * Running the service: open the database, apply migrations, build the app,
 * listen (and run the dispatcher, unless this process is API-only), and close
 * in order on SIGTERM/SIGINT so that every accepted trigger is committed and
 * answered before the process exits. `worker` runs the dispatcher alone.
 */
import { ServiceMetrics } from './services/metrics.ts'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { buildApp } from './app.ts'
import { createChannels } from './channels/index.ts'
import { type Config, ConfigError } from './config.ts'
import { generateOperatorToken, generatePhoneHashKey } from './services/credentials.ts'
import { openDatabase } from './store/database.ts'
import type { Database } from './store/database.ts'
import { migrate } from './store/migrate.ts'
import { matchesPhoneHashKey } from './store/phoneHashKey.ts'
import { createServices } from './services/index.ts'
import { createWorkers } from './workers/index.ts'

const SHUTDOWN_TIMEOUT_MS = 15_000

export async function serve(config: Config, options: { workers: boolean }): Promise<void> {
  if (config.databaseUrl !== undefined && config.operatorToken === undefined) {
    // Processes sharing a database must share the token; one kept in a local data directory would differ.
    throw new ConfigError('OPERATOR_TOKEN must be set when DATABASE_URL is (at least 24 characters)')
  }
  requireSharedPhoneHashKey(config)
  const db = await openDatabase(config)
  await migrate(db)
  const phoneHashKey = await phoneHashKeyFor(config, db)
  const operatorToken = config.operatorToken ?? (await operatorTokenFromDataDir(config.dataDir))
  const channels = createChannels(config, (name) => process.env[name])
  const app = await buildApp(
    { operatorToken, phoneHashKey, logLevel: config.logLevel, allowPrivateWebhookUrls: config.allowPrivateWebhookUrls, workers: options.workers },
    { db, channels },
  )

  onSignal(app.log, async () => {
    await app.close()
    await db.close()
  })

  await app.listen({ port: config.port, host: config.host })
  await app.workers?.start()
  app.log.info({ database: db.kind, dataDir: db.kind === 'pglite' ? config.dataDir : undefined, workers: options.workers }, 'ready')
}

/** The workers (dispatcher, deliverer) without the HTTP API, for worker processes beside API-only ones on one PostgreSQL. */
export async function runWorker(config: Config): Promise<void> {
  requireSharedPhoneHashKey(config)
  const db = await openDatabase(config)
  await migrate(db)
  const phoneHashKey = await phoneHashKeyFor(config, db)
  const log = pino({ level: config.logLevel })
  const services = createServices({
    // Counted, and not yet served: a worker process listens on no port.
    metrics: new ServiceMetrics(db, Date.now),
    db,
    channels: createChannels(config, (name) => process.env[name]),
    now: Date.now,
    log,
    operatorToken: undefined,
    phoneHashKey,
    allowPrivateWebhookUrls: config.allowPrivateWebhookUrls,
  })
  const workers = createWorkers(services, log)
  onSignal(log, async () => {
    await workers.stop()
    await services.drained()
    await db.close()
  })
  await workers.start()
  log.info({ database: db.kind }, 'worker ready')
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

/** Processes sharing a PostgreSQL must share the key, which a local data directory would not. */
function requireSharedPhoneHashKey(config: Config): void {
  if (config.databaseUrl !== undefined && config.phoneHashKey === undefined) {
    throw new ConfigError('PHONE_HASH_KEY must be set when DATABASE_URL is (at least 32 characters), the same in every process')
  }
}

/**
 * The key of the hash an erased suppression keeps of its number: from
 * PHONE_HASH_KEY, which processes sharing a PostgreSQL must share, or on the
 * embedded database kept in the data directory beside it (generated on first
 * start). Refused when the database's digests were made with another key.
 */
async function phoneHashKeyFor(config: Config, db: Database): Promise<Buffer> {
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

function announce(token: string, where: string) {
  process.stderr.write(`\nOperator token (shown once): ${token}\n${where}\n\n`)
}
