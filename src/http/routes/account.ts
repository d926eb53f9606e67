/**
 * What a client is, seen from its own key: the key it calls with (name,
 * scopes) and its organization. The console reads it to sign a key in and
 * to offer only what the key may do.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { describeKey, type Operations } from '../../services/administration.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import { organizationOf, requireOrganizationKey } from '../auth.ts'
import { envelope } from '../reply.ts'
import { authErrors, Envelope } from '../schemas.ts'
import { ApiKeySchema, presentKey } from './admin/apiKeys.ts'
import { OrganizationSchema, presentOrganization } from './admin/organizations.ts'

export function accountRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator }) {
  app.get(
    '/api/v2/key',
    {
      onRequest: requireOrganizationKey(deps.authenticator, 'any'),
      schema: {
        operationId: 'getCallingKey',
        summary: 'Describe the calling key',
        description: 'The API key the request was sent with (never the key itself) and its organization. Any live key may read it, whatever its scopes.',
        tags: ['account'],
        security: [{ apiKey: [] }],
        response: { 200: Envelope(Type.Composite([ApiKeySchema, Type.Object({ organization: OrganizationSchema })])), ...authErrors },
      },
    },
    async (request, reply) => {
      const { orgId, keyId } = organizationOf(request)
      const { apiKey, organization } = await describeKey(deps.ops, orgId, keyId)
      return reply.send(envelope(request, { ...presentKey(apiKey), organization: presentOrganization(organization) }))
    },
  )
}
