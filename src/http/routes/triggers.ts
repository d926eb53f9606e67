/** POST /api/v2/triggers and GET /api/v2/triggers/{id}: the client contract. */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { checkEmail, normalizeLanguage, normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { CONSENT_KINDS, PURPOSES } from '../../domain/callingLaw.ts'
import { CONSENT_SOURCES, MAX_EVIDENCE_LENGTH } from '../../domain/consent.ts'
import { ApiError, type ErrorDetail, refuse, STATUS_BY_CODE, ValidationFailed } from '../../domain/errors.ts'
import { normalizeIdPart } from '../../domain/externalIds.ts'
import { isId } from '../../domain/ids.ts'
import { isTimeZone } from '../../domain/timezones.ts'
import { MAX_NOT_BEFORE_DAYS } from '../../domain/triggerTiming.ts'
import type { Trigger } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Acceptance, AcceptedData, TriggerAcceptance } from '../../services/triggerAcceptance.ts'
import { findTrigger } from '../../store/triggers.ts'
import type { Database } from '../../store/database.ts'
import { inFieldOrder, refine, validate } from '../../validation/model.ts'
import { idempotencyKey, idempotencyKeyOf } from '../idempotencyKey.ts'
import { MAX_BODY_BYTES } from '../limits.ts'
import { confirmBeforeAnswering, organizationOf, requireOrganizationKey } from '../auth.ts'
import { component, routeHeaders } from '../openapi.ts'
import { envelope } from '../reply.ts'
import { requestTraceParent } from '../tracing.ts'
import {
  authErrors,
  ChannelSchema,
  ContactSchema,
  conflict,
  Envelope,
  ErrorBody,
  instant,
  notFound,
  OneOf,
  presentContact,
  Timestamp,
  ValidationErrorEntry,
  validationErrors,
} from '../schemas.ts'

export const ExternalIdSchema = Type.Object({
  source: refine(Type.String({ minLength: 1, maxLength: 100, description: 'Lowercased and trimmed by the service.' }), {
    transform: normalizeIdPart,
  }),
  type: refine(Type.String({ minLength: 1, maxLength: 100, description: 'Lowercased and trimmed by the service.' }), {
    transform: normalizeIdPart,
  }),
  value: Type.String({ minLength: 1, maxLength: 500, description: 'Returned unchanged.' }),
})

export const ContactInput = Type.Object({
  first_name: Type.Optional(Type.String({ maxLength: 200 })),
  last_name: Type.Optional(Type.String({ maxLength: 200 })),
  phone: refine(
    Type.String({
      maxLength: 64,
      description:
        'With its country calling code (+…). Spaces, dots, slashes, brackets, dashes and a trunk 0 after the code are dropped; stored as E.164.',
      examples: ['+44 20 7946 0958'],
    }),
    { check: (phone) => normalizePhone(phone) ?? refuse(PHONE_REFUSED) },
  ),
  email: Type.Optional(
    refine(Type.String({ maxLength: 320 }), {
      check: (email) => {
        const checked = checkEmail(email)
        if ('email' in checked) return checked.email
        return { msg: `value is not a valid email address: ${checked.problem}`, ctx: { reason: checked.problem } }
      },
    }),
  ),
  language: Type.Optional(
    refine(Type.String({ maxLength: 35, description: 'BCP 47, e.g. en or pt-BR.' }), {
      check: (tag) => normalizeLanguage(tag) ?? refuse('language must be a BCP 47 language tag, such as en or pt-BR'),
    }),
  ),
  timezone: Type.Optional(
    refine(
      Type.String({
        maxLength: 64,
        description:
          "The contact's IANA time zone. Without it: the zone on file for the person the ids name; else every zone the number may be in (its area's for a fixed line, any +1 number and mobiles of Mexico, Argentina and Brazil; every zone of its country for other mobiles), and outreach only at instants inside the campaign's window in all of them.",
        examples: ['Europe/Madrid'],
      }),
      { check: (zone) => (isTimeZone(zone) ? zone : refuse('timezone must be an IANA time zone, such as Europe/Madrid')) },
    ),
  ),
})

