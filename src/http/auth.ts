/**
 * Route guards. Each endpoint says which credential it accepts: the client
 * API takes an organization key with a given scope, the admin API the
 * operator token, /metrics the metrics token or the operator token. A
 * missing, unknown or revoked credential is 401; a valid one that is not
 * accepted here, or lacks the scope, is 403.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { type Actor, OPERATOR } from '../domain/audit.ts'
import { ApiError } from '../domain/errors.ts'
import type { Scope } from '../domain/types.ts'
import { type Authenticator, type OrganizationPrincipal, type Principal, unauthorized } from '../services/authenticator.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined
    /**
     * False while the principal comes only from the key cache: the key may
     * have been revoked by another process since. Whatever answers such a
     * request must confirm the key first, or record only if it is unrevoked.
     */
    principalConfirmed: boolean
  }
}

/**
 * Accepts an organization key with `scope`, or with any one of several (any
 * live key for 'any'). With `confirm: 'deferred'` the
 * key is not confirmed here: the trigger route's commit records a trigger only
 * for an unrevoked key, and any error answer confirms it first (see
 * {@link confirmBeforeAnswering}), so its hot path makes no extra round trip.
 */
export function requireOrganizationKey(
  authenticator: Authenticator,
  scope: Scope | readonly Scope[] | 'any',
  options: { confirm: 'now' | 'deferred' } = { confirm: 'now' },
): onRequestHookHandler {
  const accepted: readonly Scope[] | undefined = scope === 'any' ? undefined : typeof scope === 'string' ? [scope] : scope
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticator.identify(request.headers.authorization)
    if (principal === undefined) throw unauthorized()
    if (principal.kind === 'operator') {
      throw new ApiError('forbidden', 'The operator token is not accepted on the client API; use an organization API key.')
    }
    if (principal.kind === 'scraper') throw metricsTokenElsewhere()
    request.principal = principal
    if (accepted !== undefined && !accepted.some((each) => principal.scopes.includes(each))) {
      await confirmBeforeAnswering(authenticator, request)
      throw new ApiError('forbidden', `This API key lacks the scope ${accepted.join(' (or ')}${accepted.length > 1 ? ')' : ''}.`)
    }
    if (options.confirm === 'now') await confirmBeforeAnswering(authenticator, request)
  }
}

export function requireOperator(authenticator: Authenticator): onRequestHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticator.identify(request.headers.authorization)
    if (principal === undefined) throw unauthorized()
    if (principal.kind === 'scraper') throw metricsTokenElsewhere()
    request.principal = principal
    request.principalConfirmed = principal.kind === 'operator'
    if (principal.kind !== 'operator') {
      await confirmBeforeAnswering(authenticator, request)
      throw new ApiError('forbidden', 'Organization API keys are not accepted on the admin API; use the operator token.')
    }
  }
}

/** Accepts the metrics token or the operator token: GET /metrics alone takes this guard. */
export function requireMetricsReader(authenticator: Authenticator): onRequestHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticator.identify(request.headers.authorization)
    if (principal === undefined) throw unauthorized()
    request.principal = principal
    request.principalConfirmed = principal.kind !== 'organization'
    if (principal.kind === 'organization') {
      await confirmBeforeAnswering(authenticator, request)
      throw new ApiError('forbidden', 'Organization API keys are not accepted on /metrics; use the metrics token (METRICS_TOKEN) or the operator token.')
    }
  }
}

const metricsTokenElsewhere = () => new ApiError('forbidden', 'The metrics token is accepted on GET /metrics only.')

/** Confirms the request's key with the database, unless done already; throws 401 if it was revoked. */
export async function confirmBeforeAnswering(authenticator: Authenticator, request: FastifyRequest): Promise<void> {
  const principal = request.principal
  if (principal === undefined || request.principalConfirmed) return
  if (!(await authenticator.confirm(principal))) throw unauthorized()
  request.principalConfirmed = true
}

export function organizationOf(request: FastifyRequest): OrganizationPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'organization') throw new Error('route is not guarded by requireOrganizationKey')
  return principal
}

/** Who makes a change through this request, for the audit log: the operator or the request's key, and its address. */
export function actorOf(request: FastifyRequest): Actor {
  const principal = request.principal
  if (principal === undefined || principal.kind === 'scraper') throw new Error('route is not guarded for a change')
  return { id: principal.kind === 'operator' ? OPERATOR : principal.keyId, address: request.ip }
}
