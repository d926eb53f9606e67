/**
 * Service configuration, read once from the environment at start-up.
 *
 * Every value is validated here so that a bad deployment fails before it
 * listens, with one line that names the variable and the value it rejected.
 */
import path from 'node:path'
import { DEFAULT_HISTORY_BOUNDS, type HistoryBounds } from './domain/retention.ts'
import type { PoolMode } from './store/database.ts'

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
export type LogFormat = 'json' | 'pretty' | 'auto'

export interface Config {
  port: number
  /** The port a worker process (`cli worker`) serves /metrics, /healthz and /readyz on; `serve` serves them on `port`. */
  metricsPort: number
  host: string
  /** PostgreSQL connection string; when absent the embedded database in `dataDir` is used. */
  databaseUrl: string | undefined
  /**
   * `transaction` when DATABASE_URL goes through a pooler in transaction mode
   * (PgBouncer's pool_mode = transaction): no session state is kept across
   * transactions (statements are not prepared by name, nothing is LISTENed
   * to on the pooler).
   */
  poolMode: PoolMode
  /** A connection straight to the server, past a transaction-mode pooler, for LISTEN alone. */
  databaseDirectUrl: string | undefined
  /** Connections of this process to PostgreSQL (to the pooler, behind one). */
  poolSize: number
  /** Apply migrations at start (the default); false: `cli migrate` is a release step, and a process refuses a schema behind it. */
  migrateOnStart: boolean
  /** Directory of the embedded database and of the generated operator token; `memory://` keeps both in memory. */
  dataDir: string
  /** Operator token; when absent `serve` generates one and keeps it in `dataDir`. */
  operatorToken: string | undefined
  /**
   * A credential that reads GET /metrics and nothing else, for Prometheus;
   * when absent only the operator token reads it.
   */
  metricsToken: string | undefined
  /**
   * Whether /metrics also serves each of the service's metrics under its
   * name of before the `conversation_trigger_` prefix, marked deprecated:
   * for this release only (services/metrics.ts).
   */
  metricsLegacyNames: boolean
  /**
   * The key of the hash an erased suppression keeps of its number (never
   * stored in the database); when absent the embedded database's is
   * generated and kept in `dataDir`.
   */
  phoneHashKey: string | undefined
  logLevel: LogLevel
  /** `json` lines, `pretty` (pino-pretty, for a person at a terminal), or `auto`: pretty when standard output is a terminal. */
  logFormat: LogFormat
  /** Where providers reach this service (their callbacks); default http://localhost:PORT. */
  publicBaseUrl: string
  /** Provider APIs; configurable so that a test or a staging system can point them at a fake. */
  twilioApiBaseUrl: string
  whatsappApiBaseUrl: string
  elevenlabsApiBaseUrl: string
  retellApiBaseUrl: string
  vapiApiBaseUrl: string
  /** Lets webhook endpoints be private, loopback or plain-http addresses: for local development and tests only. */
  allowPrivateWebhookUrls: boolean
  /** How long endpoint health (counts by the hour) and the audit log are kept, in days. */
  historyBounds: HistoryBounds
}