/** A consent the person gave, recorded with the trigger for its contact's number (docs/compliance.md). */
const TriggerConsentSchema = Type.Object(
  {
    kind: { ...OneOf(CONSENT_KINDS), description: 'express, express_written (a signed agreement, e-sign included) or whatsapp_opt_in (WhatsApp campaigns).' },
    source: { ...OneOf(CONSENT_SOURCES), description: 'How it was captured.' },
    captured_at: instant('captured_at', 'When the person gave it; not in the future.'),
    evidence: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_EVIDENCE_LENGTH, description: 'A reference to the proof, or a short text of it. Erased with the person.' })),
    expires_at: Type.Optional(instant('expires_at', 'When it stops counting; absent: until revoked.')),
    purpose: Type.Optional({ ...OneOf(PURPOSES), description: "What the person agreed to; default the campaign's purpose." }),
  },
  {
    additionalProperties: false,
    description:
      "The person's consent to be contacted on the campaign's channel, for its purpose (or `purpose`), recorded with the trigger in the same commit, as POST /api/v2/consents records one: what a campaign, and the law of the number, may require before an attempt. It needs `contact.phone`, and is refused in test mode (the number is the tester's).",
  },
)

export const TriggerRequestSchema = component(
  'TriggerRequest',
  Type.Object({
    campaign: Type.String({ minLength: 1, maxLength: 100, description: 'Routing key of the target campaign.' }),
    ids: Type.Optional(Type.Array(ExternalIdSchema, { maxItems: 20, description: "The contact's ids in your systems." })),
    contact: Type.Optional({
      ...ContactInput,
      description:
        "The person to reach. Fields sent replace those on file for the contact the ids name. May be left out when one of the ids, of a source whose contact is optional, names a contact on file; never in test mode.",
    }),
    channel: Type.Optional({ ...ChannelSchema, description: 'Needed when the routing key has campaigns on more than one channel.' }),
    context: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50, description: "Merged over the campaign's default context." }),
    ),
    test_mode: Type.Optional(Type.Boolean({ description: 'Outreach goes to contact.phone instead of the real person.' })),
    not_before: Type.Optional(
      instant(
        'not_before',
        `The first attempt starts no earlier than this, and still only inside the campaign's window in the contact's zones. At most ${MAX_NOT_BEFORE_DAYS} days ahead. The campaign's expiry counts from it.`,
      ),
    ),
    expires_at: Type.Optional(
      instant(
        'expires_at',
        "No attempt starts after this: the task then completes with outcome `expired` (or at the campaign's expiry, if that is earlier). In the future, and after `not_before`.",
      ),
    ),
    consent: Type.Optional(TriggerConsentSchema),
  }),
)

const AcceptedSchema = component('TriggerAccepted', Type.Object({
  id: Type.String({ examples: ['trg_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  task_id: Type.String({ examples: ['tsk_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  status: Type.Literal('accepted'),
  created_at: Timestamp,
}))

const TriggerSchema = component('Trigger', Type.Object({
  id: Type.String(),
  task_id: Type.String(),
  status: Type.Literal('accepted'),
  campaign: Type.String(),
  channel: ChannelSchema,
  ids: Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() })),
  contact: Type.Union([ContactSchema, Type.Null()], { description: 'As sent; null when the trigger left it out to reach a contact on file, and once erased.' }),
  context: Type.Record(Type.String(), Type.Unknown()),
  test_mode: Type.Boolean(),
  not_before: Type.Union([Timestamp, Type.Null()], { description: 'The instant sent, in UTC; null when none was.' }),
  expires_at: Type.Union([Timestamp, Type.Null()], { description: 'The instant sent, in UTC; null when none was.' }),
  created_at: Timestamp,
  task: Type.Object({ id: Type.String(), status: Type.String() }),
}))

/** Most triggers in one batch request, and the largest body it may have. */
export const MAX_BATCH_TRIGGERS = 1000
const MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024

/** One trigger of a batch: a trigger body, with its own Idempotency-Key. */
const BatchItemSchema = component('BatchTrigger', Type.Object({
  ...TriggerRequestSchema.properties,
  idempotency_key: Type.Optional(
    idempotencyKey(
      'idempotency_key',
      "This trigger's Idempotency-Key, with the header's meaning: sent again with the same trigger, it answers the first result (`replayed: true`) and records nothing. Distinct within a request; shared with single requests.",
    ),
  ),
}))

const BatchRequestSchema = component('TriggerBatchRequest', Type.Object({
  triggers: Type.Array(BatchItemSchema, { minItems: 1, maxItems: MAX_BATCH_TRIGGERS }),
}))

/**
 * What the batch route itself validates: a list of objects, each taken as
 * sent (a model of no fields reads none of them). Each object is then
 * validated as a trigger on its own, so that one bad trigger refuses only
 * itself, and no field is walked twice.
 */
const BatchShape = Type.Object({
  triggers: Type.Array(Type.Object({}), { minItems: 1, maxItems: MAX_BATCH_TRIGGERS }),
})

