import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Organization } from '../../../domain/types.ts'
import { createOrganization, listOrganizations, type Operations, requireOrganization } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { requireOperator } from '../../auth.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, notFound, Timestamp, validationErrors } from '../../schemas.ts'

export const OrganizationSchema = Type.Object({ id: Type.String(), name: Type.String(), created_at: Timestamp })

export const CreateOrganizationBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) })

const MAX_ORGANIZATIONS = 1000

const ListOrganizationsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ORGANIZATIONS, description: `At most this many (default 100, at most ${MAX_ORGANIZATIONS}).` })),
})

export const presentOrganization = (org: Organization) => ({ id: org.id, name: org.name, created_at: org.createdAt })

export function organizationRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator }) {
  app.post(
    '/admin/v1/organizations',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        summary: 'Create an organization',
        ...adminDocs,
        body: CreateOrganizationBody,
        response: { 201: Envelope(OrganizationSchema), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { name } = request.body as { name: string }
      const organization = await createOrganization(deps.ops, name)
      return reply.code(201).send(envelope(request, presentOrganization(organization)))
    },
  )

  app.get(
    '/admin/v1/organizations',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        summary: 'List organizations',
        description: 'The newest first.',
        ...adminDocs,
        querystring: ListOrganizationsQuery,
        response: { 200: Envelope(Type.Array(OrganizationSchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { limit } = request.query as { limit?: number }
      const organizations = await listOrganizations(deps.ops, limit ?? 100)
      return reply.send(envelope(request, organizations.map(presentOrganization)))
    },
  )

  app.get(
    '/admin/v1/organizations/:org_id',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        summary: 'Look up an organization',
        ...adminDocs,
        params: OrgParams,
        response: { 200: Envelope(OrganizationSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, presentOrganization(await requireOrganization(deps.ops, org_id))))
    },
  )
}