export class ConfigError extends Error {}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const MIN_OPERATOR_TOKEN_LENGTH = 24
/** As long as the operator token: it is a bearer credential of the same kind, if one that reads less. */
const MIN_METRICS_TOKEN_LENGTH = 24
/** 32 characters of a random base64 or hex string carry at least 128 bits. */
const MIN_PHONE_HASH_KEY_LENGTH = 32
/** The longest a service-wide bound may keep its rows: ten years. */
const MAX_BOUND_DAYS = 3650
/** Connections to PostgreSQL per process unless DATABASE_POOL_SIZE says otherwise; at most MAX_POOL_SIZE. */
const DEFAULT_POOL_SIZE = 10
const MAX_POOL_SIZE = 500
/** The port Prometheus's exporters for Node.js commonly take. */
const DEFAULT_METRICS_PORT = 9464

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const port = parsePort('PORT', env.PORT) ?? 8080
  const databaseUrl = parseDatabaseUrl('DATABASE_URL', env.DATABASE_URL)
  const poolMode = parsePoolMode(env.DATABASE_POOL_MODE)
  const databaseDirectUrl = parseDatabaseUrl('DATABASE_DIRECT_URL', env.DATABASE_DIRECT_URL)
  if ((poolMode === 'transaction' || databaseDirectUrl !== undefined) && databaseUrl === undefined) {
    throw new ConfigError('DATABASE_POOL_MODE and DATABASE_DIRECT_URL go with DATABASE_URL; the embedded database has no pooler')
  }
  if (databaseDirectUrl !== undefined && poolMode !== 'transaction') {
    throw new ConfigError('DATABASE_DIRECT_URL is for DATABASE_POOL_MODE=transaction: in session mode LISTEN goes through DATABASE_URL')
  }
  const operatorToken = parseSecret('OPERATOR_TOKEN', env.OPERATOR_TOKEN, MIN_OPERATOR_TOKEN_LENGTH)
  const metricsToken = parseSecret('METRICS_TOKEN', env.METRICS_TOKEN, MIN_METRICS_TOKEN_LENGTH)
  if (metricsToken !== undefined && metricsToken === operatorToken) {
    // It would be the master key under another name: whoever holds it could do everything the operator does.
    throw new ConfigError('METRICS_TOKEN must differ from OPERATOR_TOKEN: it is given to Prometheus, which must not hold the operator token')
  }
  return {
    port,
    metricsPort: parsePort('METRICS_PORT', env.METRICS_PORT) ?? DEFAULT_METRICS_PORT,
    host: nonEmpty('HOST', env.HOST) ?? '0.0.0.0',
    databaseUrl,
    poolMode,
    databaseDirectUrl,
    poolSize: parseCount('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, MAX_POOL_SIZE) ?? DEFAULT_POOL_SIZE,
    migrateOnStart: parseBoolean('MIGRATE_ON_START', env.MIGRATE_ON_START) ?? true,
    dataDir: parseDataDir(env.DATA_DIR),
    operatorToken,
    metricsToken,
    metricsLegacyNames: parseBoolean('METRICS_LEGACY_NAMES', env.METRICS_LEGACY_NAMES) ?? true,
    phoneHashKey: parseSecret('PHONE_HASH_KEY', env.PHONE_HASH_KEY, MIN_PHONE_HASH_KEY_LENGTH),
    logLevel: parseLogLevel(env.LOG_LEVEL),
    logFormat: parseLogFormat(env.LOG_FORMAT),
    publicBaseUrl: parseHttpUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL) ?? `http://localhost:${port}`,
    twilioApiBaseUrl: parseHttpUrl('TWILIO_API_BASE_URL', env.TWILIO_API_BASE_URL) ?? 'https://api.twilio.com',
    whatsappApiBaseUrl: parseHttpUrl('WHATSAPP_API_BASE_URL', env.WHATSAPP_API_BASE_URL) ?? 'https://graph.facebook.com',
    elevenlabsApiBaseUrl: parseHttpUrl('ELEVENLABS_API_BASE_URL', env.ELEVENLABS_API_BASE_URL) ?? 'https://api.elevenlabs.io',
    retellApiBaseUrl: parseHttpUrl('RETELL_API_BASE_URL', env.RETELL_API_BASE_URL) ?? 'https://api.retellai.com',
    vapiApiBaseUrl: parseHttpUrl('VAPI_API_BASE_URL', env.VAPI_API_BASE_URL) ?? 'https://api.vapi.ai',
    allowPrivateWebhookUrls: parseBoolean('ALLOW_PRIVATE_WEBHOOK_URLS', env.ALLOW_PRIVATE_WEBHOOK_URLS) ?? false,
    historyBounds: {
      endpointHealthDays: parseDays('ENDPOINT_HEALTH_RETENTION_DAYS', env.ENDPOINT_HEALTH_RETENTION_DAYS) ?? DEFAULT_HISTORY_BOUNDS.endpointHealthDays,
      auditLogDays: parseDays('AUDIT_LOG_RETENTION_DAYS', env.AUDIT_LOG_RETENTION_DAYS) ?? DEFAULT_HISTORY_BOUNDS.auditLogDays,
    },
  }
}

