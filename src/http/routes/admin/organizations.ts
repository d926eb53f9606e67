import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Organization } from '../../../domain/types.ts'
import { createOrganization, type Operations } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { requireOperator } from '../../auth.ts'
import { adminDocs } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, Timestamp, validationErrors } from '../../schemas.ts'

export const OrganizationSchema = Type.Object({ id: Type.String(), name: Type.String(), created_at: Timestamp })

export const CreateOrganizationBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) })

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
}
