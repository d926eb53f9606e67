/** Configuration is read once from the environment; a bad value stops start-up with one clear line. */
import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.ts'

test('defaults', () => {
  assert.deepEqual(loadConfig({}), {
    port: 8080,
    metricsPort: 9464,
    host: '0.0.0.0',
    databaseUrl: undefined,
    poolMode: 'session',
    databaseDirectUrl: undefined,
    poolSize: 10,
    migrateOnStart: true,
    dataDir: path.resolve('./data'),
    operatorToken: undefined,
    metricsToken: undefined,
    metricsLegacyNames: true,
    phoneHashKey: undefined,
    logLevel: 'info',
    logFormat: 'auto',
    publicBaseUrl: 'http://localhost:8080',
    twilioApiBaseUrl: 'https://api.twilio.com',
    whatsappApiBaseUrl: 'https://graph.facebook.com',
    elevenlabsApiBaseUrl: 'https://api.elevenlabs.io',
    retellApiBaseUrl: 'https://api.retellai.com',
    vapiApiBaseUrl: 'https://api.vapi.ai',
    allowPrivateWebhookUrls: false,
    historyBounds: { endpointHealthDays: 90, auditLogDays: 730 },
  })
})

test('reads every variable', () => {
  const config = loadConfig({
    PORT: '9000',
    METRICS_PORT: '9100',
    HOST: '127.0.0.1',
    DATABASE_URL: 'postgresql://app@db:5432/triggers',
    DATABASE_POOL_MODE: 'Transaction',
    DATABASE_DIRECT_URL: 'postgresql://app@db-direct:5432/triggers',
    DATABASE_POOL_SIZE: '25',
    MIGRATE_ON_START: 'false',
    DATA_DIR: 'memory://',
    OPERATOR_TOKEN: 'o'.repeat(32),
    METRICS_TOKEN: 'm'.repeat(24),
    METRICS_LEGACY_NAMES: 'False',
    PHONE_HASH_KEY: 'k'.repeat(32),
    LOG_LEVEL: 'WARN',
    LOG_FORMAT: 'Pretty',
    PUBLIC_BASE_URL: 'https://triggers.example.com/',
    TWILIO_API_BASE_URL: 'http://127.0.0.1:9001',
    WHATSAPP_API_BASE_URL: 'http://127.0.0.1:9002/graph',
    ELEVENLABS_API_BASE_URL: 'http://127.0.0.1:9003',
    RETELL_API_BASE_URL: 'http://127.0.0.1:9003/retell',
    VAPI_API_BASE_URL: 'http://127.0.0.1:9003/vapi',
    ALLOW_PRIVATE_WEBHOOK_URLS: 'TRUE',
    ENDPOINT_HEALTH_RETENTION_DAYS: '30',
    AUDIT_LOG_RETENTION_DAYS: '3650',
  })
  assert.deepEqual(config, {
    port: 9000,
    metricsPort: 9100,
    host: '127.0.0.1',
    databaseUrl: 'postgresql://app@db:5432/triggers',
    poolMode: 'transaction',
    databaseDirectUrl: 'postgresql://app@db-direct:5432/triggers',
    poolSize: 25,
    migrateOnStart: false,
    dataDir: 'memory://',
    operatorToken: 'o'.repeat(32),
    metricsToken: 'm'.repeat(24),
    metricsLegacyNames: false,
    phoneHashKey: 'k'.repeat(32),
    logLevel: 'warn',
    logFormat: 'pretty',
    publicBaseUrl: 'https://triggers.example.com',
    twilioApiBaseUrl: 'http://127.0.0.1:9001',
    whatsappApiBaseUrl: 'http://127.0.0.1:9002/graph',
    elevenlabsApiBaseUrl: 'http://127.0.0.1:9003',
    retellApiBaseUrl: 'http://127.0.0.1:9003/retell',
    vapiApiBaseUrl: 'http://127.0.0.1:9003/vapi',
    allowPrivateWebhookUrls: true,
    historyBounds: { endpointHealthDays: 30, auditLogDays: 3650 },
  })
})