/** A whole number of days, from 1 to MAX_BOUND_DAYS. */
function parseDays(name: string, raw: string | undefined): number | undefined {
  const value = nonEmpty(name, raw)
  if (value === undefined) return undefined
  const days = Number(value)
  if (!/^\d+$/.test(value) || days < 1 || days > MAX_BOUND_DAYS) {
    throw new ConfigError(`${name} must be a whole number of days from 1 to ${MAX_BOUND_DAYS}, got ${JSON.stringify(raw)}`)
  }
  return days
}

function parseBoolean(name: string, raw: string | undefined): boolean | undefined {
  const value = nonEmpty(name, raw)?.toLowerCase()
  if (value === undefined) return undefined
  if (value === 'true') return true
  if (value === 'false') return false
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`)
}

/** An http(s) base URL, without a trailing slash. */
function parseHttpUrl(name: string, raw: string | undefined): string | undefined {
  const value = nonEmpty(name, raw)
  if (value === undefined) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name} is not a URL; expected https://host[:port][/path]`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name} must start with http:// or https://`)
  if (url.search !== '' || url.hash !== '') throw new ConfigError(`${name} must not have a query or fragment`)
  return value.replace(/\/+$/, '')
}

function nonEmpty(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined
  if (raw.trim() === '') throw new ConfigError(`${name} is set but empty; unset it or give it a value`)
  return raw.trim()
}

function parsePort(name: string, raw: string | undefined): number | undefined {
  const value = nonEmpty(name, raw)
  if (value === undefined) return undefined
  const port = Number(value)
  if (!/^\d+$/.test(value) || port < 0 || port > 65535) {
    throw new ConfigError(`${name} must be an integer from 0 to 65535, got ${JSON.stringify(raw)}`)
  }
  return port
}

function parseDatabaseUrl(name: string, raw: string | undefined): string | undefined {
  const value = nonEmpty(name, raw)
  if (value === undefined) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new ConfigError(`${name} is not a URL; expected postgres://user@host:port/database`)
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`${name} must start with postgres:// or postgresql://, got ${url.protocol}//`)
  }
  return value
}

function parsePoolMode(raw: string | undefined): PoolMode {
  const value = nonEmpty('DATABASE_POOL_MODE', raw)?.toLowerCase() ?? 'session'
  if (value !== 'session' && value !== 'transaction') {
    throw new ConfigError(`DATABASE_POOL_MODE must be session or transaction, got ${JSON.stringify(raw)}`)
  }
  return value
}

/** A whole number from 1 to `max`. */
function parseCount(name: string, raw: string | undefined, max: number): number | undefined {
  const value = nonEmpty(name, raw)
  if (value === undefined) return undefined
  const count = Number(value)
  if (!/^\d+$/.test(value) || count < 1 || count > max) throw new ConfigError(`${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(raw)}`)
  return count
}

function parseDataDir(raw: string | undefined): string {
  const value = nonEmpty('DATA_DIR', raw) ?? './data'
  return value === 'memory://' ? value : path.resolve(value)
}

function parseSecret(name: string, raw: string | undefined, minLength: number): string | undefined {
  const value = nonEmpty(name, raw)
  if (value !== undefined && value.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters long`)
  return value
}

function parseLogLevel(raw: string | undefined): LogLevel {
  const value = nonEmpty('LOG_LEVEL', raw)?.toLowerCase() ?? 'info'
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`)
  }
  return value as LogLevel
}

function parseLogFormat(raw: string | undefined): LogFormat {
  const value = nonEmpty('LOG_FORMAT', raw)?.toLowerCase() ?? 'auto'
  if (value !== 'json' && value !== 'pretty' && value !== 'auto') throw new ConfigError(`LOG_FORMAT must be json, pretty or auto, got ${JSON.stringify(raw)}`)
  return value
}
