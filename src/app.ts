/**
 * buildApp assembles the HTTP application from a configuration and its
 * dependencies; it does not listen. The server, the CLI and the tests all
 * build it the same way.
 */
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from './domain/rateLimit.ts'
import { DEFAULT_HISTORY_BOUNDS, type HistoryBounds } from './domain/retention.ts'
import { installRateLimits } from './http/rateLimit.ts'
import { ServiceMetrics } from './services/metrics.ts'
import { RateLimiter } from './services/rateLimiter.ts'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TSchema } from '@sinclair/typebox'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import pino, { type DestinationStream } from 'pino'
import type { Channels } from './channels/index.ts'
import type { LogLevel } from './config.ts'
import { ValidationFailed } from './domain/errors.ts'
import { newId } from './domain/ids.ts'
import { accountRoutes } from './http/routes/account.ts'
import { adminRoutes } from './http/routes/admin/index.ts'
import { campaignPauseRoutes } from './http/routes/campaigns.ts'
import { consoleRoutes } from './http/routes/console.ts'
import { healthRoutes } from './http/routes/health.ts'
import { interactionRoutes } from './http/routes/interactions.ts'
import { callCallbackRoutes } from './http/routes/providers/callCallbacks.ts'
import { twilioRoutes } from './http/routes/providers/twilio.ts'
import { whatsappRoutes } from './http/routes/providers/whatsapp.ts'
import { metricsRoutes } from './http/routes/metrics.ts'
import { reachStatisticsRoutes } from './http/routes/reachStatistics.ts'
import { suppressionRoutes } from './http/routes/suppressions.ts'
import { consentRoutes } from './http/routes/consents.ts'
import { contactabilityRoutes } from './http/routes/contactability.ts'
import { contactRoutes } from './http/routes/contacts.ts'
import { dailyCountRoutes } from './http/routes/dailyCounts.ts'
import { taskRoutes } from './http/routes/tasks.ts'
import { webhookRoutes } from './http/routes/webhooks.ts'
import { triggerRoutes } from './http/routes/triggers.ts'
import { MAX_BODY_BYTES } from './http/limits.ts'
import { documentOptions } from './http/openapi.ts'
import { installErrorHandling, sendError } from './http/reply.ts'
import { SharedSchemas } from './http/schemas.ts'
import { installRequestSpans } from './http/tracing.ts'
import { createServices } from './services/index.ts'
import type { Database } from './store/database.ts'
import { tracing } from './tracing.ts'
import { createWorkers, type Workers } from './workers/index.ts'
import { parseJsonBody } from './validation/json.ts'
import { validate } from './validation/model.ts'

export interface AppOptions {
  operatorToken: string
  /** The scrape-only credential (METRICS_TOKEN): GET /metrics and nothing else. Without it only the operator token reads /metrics. */
  metricsToken?: string
  /** Whether /metrics also serves the metrics' unprefixed names of before, deprecated (METRICS_LEGACY_NAMES); false when absent. */
  metricsLegacyNames?: boolean
  /** The key of the digest an erased suppression keeps of its number (PHONE_HASH_KEY). */
  phoneHashKey: Buffer
  logLevel: LogLevel
  /** Webhook endpoints may be private or plain-http addresses (local development, tests). */
  allowPrivateWebhookUrls?: boolean
  /** Where log lines go; standard output, buffered, when absent. */
  logStream?: DestinationStream
  /** Whether this process builds the workers (dispatcher, deliverer); true unless it serves the API alone. */
  workers?: boolean
  /**
   * Whether this process serves the API; true unless it is a worker process,
   * which serves only what an operator asks of every process: /healthz,
   * /readyz and /metrics.
   */
  api?: boolean
  /** The rate limit of an organization whose own the operator has not set; DEFAULT_RATE_LIMIT when absent. */
  rateLimit?: RateLimitPolicy
  /** How often /metrics may read the queues from the database (QUEUE_READ_INTERVAL_MS when absent; tests read at every scrape). */
  metricsQueueReadIntervalMs?: number
  /** How long endpoint health and the audit log are kept; DEFAULT_HISTORY_BOUNDS when absent. */
  historyBounds?: HistoryBounds
  /** Where clients reach the service (PUBLIC_BASE_URL): the documents' server; a relative one when absent. */
  publicBaseUrl?: string
}

export interface AppDeps {
  db: Database
  channels: Channels
  /** Milliseconds since the epoch; injected so that tests control time. */
  now?: () => number
}

const MAX_REQUEST_ID_LENGTH = 200
/** Retry-After of a request refused while the process drains: another process behind the load balancer can take it at once. */
const SHUTDOWN_RETRY_AFTER_S = 1
/** How often, while the process drains, connections that have become idle are closed. */
const IDLE_CONNECTION_SWEEP_MS = 100

