/**
 * The rate limit on the client API (/api/v2), per organization: checked once
 * the key is known and the body read, before anything else of the request is
 * done, so that a refused request costs nothing more. Every answer to a
 * request whose key is known carries the IETF RateLimit-Policy and RateLimit
 * fields; a refusal is 429 `rate_limited` with Retry-After.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { rateLimitField, rateLimitPolicyField, retryAfterSeconds } from '../domain/rateLimit.ts'
import type { ServiceMetrics } from '../services/metrics.ts'
import type { Admission, RateLimiter } from '../services/rateLimiter.ts'
import { sendError } from './reply.ts'
import { rateLimited } from './schemas.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The tokens a request of this route takes (default 1): a batch, one per trigger. */
    rateLimitCost?: (request: FastifyRequest) => number
  }
  interface FastifyRequest {
    rateLimit: Admission | undefined
  }
}

export function installRateLimits(app: FastifyInstance, limiter: RateLimiter, metrics: ServiceMetrics) {
  app.decorateRequest('rateLimit', undefined)
  // Every client route may answer 429: said once here rather than by each route.
  app.addHook('onRoute', (route) => {
    const responses = route.schema?.response as Record<number, unknown> | undefined
    if (route.url.startsWith('/api/v2/') && responses !== undefined) responses[429] = rateLimited[429]
  })
  app.addHook('preValidation', (request, reply, done) => {
    const principal = request.principal
    if (principal?.kind !== 'organization' || !request.routeOptions.url?.startsWith('/api/v2/')) return done()
    const cost = request.routeOptions.config.rateLimitCost?.(request) ?? 1
    const decide = (admission: Admission) => {
      request.rateLimit = admission
      if (admission.allowed) return done()
      metrics.rateLimited.inc()
      const retryAfterS = retryAfterSeconds(admission.waitMs)
      reply.header('retry-after', String(retryAfterS))
      void sendError(request, reply, 'rate_limited', `This organization's rate limit is ${admission.policy.perSecond} requests a second (bursts of ${admission.policy.burst}); send this one again in ${retryAfterS} s.`)
    }
    const admission = limiter.admit(principal.orgId, cost)
    if (admission instanceof Promise) admission.then(decide, done)
    else decide(admission)
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    const tell = (admission: Admission) => {
      reply.header('ratelimit-policy', rateLimitPolicyField(admission.policy))
      reply.header('ratelimit', rateLimitField(admission.policy, admission.remaining))
      done(null, payload)
    }
    if (request.rateLimit !== undefined) return tell(request.rateLimit)
    // A request refused before the limit is checked (a scope the key lacks, a body too large or unreadable) by a
    // key that was confirmed counts as one: it cost the service a request, and its answer says where the
    // organization stands like any other answer to a known key.
    const principal = request.principal
    if (principal?.kind !== 'organization' || !request.principalConfirmed || !request.routeOptions.url?.startsWith('/api/v2/')) return done(null, payload)
    const admission = limiter.admit(principal.orgId, 1)
    if (admission instanceof Promise) admission.then(tell, done)
    else tell(admission)
  })
}
