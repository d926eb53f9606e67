/**
 * Resources offered twice with the same handlers: to an organization under
 * /api/v2 (its own, with a key's scope) and to the operator under
 * /admin/v1/organizations/{org_id} (any organization that exists).
 */
import { type TString, Type } from '@sinclair/typebox'
import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { ApiError } from '../../domain/errors.ts'
import { isId } from '../../domain/ids.ts'
import type { Scope } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Database } from '../../store/database.ts'
import { findOrganization } from '../../store/organizations.ts'
import { organizationOf, requireOperator, requireOrganizationKey } from '../auth.ts'

export interface Audience {
  /** The operator's (admin) routes rather than the organization's own. */
  operator: boolean
  /** Path prefix: /api/v2 or /admin/v1/organizations/:org_id */
  prefix: string
  docs: { tags: string[]; security: { [name: string]: string[] }[] }
  /** A route's operation id in this audience's document: the client's verb, or the operator's twin of it (adminListEvents). */
  operationId: (clientOperationId: string) => string
  /** The prefix's path parameters. */
  params: Record<string, TString>
  /** The guard for a given client scope; the operator's token passes them all. */
  guard: (scope: Scope) => onRequestHookHandler
  /** The organization addressed; for the operator, one that exists. */
  orgId: (request: FastifyRequest) => Promise<string>
}

export function audiences(deps: { db: Database; authenticator: Authenticator }, tag: string): Audience[] {
  const { db, authenticator } = deps
  const operatorGuard = requireOperator(authenticator)
  const client: Audience = {
    operator: false,
    prefix: '/api/v2',
    docs: { tags: [tag], security: [{ apiKey: [] }] },
    params: {},
    operationId: (clientOperationId) => clientOperationId,
    guard: (scope) => requireOrganizationKey(authenticator, scope),
    orgId: async (request) => organizationOf(request).orgId,
  }
  const operator: Audience = {
    operator: true,
    prefix: '/admin/v1/organizations/:org_id',
    docs: { tags: ['admin'], security: [{ operatorToken: [] }] },
    params: { org_id: Type.String() },
    operationId: (clientOperationId) => `admin${clientOperationId[0]!.toUpperCase()}${clientOperationId.slice(1)}`,
    guard: () => operatorGuard,
    orgId: async (request) => {
      const { org_id } = request.params as { org_id: string }
      const organization = isId('organization', org_id) ? await findOrganization(db, org_id) : undefined
      if (organization === undefined) throw new ApiError('not_found', `No organization ${org_id} exists.`)
      return org_id
    },
  }
  return [client, operator]
}
