/** The audit log, for the operator: every change to an organization's setup, and every erasure. */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { AUDIT_ACTIONS, type AuditEntry } from '../../../domain/audit.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { auditLog, type AuditOperations } from '../../../services/auditTrail.ts'
import { requireOperator } from '../../auth.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, OneOf, Timestamp, validationErrors } from '../../schemas.ts'
import { adminDocs } from './shared.ts'
import { component } from '../../openapi.ts'

const MAX_PAGE = 500

const AuditEntrySchema = component('AuditLogEntry', Type.Object({
  id: Type.String({ description: 'Increasing: pass the last of a page as `before` for the next.' }),
  at: Timestamp,
  organization_id: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String({ description: "'operator', or the id of the API key that made the change." }),
  address: Type.Union([Type.String(), Type.Null()], { description: "The caller's IP address; null from the command line." }),
  action: OneOf(AUDIT_ACTIONS),
  target: Type.String({
    description: "What changed: an id (a campaign's, a key's, an endpoint's...), a source's name, a suppressed number (its digest once erased), or the person erased (their id, or their number's digest).",
  }),
  details: Type.Record(Type.String(), Type.Unknown(), {
    description: "What was asked, never a secret: an endpoint's URL by its origin only, an erasure by the counts it answered.",
  }),
}))

const AuditQuery = Type.Object({
  organization_id: Type.Optional(Type.String({ maxLength: 40, description: "Only this organization's entries." })),
  before: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$', description: 'Entries older than this one (an id).' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: `At most this many (default 100, at most ${MAX_PAGE}).` })),
})

const present = (entry: AuditEntry): Static<typeof AuditEntrySchema> => ({
  id: entry.id,
  at: entry.at,
  organization_id: entry.orgId,
  actor: entry.actor.id,
  address: entry.actor.address,
  action: entry.action,
  target: entry.target,
  details: entry.details,
})

export function auditLogRoutes(app: FastifyInstance, deps: { ops: AuditOperations; authenticator: Authenticator }) {
  app.get(
    '/admin/v1/audit-log',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'listAuditLogEntries',
        summary: 'Read the audit log',
        description: "Changes to organizations, keys, campaigns, sources, suppressions and webhook endpoints, by the operator or an organization's key, and erasures: newest first.",
        ...adminDocs,
        querystring: AuditQuery,
        response: { 200: Envelope(Type.Array(AuditEntrySchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { organization_id, before, limit } = request.query as Static<typeof AuditQuery>
      const entries = await auditLog(deps.ops, { orgId: organization_id, before, limit: limit ?? 100 })
      return reply.send(envelope(request, entries.map(present)))
    },
  )
}
