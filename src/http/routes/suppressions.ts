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
import { listSuppressions, type Suppression } from '../../store/suppressions.ts'
import { addSuppression, liftSuppression, requireSuppression, type SuppressionOperations } from '../../services/suppressions.ts'
import { actorOf } from '../auth.ts'
import { refine } from '../../validation/model.ts'
import { envelope } from '../reply.ts'
import { authErrors, conflict, Envelope, notFound, OneOf, Timestamp, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'
import { component } from '../openapi.ts'

const MAX_PAGE = 1_000

const SuppressionSchema = component('Suppression', Type.Object({
  phone: Type.String({
    description: "E.164; for a number erased since (POST /api/v2/contacts/erase), the keyed digest it is kept as ('sha256:...'): still suppressed, and found again by its number.",
  }),
  reason: {
    ...OneOf(['manual', 'reply', 'keyword', 'provider', 'conversation'] as const),
    description: 'manual (added here), reply (the person wrote STOP on WhatsApp, or an opt-out word in a text), keyword (the person texted one of the carriers\' opt-out keywords, STOP...: their START lifts it; adding the number here makes it manual), provider (the provider says they opted out), conversation (a conversation reported opt_out).',
  },
  created_at: Timestamp,
}))

const present = (suppression: Suppression) => ({ phone: suppression.phone, reason: suppression.reason, created_at: suppression.createdAt })

/** A number in a path, in any form a trigger accepts (URL-encoded `+`), as its E.164. */
function phoneOf(raw: string): string {
  const phone = normalizePhone(raw)
  if (phone === null) throw new ValidationFailed([valueError(['path', 'phone'], raw, PHONE_REFUSED)])
  return phone
}

export function suppressionRoutes(app: FastifyInstance, deps: { ops: SuppressionOperations; authenticator: Authenticator }) {
  const { ops } = deps
  for (const audience of audiences({ db: ops.db, authenticator: deps.authenticator }, 'suppressions')) {
    const { prefix, docs, params } = audience
    const guard = audience.guard('suppressions:manage')
    const onePhone = Type.Object({ ...params, phone: Type.String({ description: 'E.164; the + URL-encoded as %2B.' }) })

    app.post(
      `${prefix}/suppressions`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('createSuppression'),
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
        const { phone } = request.body as { phone: string }
        const suppression = await addSuppression(ops, actorOf(request), await audience.orgId(request), phone)
        return reply.code(201).send(envelope(request, present(suppression)))
      },
    )

    app.get(
      `${prefix}/suppressions`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('listSuppressions'),
          summary: 'List suppressed phone numbers',
          description: `By number, after \`after\`, at most \`limit\` (${MAX_PAGE}).`,
          params: Type.Object(params),
          querystring: Type.Object({
            // A page may end on an erased number, listed (after the numbers) as its digest: `sha256:` and 64 hex digits.
            after: Type.Optional(Type.String({ maxLength: 71, description: 'The last `phone` of the previous page: a number, or the digest an erased one is listed as.' })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE })),
          }),
          response: { 200: Envelope(Type.Array(SuppressionSchema)), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const { after, limit } = request.query as { after?: string; limit?: number }
        const page = await listSuppressions(ops.db, await audience.orgId(request), { after, limit: limit ?? MAX_PAGE })
        return reply.send(envelope(request, page.map(present)))
      },
    )

    app.get(
      `${prefix}/suppressions/:phone`,
      {
        onRequest: guard,
        schema: { ...docs, operationId: audience.operationId('getSuppression'), summary: 'Is a number suppressed?', description: 'The suppression of the number, with why and when; 404 when it is not suppressed.', params: onePhone, response: { 200: Envelope(SuppressionSchema), ...authErrors, ...notFound } },
      },
      async (request, reply) => {
        const phone = phoneOf((request.params as { phone: string }).phone)
        return reply.send(envelope(request, present(await requireSuppression(ops, await audience.orgId(request), phone))))
      },
    )

    app.delete(
      `${prefix}/suppressions/:phone`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('deleteSuppression'),
          summary: 'Lift a suppression',
          description:
            'Only when the person has asked to be contacted again. An organization may lift what it added itself (reason manual); a number that opted out by reply, through its provider or in a conversation only the operator can.',
          params: onePhone,
          response: { 204: Type.Null(), ...authErrors, ...notFound, ...conflict },
        },
      },
      async (request, reply) => {
        const phone = phoneOf((request.params as { phone: string }).phone)
        await liftSuppression(ops, actorOf(request), await audience.orgId(request), phone, audience.operator)
        return reply.code(204).send()
      },
    )
  }
}
