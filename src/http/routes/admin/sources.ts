/** Sources on the admin API: the systems an organization's ids come from, and their rules. */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Source } from '../../../domain/types.ts'
import {
  changeSource,
  createSource,
  listOrganizationSources,
  type Operations,
  removeSource,
  type SourceInput,
} from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import type { SourceDirectory } from '../../../services/sourceDirectory.ts'
import { actorOf, requireOperator } from '../../auth.ts'
import { envelope } from '../../reply.ts'
import { authErrors, conflict, Envelope, notFound, OneOf, Timestamp, validationErrors } from '../../schemas.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { component } from '../../openapi.ts'

const Name = Type.String({ minLength: 1, maxLength: 100 })
const ContactRule = OneOf(['required', 'optional'] as const)

const SourceSchema = component('Source', Type.Object({
  name: Type.String(),
  id_types: Type.Array(Type.String()),
  contact: ContactRule,
  required_context: Type.Array(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
}))

const rules = {
  id_types: Type.Array(Name, { maxItems: 50, description: 'The id types triggers may cite with this source (lowercased).' }),
  contact: Type.Optional({
    ...ContactRule,
    description:
      'Default required. optional is kept for the contact directory, which is to let a trigger leave `contact` out when one of its ids of this source names a known contact; until then every trigger needs `contact`.',
  }),
  required_context: Type.Optional(Type.Array(Name, { maxItems: 50, description: 'Context keys a trigger citing this source must send.' })),
}

export const CreateSourceBody = Type.Object({ name: { ...Name, description: 'As triggers send it in ids[].source (lowercased).' }, ...rules })
export const ChangeSourceBody = Type.Object({ ...rules, id_types: Type.Optional(rules.id_types) })

export const presentSource = (source: Source) => ({
  name: source.name,
  id_types: source.idTypes,
  contact: source.contact,
  required_context: source.requiredContext,
  created_at: source.createdAt,
  updated_at: source.updatedAt,
})

export function sourceRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator; sources: SourceDirectory }) {
  const { ops, authenticator, sources } = deps
  const base = '/admin/v1/organizations/:org_id/sources'
  const oneSource = Type.Object({ org_id: Type.String(), name: Type.String() })

  app.post(
    base,
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'createSource',
        summary: 'Create a source',
        description: "Once an organization has sources, every trigger's ids must cite one of them, with a type it allows, and carry the context keys it requires.",
        params: OrgParams,
        body: CreateSourceBody,
        response: { 201: Envelope(SourceSchema), ...authErrors, ...notFound, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const source = await createSource(ops, actorOf(request), org_id, request.body as SourceInput)
      sources.forget(org_id)
      return reply.code(201).send(envelope(request, presentSource(source)))
    },
  )

  app.get(
    base,
    {
      onRequest: requireOperator(authenticator),
      schema: { ...adminDocs, operationId: 'listSources', summary: "List an organization's sources", description: 'Every source with its rules.', params: OrgParams, response: { 200: Envelope(Type.Array(SourceSchema)), ...authErrors, ...notFound } },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, (await listOrganizationSources(ops, org_id)).map(presentSource)))
    },
  )

  app.patch(
    `${base}/:name`,
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'updateSource',
        summary: "Change a source's rules",
        description: 'Only the fields sent change.',
        params: oneSource,
        body: ChangeSourceBody,
        response: { 200: Envelope(SourceSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id, name } = request.params as { org_id: string; name: string }
      const source = await changeSource(ops, actorOf(request), org_id, name, request.body as Partial<SourceInput>)
      sources.forget(org_id)
      return reply.send(envelope(request, presentSource(source)))
    },
  )

  app.delete(
    `${base}/:name`,
    {
      onRequest: requireOperator(authenticator),
      schema: { ...adminDocs, operationId: 'deleteSource', summary: 'Delete a source', description: 'Ids citing it are then refused as any source not set up is, while the organization has others; with none left, any source is accepted.', params: oneSource, response: { 204: Type.Null(), ...authErrors, ...notFound } },
    },
    async (request, reply) => {
      const { org_id, name } = request.params as { org_id: string; name: string }
      await removeSource(ops, actorOf(request), org_id, name)
      sources.forget(org_id)
      return reply.code(204).send()
    },
  )
}