export async function buildApp(options: AppOptions, deps: AppDeps): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now
  const app = Fastify({
    logger: {
      level: options.logLevel,
      stream: options.logStream ?? bufferedStandardOutput(),
      // Request and response logs carry no headers or bodies, so no key,
      // token or phone number can reach a log line through them.
      serializers: {
        req: (req) => ({ method: req.method, url: req.url }),
        res: (res) => ({ statusCode: res.statusCode }),
        // Database errors carry the statement's parameters (PGlite) or the
        // text around a failure (PostgreSQL): contact data, never logged.
        err: (err: Error & { code?: unknown }) => ({ type: err.name, message: err.message, code: err.code, stack: err.stack ?? '' }),
      },
    },
    logController: new RequestLog({ requestIdLogLabel: 'request_id' }),
    genReqId: (req) => usableRequestId(req.headers['x-request-id']) ?? newId('request'),
    bodyLimit: MAX_BODY_BYTES,
    // Refused below with the API's own error body rather than Fastify's.
    return503OnClosing: false,
  })
  // First, so that the span covers every other hook's work.
  if (tracing.enabled) installRequestSpans(app)

  const metrics = new ServiceMetrics(deps.db, now, { queueReadIntervalMs: options.metricsQueueReadIntervalMs, legacyNames: options.metricsLegacyNames })
  const services = createServices({
    metrics,
    db: deps.db,
    channels: deps.channels,
    now,
    log: app.log,
    operatorToken: options.operatorToken,
    metricsToken: options.metricsToken,
    phoneHashKey: options.phoneHashKey,
    allowPrivateWebhookUrls: options.allowPrivateWebhookUrls ?? false,
    historyBounds: options.historyBounds ?? DEFAULT_HISTORY_BOUNDS,
  })
  const { authenticator } = services
  // A Vapi start says in this log which of a task's values its assistant did not receive.
  app.decorate('workers', options.workers === false ? undefined : createWorkers(services, app.log))
  // Answer every accepted trigger, then let the workers finish what they started, then every outcome they submitted.
  // Each step is logged as it begins: a drain that runs out of time (server.ts) names the step it was waiting for.
  app.addHook('onClose', async () => {
    app.log.info('shutdown: answering the triggers accepted')
    await services.intake.drained()
    await app.workers?.stop()
    app.log.info('shutdown: committing the outcomes submitted')
    await services.drained()
  })

  app.decorateRequest('principal', undefined)
  app.decorateRequest('principalConfirmed', false)
  app.decorateRequest('clearMaxConcurrent', false)
  installBodyParsing(app)
  installValidation(app)
  installErrorHandling(app, authenticator)
  const api = options.api !== false
  if (api) installRateLimits(app, new RateLimiter(deps.db, options.rateLimit ?? DEFAULT_RATE_LIMIT, now), metrics)
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
    done()
  })
  for (const schema of SharedSchemas) app.addSchema(schema)
  // Once the drain has begun, a request that still arrives on a kept-alive connection is refused
  // before anything of it is done, and every answer sent from then on, a refusal or that of a request
  // already in progress, closes its connection: the server's close waits for every open connection,
  // and a client keeping one alive (Fastify's keep-alive timeout is 72 s) would otherwise hold the
  // drain past SHUTDOWN_TIMEOUT_MS. The server closes the connections idle when its close begins; one
  // whose last answer was still being written then is idle a moment later, and is closed by the sweep.
  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_CONNECTION_SWEEP_MS).unref()
    app.server.once('close', () => clearInterval(sweep))
    done()
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    if (!closing) return done()
    reply.header('retry-after', String(SHUTDOWN_RETRY_AFTER_S))
    void sendError(request, reply, 'service_unavailable', 'The service is shutting down: send the request again, with the same Idempotency-Key, in a moment.')
  })

  // Registered first, so that it documents every route after it.
  if (api) await installDocumentation(app, options.publicBaseUrl)
  healthRoutes(app, { db: deps.db })
  metricsRoutes(app, { metrics, authenticator })
  if (!api) return app

  const { lifecycle, providerCallbacks } = services
  accountRoutes(app, { ops: services.admin, authenticator })
  triggerRoutes(app, { db: deps.db, authenticator, acceptance: services.acceptance })
  taskRoutes(app, { db: deps.db, authenticator, lifecycle })
  interactionRoutes(app, { authenticator, conversations: services.conversations, sessionMessages: services.sessionMessages })
  campaignPauseRoutes(app, { authenticator, pauses: services.pauses })
  webhookRoutes(app, { ops: services.webhooks, authenticator })
  suppressionRoutes(app, { ops: services.suppressions, authenticator })
  consentRoutes(app, { ops: services.consents, authenticator })
  contactabilityRoutes(app, { ops: services.contactability, authenticator })
  contactRoutes(app, { ops: services.erasure, authenticator })
  dailyCountRoutes(app, { db: deps.db, authenticator })
  reachStatisticsRoutes(app, { db: deps.db, authenticator })
  twilioRoutes(app, { twilioCalls: services.twilioCalls, twilioMessages: services.twilioMessages })
  await app.register(whatsappRoutes, { whatsapp: services.whatsappNotifications })
  await callCallbackRoutes(app, { callbacks: providerCallbacks, served: deps.channels.callCallbacks })
  adminRoutes(app, {
    ops: services.admin,
    authenticator,
    campaigns: services.campaigns,
    pauses: services.pauses,
    sources: services.sources,
    law: services.contactability.law,
    registries: services.registries,
  })
  await consoleRoutes(app)

  return app
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The workers, built unless `workers` is false (an API-only process) but
     * not started by buildApp: `serve` starts them; tests drive them round by round.
     */
    workers: Workers | undefined
    /** The admin API's OpenAPI document (`swagger` is the client API's). */
    adminSwagger: FastifyInstance['swagger']
  }
}

