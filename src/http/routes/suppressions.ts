/**
 * Opt-out: the numbers an organization must not contact again, on any
 * channel (scope suppressions:manage, and the operator). A task for a
 * suppressed number completes as opted_out instead of dialling.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { ApiError, refuse, ValidationFailed, valueError } from '../../domain/errors.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Database } from '../../store/database.ts'
import { findSuppression, listSuppressions, type Suppression, suppress, unsuppress } from '../../store/suppressions.ts'
import { refine } from '../../validation/model.ts'
import { envelope } from '../reply.ts'
import { authErrors, conflict, Envelope, notFound, OneOf, Timestamp, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'

const MAX_PAGE = 1_000

const SuppressionSchema = Type.Object({
  phone: Type.String({ description: 'E.164.' }),
  reason: OneOf(['manual', 'reply', 'provider'] as const),
  created_at: Timestamp,
})

const present = (suppression: Suppression) => ({ phone: suppression.phone, reason: suppression.reason, created_at: suppression.createdAt })

/** A number in a path, in any form a trigger accepts (URL-encoded `+`), as its E.164. */
function phoneOf(raw: string): string {
  const phone = normalizePhone(raw)
  if (phone === null) throw new ValidationFailed([valueError(['path', 'phone'], raw, PHONE_REFUSED)])
  return phone
}

export function suppressionRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator; now: () => number }) {
  const { db, now } = deps
  for (const audience of audiences(deps, 'suppressions')) {
    const { prefix, docs, params } = audience
    const guard = audience.guard('suppressions:manage')
    const onePhone = Type.Object({ ...params, phone: Type.String({ description: 'E.164; the + URL-encoded as %2B.' }) })

    app.post(
      `${prefix}/suppressions`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          summary: 'Suppress a phone number',
          description: 'The organization never contacts it again, on any channel; its tasks complete as opted_out. Adding it twice is harmless.',
          params: Type.Object(params),
          body: Type.Object({
            phone: refine(Type.String({ maxLength: 64, examples: ['+44 20 7946 0958'] }), {
              check: (phone) => normalizePhone(phone) ?? refuse(PHONE_REFUSED),
            }),
          }),
          response: { 201: Envelope(SuppressionSchema), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const orgId = await audience.orgId(request)
        const { phone } = request.body as { phone: string }
        await suppress(db, orgId, phone, 'manual', now())
        return reply.code(201).send(envelope(request, present((await findSuppression(db, orgId, phone))!)))
      },
    )

    app.get(
      `${prefix}/suppressions`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          summary: 'List suppressed phone numbers',
          description: `By number, after \`after\`, at most \`limit\` (${MAX_PAGE}).`,
          params: Type.Object(params),
          querystring: Type.Object({
            after: Type.Optional(Type.String({ maxLength: 20 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE })),
          }),
          response: { 200: Envelope(Type.Array(SuppressionSchema)), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const { after, limit } = request.query as { after?: string; limit?: number }
        const page = await listSuppressions(db, await audience.orgId(request), { after, limit: limit ?? MAX_PAGE })
        return reply.send(envelope(request, page.map(present)))
      },
    )

    app.get(
      `${prefix}/suppressions/:phone`,
      {
        onRequest: guard,
        schema: { ...docs, summary: 'Is a number suppressed?', params: onePhone, response: { 200: Envelope(SuppressionSchema), ...authErrors, ...notFound } },
      },
      async (request, reply) => {
        const orgId = await audience.orgId(request)
        const phone = phoneOf((request.params as { phone: string }).phone)
        const suppression = await findSuppression(db, orgId, phone)
        if (suppression === undefined) throw new ApiError('not_found', `${phone} is not suppressed.`)
        return reply.send(envelope(request, present(suppression)))
      },
    )

    app.delete(
      `${prefix}/suppressions/:phone`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          summary: 'Lift a suppression',
          description:
            'Only when the person has asked to be contacted again. An organization may lift what it added itself (reason manual); a number that opted out by reply or through its provider only the operator can.',
          params: onePhone,
          response: { 204: Type.Null(), ...authErrors, ...notFound, ...conflict },
        },
      },
      async (request, reply) => {
        const orgId = await audience.orgId(request)
        const phone = phoneOf((request.params as { phone: string }).phone)
        const suppression = await findSuppression(db, orgId, phone)
        if (suppression === undefined) throw new ApiError('not_found', `${phone} is not suppressed.`)
        if (suppression.reason !== 'manual' && !audience.operator) {
          throw new ApiError('conflict', `${phone} opted out itself (${suppression.reason}); only the operator can lift that, on the person's request.`)
        }
        await unsuppress(db, orgId, phone)
        return reply.code(204).send()
      },
    )
  }
}
