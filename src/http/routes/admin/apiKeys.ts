import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { type ApiKey, type Scope, SCOPES } from '../../../domain/types.ts'
import { issueApiKey, listKeys, type Operations, revokeApiKey } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { actorOf, requireOperator } from '../../auth.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, notFound, OneOf, Timestamp, validationErrors } from '../../schemas.ts'
import { component } from '../../openapi.ts'

const ScopeSchema = OneOf(SCOPES)

export const ApiKeySchema = component('ApiKey', Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The public start of the key, to recognize it.' }),
  scopes: Type.Array(ScopeSchema),
  created_at: Timestamp,
  revoked_at: Type.Union([Timestamp, Type.Null()]),
}))

const IssuedKeySchema = component('IssuedApiKey', Type.Composite([
  ApiKeySchema,
  Type.Object({ key: Type.String({ description: 'The key itself. Shown in this response only; store it now.' }) }),
]))

export const IssueApiKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, description: 'What the key is for, e.g. the calling system.' }),
  scopes: Type.Optional(Type.Array(ScopeSchema, { maxItems: SCOPES.length, description: 'Default: triggers:write and triggers:read.' })),
})

export const presentKey = (key: ApiKey) => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  created_at: key.createdAt,
  revoked_at: key.revokedAt,
})

export function apiKeyRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator }) {
  const { ops, authenticator } = deps

  app.post(
    '/admin/v1/organizations/:org_id/api-keys',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'createApiKey',
        summary: 'Issue an API key',
        description: 'The response carries the key itself; it is stored only as a hash and cannot be shown again.',
        params: OrgParams,
        body: IssueApiKeyBody,
        response: { 201: Envelope(IssuedKeySchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const { apiKey, key } = await issueApiKey(ops, actorOf(request), org_id, request.body as { name: string; scopes?: Scope[] })
      return reply.code(201).send(envelope(request, { ...presentKey(apiKey), key }))
    },
  )

  app.get(
    '/admin/v1/organizations/:org_id/api-keys',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'listApiKeys',
        summary: "List an organization's API keys",
        description: 'Every key, revoked ones too, never the key itself.',
        params: OrgParams,
        response: { 200: Envelope(Type.Array(ApiKeySchema)), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, (await listKeys(ops, org_id)).map(presentKey)))
    },
  )

  app.delete(
    '/admin/v1/organizations/:org_id/api-keys/:key_id',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'Every process refuses the key (401) from its next request on.',
        params: Type.Object({ org_id: Type.String(), key_id: Type.String() }),
        response: { 204: Type.Null(), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id, key_id } = request.params as { org_id: string; key_id: string }
      await revokeApiKey(ops, actorOf(request), org_id, key_id)
      authenticator.forget(key_id)
      return reply.code(204).send()
    },
  )
}