/**
 * The client API's OpenAPI document at /openapi.json with a readable reference
 * at /docs, and the operator's at /admin/openapi.json and /admin/docs.
 */
async function installDocumentation(app: FastifyInstance, publicBaseUrl: string | undefined) {
  await app.register(swagger, documentOptions('client', publicBaseUrl))
  await app.register(swagger, documentOptions('admin', publicBaseUrl))
  await app.register(swaggerUi, { routePrefix: '/docs' })
  // A scope of its own, where the reference's page reads the admin document rather than the client's.
  await app.register(async (scope) => {
    await scope.register(swaggerUi, { routePrefix: '/admin/docs', transformSpecification: () => app.adminSwagger(), transformSpecificationClone: false })
  })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  app.get('/admin/openapi.json', { schema: { hide: true } }, async () => app.adminSwagger())
}

/**
 * One log line per request, when it is answered, with the matched route
 * pattern rather than the URL (so no id from a path lands in the aggregate
 * views) and nothing from headers or bodies.
 */
class RequestLog extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const line = {
      method: request.method,
      route: request.routeOptions.url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    }
    if (error) request.log.error({ ...line, err: error }, 'request failed')
    else request.log.info(line, 'request')
  }
}

/**
 * Standard output written 4 KiB at a time rather than one system call per
 * line, and at least every second so that a quiet service's lines appear
 * promptly. What is left is written when the process exits, however it
 * exits short of a kill (pino does that only for a destination that is not
 * synchronous).
 *
 * Each 4 KiB write is made in this thread: handing it to libuv's thread pool
 * costs the process more in thread wake-ups and context switches than the
 * write itself (measured on a server held to one core). The price is that a
 * reader that stops reading holds the service back (pino retries a full pipe
 * every 100 ms) rather than letting unwritten lines grow its memory without
 * bound.
 */
function bufferedStandardOutput(): DestinationStream {
  const destination = pino.destination({ sync: true, minLength: 4096 })
  setInterval(() => destination.flush(), 1000).unref()
  process.once('exit', () => destination.flushSync())
  return destination
}

/** A client's X-Request-ID, when it is one we can echo and log safely. */
function usableRequestId(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_REQUEST_ID_LENGTH) return undefined
  return /[\x00-\x1f\x7f]/.test(header) ? undefined : header
}

/**
 * Bodies are read as text and decoded here, as FastAPI does: a JSON media
 * type (`application/json`, `application/*+json`) is parsed as JSON; any other
 * body, or one without a Content-Type (the spec requires it), is kept as text,
 * which the route's model then refuses as not an object. An empty body is no
 * body.
 */
function installBodyParsing(app: FastifyInstance) {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string
    if (text === '') return done(null, undefined)
    if (!isJsonMediaType(request.headers['content-type'])) return done(null, text)
    try {
      done(null, parseJsonBody(text))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}

/** Every route validates with pydantic's semantics, from the schema it declares. */
function installValidation(app: FastifyInstance) {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const root = httpPart === 'params' ? 'path' : httpPart === 'querystring' ? 'query' : (httpPart ?? 'body')
    return (data: unknown) => {
      const result = validate(schema as TSchema, data, [root])
      return result.errors.length > 0 ? { error: new ValidationFailed(result.errors) } : { value: result.value }
    }
  })
}

function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  // What nearly every client sends, settled without splitting and lowercasing it.
  if (contentType === 'application/json') return true
  const mediaType = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'))
}
