/**
 * Consent on file (scope consents:manage, and the operator): recorded one at
 * a time or thousands at once, read by id and listed by number, revoked by
 * id or for a whole number. What a campaign's purpose and the calling law of
 * the number's jurisdictions require is decided before each attempt
 * (domain/contactability.ts); see docs/compliance.md.
 */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { CONSENT_KINDS, PURPOSES } from '../../domain/callingLaw.ts'
import { CONSENT_SOURCES, consentTimingProblems, MAX_EVIDENCE_LENGTH } from '../../domain/consent.ts'
import { normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { refuse, ValidationFailed, valueError } from '../../domain/errors.ts'
import { CHANNELS } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import {
  type ConsentInput,
  type ConsentOperations,
  consentsOfNumber,
  recordConsents,
  requireConsent,
  revokeOfNumber,
  revokeOne,
} from '../../services/consents.ts'
import type { Consent } from '../../store/consents.ts'
import { refine, refineModel } from '../../validation/model.ts'
import { actorOf } from '../auth.ts'
import { component } from '../openapi.ts'
import { envelope } from '../reply.ts'
import { authErrors, Envelope, instant, notFound, OneOf, Timestamp, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'

/** Most consents in one bulk request: a day's sign-ups of a large client, in a body of a few MiB. */
export const MAX_CONSENT_BATCH = 10_000
const MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024
const MAX_PAGE = 1_000

const PhoneField = refine(Type.String({ maxLength: 64, examples: ['+1 305 555 0123'] }), { check: (phone) => normalizePhone(phone) ?? refuse(PHONE_REFUSED) })

const NewConsentSchema = refineModel(
  Type.Object(
    {
      phone: PhoneField,
      channel: { ...OneOf(CHANNELS), description: 'The channel the person agreed to be contacted on.' },
      purpose: { ...OneOf(PURPOSES), description: 'What they agreed to be contacted for.' },
      kind: {
        ...OneOf(CONSENT_KINDS),
        description:
          'express (prior express consent: the person gave the number for this purpose), express_written (prior express written consent: a signed agreement, e-sign included, naming the organization and the number; it counts as express too), whatsapp_opt_in (an opt-in to WhatsApp messages: channel whatsapp only).',
      },
      source: { ...OneOf(CONSENT_SOURCES), description: 'How it was captured.' },
      captured_at: instant('captured_at', 'When the person gave it.'),
      evidence: Type.Optional(
        Type.String({ minLength: 1, maxLength: MAX_EVIDENCE_LENGTH, description: 'A reference to the proof (a form submission id and URL, a recording id) or a short text of it. Personal data: deleted when the person is erased.' }),
      ),
      expires_at: Type.Optional(instant('expires_at', 'When it stops counting; absent: until revoked.')),
    },
    { additionalProperties: false },
  ),
  (consent) => {
    const problems = []
    if (consent.kind === 'whatsapp_opt_in' && consent.channel !== undefined && consent.channel !== 'whatsapp') {
      problems.push({ path: ['kind'], message: 'whatsapp_opt_in is a consent of the whatsapp channel' })
    }
    return problems
  },
)
type NewConsentBody = Static<typeof NewConsentSchema>

const ConsentSchema = component(
  'Consent',
  Type.Object({
    id: Type.String(),
    phone: Type.Union([Type.String(), Type.Null()], { description: 'E.164; null once the person was erased (the consent is then a revocation only).' }),
    channel: OneOf(CHANNELS),
    purpose: OneOf(PURPOSES),
    kind: OneOf(CONSENT_KINDS),
    source: Type.String({ description: 'How it was captured; `erased` once the person was erased.' }),
    captured_at: Timestamp,
    evidence: Type.Union([Type.String(), Type.Null()]),
    expires_at: Type.Union([Timestamp, Type.Null()]),
    revoked_at: Type.Union([Timestamp, Type.Null()]),
    revoked_by: Type.Union([OneOf(['api', 'reply', 'provider', 'conversation', 'erasure'] as const), Type.Null()], {
      description: 'api (revoked here), reply (the person wrote STOP), provider (the provider reported an opt-out), conversation (a conversation reported opt_out), erasure (the person was erased).',
    }),
    status: { ...OneOf(['active', 'revoked', 'expired'] as const), description: 'Whether it counts now.' },
    trigger_id: Type.Union([Type.String(), Type.Null()], { description: 'The trigger that carried it, if one did.' }),
    created_at: Timestamp,
  }),
)

function present(consent: Consent, now: number) {
  const status = consent.revokedAt !== null ? 'revoked' : consent.expiresAt !== null && Date.parse(consent.expiresAt) <= now ? 'expired' : 'active'
  return {
    id: consent.id,
    phone: consent.phone,
    channel: consent.channel,
    purpose: consent.purpose,
    kind: consent.kind,
    source: consent.source,
    captured_at: consent.capturedAt,
    evidence: consent.evidence,
    expires_at: consent.expiresAt,
    revoked_at: consent.revokedAt,
    revoked_by: consent.revokedBy,
    status,
    trigger_id: consent.triggerId,
    created_at: consent.createdAt,
  }
}

/** A consent as the service takes it, or the 422 of a capture in the future or an expiry before it. */
function inputOf(body: NewConsentBody, now: number, loc: (string | number)[]): ConsentInput {
  const capturedAt = Date.parse(body.captured_at)
  const problems = consentTimingProblems(capturedAt, body.expires_at === undefined ? undefined : Date.parse(body.expires_at), now)
  if (problems.length > 0) throw new ValidationFailed(problems.map(({ field, message }) => valueError([...loc, field], body[field], message)))
  return {
    phone: body.phone,
    channel: body.channel,
    purpose: body.purpose,
    kind: body.kind,
    source: body.source,
    capturedAt,
    ...(body.evidence === undefined ? {} : { evidence: body.evidence }),
    ...(body.expires_at === undefined ? {} : { expiresAt: Date.parse(body.expires_at) }),
  }
}

export function consentRoutes(app: FastifyInstance, deps: { ops: ConsentOperations; authenticator: Authenticator }) {
  const { ops } = deps
  for (const audience of audiences({ db: ops.db, authenticator: deps.authenticator }, 'consents')) {
    const { prefix, docs, params } = audience
    const guard = audience.guard('consents:manage')

    app.post(
      `${prefix}/consents`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('createConsent'),
          summary: 'Record a consent',
          description: 'That the person agreed to be contacted on a channel, for a purpose: what a campaign of that purpose, and the calling law of the number, may require before an attempt.',
          params: Type.Object(params),
          body: NewConsentSchema,
          response: { 201: Envelope(ConsentSchema), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const now = ops.now()
        const [consent] = await recordConsents(ops, actorOf(request), await audience.orgId(request), [inputOf(request.body as NewConsentBody, now, ['body'])])
        return reply.code(201).send(envelope(request, present(consent!, now)))
      },
    )

    app.post(
      `${prefix}/consents/batch`,
      {
        onRequest: guard,
        bodyLimit: MAX_BATCH_BODY_BYTES,
        schema: {
          ...docs,
          operationId: audience.operationId('createConsentBatch'),
          summary: 'Record many consents',
          description: `Up to ${MAX_CONSENT_BATCH} consents in one request, recorded together or not at all: a 422 names every entry refused (\`loc\` from \`body\`, \`consents\`, its index).`,
          params: Type.Object(params),
          body: Type.Object({ consents: Type.Array(NewConsentSchema, { minItems: 1, maxItems: MAX_CONSENT_BATCH }) }, { additionalProperties: false }),
          response: { 201: Envelope(Type.Object({ recorded: Type.Integer(), consents: Type.Array(ConsentSchema) })), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const now = ops.now()
        const bodies = (request.body as { consents: NewConsentBody[] }).consents
        const errors = []
        const inputs: ConsentInput[] = []
        for (const [index, body] of bodies.entries()) {
          try {
            inputs.push(inputOf(body, now, ['body', 'consents', index]))
          } catch (error) {
            if (!(error instanceof ValidationFailed)) throw error
            errors.push(...error.detail)
          }
        }
        if (errors.length > 0) throw new ValidationFailed(errors)
        const recorded = await recordConsents(ops, actorOf(request), await audience.orgId(request), inputs)
        return reply.code(201).send(envelope(request, { recorded: recorded.length, consents: recorded.map((consent) => present(consent, now)) }))
      },
    )

    app.get(
      `${prefix}/consents`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('listConsents'),
          summary: "List a number's consents",
          description: `Every consent recorded for the number (revoked and expired ones too), newest first, before \`before\`, at most \`limit\` (${MAX_PAGE}).`,
          params: Type.Object(params),
          querystring: Type.Object({
            phone: PhoneField,
            before: Type.Optional(Type.String({ maxLength: 40, description: 'The last `id` of the previous page.' })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE })),
          }),
          response: { 200: Envelope(Type.Array(ConsentSchema)), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const { phone, before, limit } = request.query as { phone: string; before?: string; limit?: number }
        const page = await consentsOfNumber(ops, await audience.orgId(request), phone, { before, limit: limit ?? MAX_PAGE })
        const now = ops.now()
        return reply.send(envelope(request, page.map((consent) => present(consent, now))))
      },
    )

    app.get(
      `${prefix}/consents/:consent_id`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('getConsent'),
          summary: 'Get a consent',
          description: 'As recorded, with whether it counts now (`status`); an erased person\'s keeps no number or evidence.',
          params: Type.Object({ ...params, consent_id: Type.String({ maxLength: 40 }) }),
          response: { 200: Envelope(ConsentSchema), ...authErrors, ...notFound },
        },
      },
      async (request, reply) => {
        const { consent_id } = request.params as { consent_id: string }
        const consent = await requireConsent(ops, await audience.orgId(request), consent_id)
        return reply.send(envelope(request, present(consent, ops.now())))
      },
    )

    app.post(
      `${prefix}/consents/:consent_id/revoke`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('revokeConsent'),
          summary: 'Revoke a consent',
          description: 'It no longer counts, from now on: the next attempt that needs it is blocked. Revoking it again keeps the first revocation.',
          params: Type.Object({ ...params, consent_id: Type.String({ maxLength: 40 }) }),
          response: { 200: Envelope(ConsentSchema), ...authErrors, ...notFound },
        },
      },
      async (request, reply) => {
        const { consent_id } = request.params as { consent_id: string }
        const consent = await revokeOne(ops, actorOf(request), await audience.orgId(request), consent_id)
        return reply.send(envelope(request, present(consent, ops.now())))
      },
    )

    app.post(
      `${prefix}/consents/revoke`,
      {
        onRequest: guard,
        schema: {
          ...docs,
          operationId: audience.operationId('revokeConsentsOfNumber'),
          summary: "Revoke a number's consents",
          description: 'Every consent of the number not revoked yet, of one channel or purpose, or all. (A suppression, a STOP reply or an opt_out result revokes them all, too.)',
          params: Type.Object(params),
          body: Type.Object(
            { phone: PhoneField, channel: Type.Optional(OneOf(CHANNELS)), purpose: Type.Optional(OneOf(PURPOSES)) },
            { additionalProperties: false },
          ),
          response: { 200: Envelope(Type.Object({ revoked: Type.Array(Type.String(), { description: 'The ids of the consents revoked now.' }) })), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const body = request.body as { phone: string; channel?: (typeof CHANNELS)[number]; purpose?: (typeof PURPOSES)[number] }
        const scope = { ...(body.channel === undefined ? {} : { channel: body.channel }), ...(body.purpose === undefined ? {} : { purpose: body.purpose }) }
        const revoked = await revokeOfNumber(ops, actorOf(request), await audience.orgId(request), body.phone, scope)
        return reply.send(envelope(request, { revoked }))
      },
    )
  }
}