for (const [env, pattern] of [
  [{ PORT: 'eighty' }, /^PORT must be an integer from 0 to 65535, got "eighty"$/],
  [{ PORT: '70000' }, /^PORT must be/],
  [{ PORT: '' }, /^PORT is set but empty/],
  [{ METRICS_PORT: '-1' }, /^METRICS_PORT must be an integer from 0 to 65535, got "-1"$/],
  [{ DATABASE_URL: 'mysql://x@y/z' }, /^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//],
  [{ DATABASE_URL: 'not a url' }, /^DATABASE_URL is not a URL/],
  [{ DATABASE_URL: 'postgres://db/x', DATABASE_POOL_MODE: 'statement' }, /^DATABASE_POOL_MODE must be session or transaction, got "statement"$/],
  [{ DATABASE_POOL_MODE: 'transaction' }, /^DATABASE_POOL_MODE and DATABASE_DIRECT_URL go with DATABASE_URL/],
  [{ DATABASE_URL: 'postgres://db/x', DATABASE_DIRECT_URL: 'postgres://db-direct/x' }, /^DATABASE_DIRECT_URL is for DATABASE_POOL_MODE=transaction/],
  [{ DATABASE_URL: 'postgres://db/x', DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: 'http://db/x' }, /^DATABASE_DIRECT_URL must start with postgres:\/\//],
  [{ DATABASE_POOL_SIZE: '0' }, /^DATABASE_POOL_SIZE must be a whole number from 1 to 500, got "0"$/],
  [{ OPERATOR_TOKEN: 'short' }, /^OPERATOR_TOKEN must be at least 24 characters long$/],
  [{ METRICS_TOKEN: 'm'.repeat(23) }, /^METRICS_TOKEN must be at least 24 characters long$/],
  [{ OPERATOR_TOKEN: 'o'.repeat(24), METRICS_TOKEN: 'o'.repeat(24) }, /^METRICS_TOKEN must differ from OPERATOR_TOKEN/],
  [{ METRICS_LEGACY_NAMES: 'both' }, /^METRICS_LEGACY_NAMES must be true or false, got "both"$/],
  [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/],
  [{ LOG_FORMAT: 'xml' }, /^LOG_FORMAT must be json, pretty or auto, got "xml"$/],
  [{ PUBLIC_BASE_URL: 'triggers.example.com' }, /^PUBLIC_BASE_URL is not a URL/],
  [{ TWILIO_API_BASE_URL: 'ftp://twilio' }, /^TWILIO_API_BASE_URL must start with http:\/\/ or https:\/\//],
  [{ WHATSAPP_API_BASE_URL: 'https://graph.facebook.com?x=1' }, /^WHATSAPP_API_BASE_URL must not have a query or fragment$/],
  [{ ALLOW_PRIVATE_WEBHOOK_URLS: 'yes' }, /^ALLOW_PRIVATE_WEBHOOK_URLS must be true or false, got "yes"$/],
  [{ ENDPOINT_HEALTH_RETENTION_DAYS: '0' }, /^ENDPOINT_HEALTH_RETENTION_DAYS must be a whole number of days from 1 to 3650, got "0"$/],
  [{ AUDIT_LOG_RETENTION_DAYS: '2 years' }, /^AUDIT_LOG_RETENTION_DAYS must be a whole number of days from 1 to 3650, got "2 years"$/],
] as const) {
  test(`refuses ${JSON.stringify(env)}`, () => {
    assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && pattern.test(error.message))
  })
}

test('a database URL is never echoed into the message (it may hold a password)', () => {
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'mysql://user:s3cret@host/db' }),
    (error: unknown) => error instanceof Error && !error.message.includes('s3cret'),
  )
})
