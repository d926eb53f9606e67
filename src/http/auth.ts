/**
 * Route guards. Each endpoint says which credential it accepts: the client
 * API takes an organization key with a given scope, the admin API the
 * operator token. A missing or unknown credential is 401; a valid one that is
 * not accepted here, or lacks the scope, is 403.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { ApiError } from '../domain/errors.ts'
import type { Scope } from '../domain/types.ts'
import type { Authenticator, Principal } from '../services/authenticator.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined
  }
}

export type OrganizationPrincipal = Extract<Principal, { kind: 'organization' }>

const unauthorized = () => new ApiError('unauthorized', 'Send a valid API key as "Authorization: Bearer <API_KEY>".')

/**
 * Accepts an organization key with `scope`. With `confirm: 'deferred'` the
 * route itself confirms the key: the trigger route does it inside its commit,
 * so that its hot path makes no extra database round trip.
 */
export function requireOrganizationKey(
  authenticator: Authenticator,
  scope: Scope,
  options: { confirm: 'now' | 'deferred' } = { confirm: 'now' },
): onRequestHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticator.identify(request.headers.authorization)
    if (principal === undefined) throw unauthorized()
    if (principal.kind === 'operator') {
      throw new ApiError('forbidden', 'The operator token is not accepted on the client API; use an organization API key.')
    }
    if (!principal.scopes.includes(scope) || options.confirm === 'now') await confirmPrincipal(authenticator, principal)
    if (!principal.scopes.includes(scope)) throw new ApiError('forbidden', `This API key lacks the scope ${scope}.`)
    request.principal = principal
  }
}

export function requireOperator(authenticator: Authenticator): onRequestHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const principal = await authenticator.identify(request.headers.authorization)
    if (principal === undefined) throw unauthorized()
    if (principal.kind !== 'operator') {
      await confirmPrincipal(authenticator, principal)
      throw new ApiError('forbidden', 'Organization API keys are not accepted on the admin API; use the operator token.')
    }
    request.principal = principal
  }
}

/** Throws 401 when the principal's key has been revoked since it was cached. */
export async function confirmPrincipal(authenticator: Authenticator, principal: Principal): Promise<void> {
  if (!(await authenticator.confirm(principal))) throw unauthorized()
}

export function organizationOf(request: FastifyRequest): OrganizationPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'organization') throw new Error('route is not guarded by requireOrganizationKey')
  return principal
}