const BatchResultSchema = component('BatchTriggerResult', Type.Object({
  index: Type.Integer({ description: 'Position of the trigger in the request, from 0.' }),
  status: Type.Integer({
    description:
      'What POST /api/v2/triggers would have answered for this trigger: 201 (with `data`), 422 (with `detail`), or with `error`: 409 for its idempotency_key, 401 when the key was revoked while the request was being recorded (after other triggers of it were), 500 when its commit failed.',
  }),
  data: Type.Optional(AcceptedSchema),
  replayed: Type.Optional(Type.Literal(true, { description: 'The first answer for this idempotency_key; nothing new was recorded.' })),
  detail: Type.Optional(Type.Array(ValidationErrorEntry)),
  error: Type.Optional(ErrorBody),
}))

export function triggerRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator; acceptance: TriggerAcceptance }) {
  const { db, authenticator, acceptance } = deps

  app.post(
    '/api/v2/triggers',
    {
      // Structural errors are collected with the campaign's, so that a 422 lists every problem at once.
      attachValidation: true,
      onRequest: requireOrganizationKey(authenticator, 'triggers:write', { confirm: 'deferred' }),
      schema: {
        operationId: 'createTrigger',
        summary: 'Start one conversation',
        description:
          'Records the trigger and creates its task. A 201 means both are committed; the conversation starts later, when the campaign schedule allows it. ' +
          "Without `contact.timezone` (or a zone on file for the person), the service starts an attempt only at an instant inside the campaign's window in every zone the number may be in: " +
          "its area's zones for a fixed line, any +1 number and mobiles of Mexico, Argentina and Brazil; every zone of its country for other mobiles (a Spanish mobile may be in the Canaries); the campaign's " +
          "`fallback_timezone` for a number of no country (+800...). It refuses the trigger (422 at `contact.phone`, or at `contact` when that was left out to reach a person on file) only when " +
          "the campaign's windows are never open in all those zones at once within 14 days, or a number of no country meets a campaign without a fallback; `contact.timezone` fixes both. " +
          'With an `Idempotency-Key` header (up to 255 characters, kept 24 hours per organization), a retry with the same body gets the first answer again ' +
          '(with `Idempotent-Replayed: true`) and records nothing; the same key with another body is 409 `idempotency_key_reused`, and while the first ' +
          'request is still in flight 409 `idempotency_key_in_use`.',
        tags: ['triggers'],
        security: [{ apiKey: [] }],
        ...routeHeaders({ request: ['Idempotency-Key', 'traceparent'], responses: { 201: ['Idempotent-Replayed'] } }),
        body: TriggerRequestSchema,
        response: { 201: Envelope(AcceptedSchema), ...authErrors, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const errors = request.validationError instanceof ValidationFailed ? [...request.validationError.detail] : []
      const idempotencyKey = idempotencyKeyOf(request.headers['idempotency-key'], errors)
      const caller = { principal: organizationOf(request), confirmKey: () => confirmBeforeAnswering(authenticator, request) }
      const submission = {
        body: request.body,
        errors,
        idempotencyKey,
        requestId: request.id,
        bodyBytes: Number(request.headers['content-length'] ?? MAX_BODY_BYTES),
        traceParent: requestTraceParent(request),
      }
      try {
        const accepted = await acceptance.accept(caller, submission)
        if (accepted.kind === 'replay') reply.header('idempotent-replayed', 'true')
        return reply.code(201).send(envelope(request, accepted.data))
      } catch (error) {
        // Reported in the order of the body's fields, as pydantic reports them.
        if (error instanceof ValidationFailed) throw new ValidationFailed(inFieldOrder(TriggerRequestSchema, error.detail))
        throw error
      }
    },
  )

  app.post(
    '/api/v2/triggers/batch',
    {
      bodyLimit: MAX_BATCH_BODY_BYTES,
      onRequest: requireOrganizationKey(authenticator, 'triggers:write', { confirm: 'deferred' }),
      // Each trigger counts against the rate limit (a body that is no batch, once, and is refused as such).
      config: {
        rateLimitCost: (request) => {
          const triggers = (request.body as { triggers?: unknown } | undefined)?.triggers
          return Array.isArray(triggers) ? Math.min(Math.max(triggers.length, 1), MAX_BATCH_TRIGGERS) : 1
        },
      },
      validatorCompiler: () => (data: unknown) => {
        const { errors } = validate(BatchShape, data, ['body'])
        return errors.length > 0 ? { error: new ValidationFailed(errors) } : { value: data }
      },
      schema: {
        operationId: 'createTriggerBatch',
        summary: 'Start many conversations',
        description:
          `Up to ${MAX_BATCH_TRIGGERS} triggers (and ${MAX_BATCH_BODY_BYTES / (1024 * 1024)} MiB) in one request, each validated and accepted exactly as POST /api/v2/triggers would accept it, on its own: ` +
          'the answer is 200 with one result per trigger, in request order, each with the status the single endpoint would have given and its body (`data`, `detail` with `loc` from `body` as for a single trigger, or `error`). ' +
          'The accepted triggers are committed together, and the answer comes once every one of them is durable. ' +
          'Each trigger may carry its own `idempotency_key`: sent again, the triggers that carry one record nothing new (those without are recorded again). ' +
          'A body that is not a list of 1 to 1,000 objects is a 422 for the whole request.',
        tags: ['triggers'],
        security: [{ apiKey: [] }],
        ...routeHeaders({ request: ['traceparent'] }),
        body: BatchRequestSchema,
        response: { 200: Envelope(Type.Array(BatchResultSchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { triggers } = request.body as { triggers: Record<string, unknown>[] }
      const caller = { principal: organizationOf(request), confirmKey: () => confirmBeforeAnswering(authenticator, request) }
      // Each trigger's share of the body bounds its share of a commit.
      const bodyBytes = Math.ceil(Number(request.headers['content-length'] ?? MAX_BATCH_BODY_BYTES) / triggers.length)
      const traceParent = requestTraceParent(request)
      const submissions = triggers.map((item) => {
        const checked = validate<Static<typeof BatchItemSchema>>(BatchItemSchema, item, ['body'])
        if (checked.errors.length > 0) return { body: item, errors: checked.errors, idempotencyKey: undefined, requestId: request.id, bodyBytes, traceParent }
        const { idempotency_key, ...body } = checked.value!
        return { body, errors: [], idempotencyKey: idempotency_key, requestId: request.id, bodyBytes, traceParent }
      })
      const acceptances = await acceptance.acceptAll(caller, submissions)
      // A commit records only for an unrevoked key; an answer that rests on no commit must confirm it.
      if (!acceptances.some((each) => each.kind === 'accepted')) await caller.confirmKey()
      // One line for the request, however many of its triggers a failed commit held.
      const failed = acceptances.flatMap((each) => (each.kind === 'failed' ? [each.error] : []))
      if (failed.length > 0) request.log.error({ err: failed[0], triggers: failed.length }, 'triggers of a batch could not be recorded')
      return reply.send(envelope(request, acceptances.map((each, index) => batchResult(index, each))))
    },
  )

  app.get(
    '/api/v2/triggers/:id',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:read'),
      schema: {
        operationId: 'getTrigger',
        summary: 'Look up one trigger',
        description: 'The trigger as recorded (normalized ids and phone), with its task. Triggers of other organizations are not found.',
        tags: ['triggers'],
        security: [{ apiKey: [] }],
        params: Type.Object({ id: Type.String() }),
        response: { 200: Envelope(TriggerSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const trigger = isId('trigger', id) ? await findTrigger(db, organizationOf(request).orgId, id) : undefined
      if (trigger === undefined) throw new ApiError('not_found', `No trigger ${id} exists.`)
      return reply.send(envelope(request, presentTrigger(trigger)))
    },
  )
}

function presentTrigger(trigger: Trigger): Static<typeof TriggerSchema> {
  return {
    id: trigger.id,
    task_id: trigger.task.id,
    status: 'accepted',
    campaign: trigger.campaign.routingKey,
    channel: trigger.campaign.channel,
    ids: trigger.ids.map(({ source, type, value }) => ({ source, type, value })),
    contact: trigger.contact && presentContact(trigger.contact),
    context: trigger.context,
    test_mode: trigger.testMode,
    not_before: trigger.notBefore,
    expires_at: trigger.expiresAt,
    created_at: trigger.createdAt,
    task: trigger.task,
  }
}

/** One trigger's result in a batch: what the single endpoint would have answered for it. */
function batchResult(index: number, acceptance: Acceptance): Static<typeof BatchResultSchema> {
  switch (acceptance.kind) {
    case 'accepted':
      return { index, status: 201, data: acceptance.data }
    case 'replay':
      return { index, status: 201, data: acceptance.data as AcceptedData, replayed: true }
    case 'invalid':
      return { index, status: 422, detail: inFieldOrder(BatchItemSchema, acceptance.detail) }
    case 'refused':
      return { index, status: STATUS_BY_CODE[acceptance.error.code], error: { code: acceptance.error.code, message: acceptance.error.message } }
    case 'failed':
      return {
        index,
        status: 500,
        error: {
          code: 'internal_error',
          message: 'Recording this trigger failed because of an error on our side, and may not have happened: send it again (with an idempotency_key, to be sure it is recorded once).',
        },
      }
  }
}
