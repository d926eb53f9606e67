/** POST /api/v2/triggers and GET /api/v2/triggers/{id}: the client contract. */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { checkEmail, normalizeLanguage, normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { ApiError, type ErrorDetail, refuse, ValidationFailed, valueError } from '../../domain/errors.ts'
import { isId, newId } from '../../domain/ids.ts'
import { zoneOf } from '../../domain/schedule.ts'
import { isTimeZone, timeZoneOfPhone } from '../../domain/timezones.ts'
import type { Campaign, Trigger } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { CampaignDirectory } from '../../services/campaignDirectory.ts'
import {
  type ContactOnFile,
  contactOnFile,
  idsNameSeveralContacts,
  missingContact,
  type ReadableId,
  timezoneOnFile,
} from '../../services/contactDirectory.ts'
import { type SourceDirectory, sourceProblems } from '../../services/sourceDirectory.ts'
import { acceptedData, type Recording, requestHash, type TriggerIntake, type TriggerRequest, usesDirectory } from '../../services/triggerIntake.ts'
import { releaseKey, reserveKey } from '../../store/idempotency.ts'
import { findTrigger } from '../../store/triggers.ts'
import type { Database } from '../../store/database.ts'
import { inFieldOrder, refine, validate } from '../../validation/model.ts'
import { MAX_BODY_BYTES } from '../limits.ts'
import { confirmBeforeAnswering, type OrganizationPrincipal, organizationOf, requireOrganizationKey, unauthorized } from '../auth.ts'
import { envelope } from '../reply.ts'
import { authErrors, ChannelSchema, ContactSchema, conflict, Envelope, notFound, presentContact, Timestamp, validationErrors } from '../schemas.ts'

/** Unicode White_Space, as pydantic's strip_whitespace trims it. */
const EDGE_WHITESPACE = /^\p{White_Space}+|\p{White_Space}+$/gu
const trimmedLowercase = (value: string) => value.replace(EDGE_WHITESPACE, '').toLowerCase()

const ExternalIdSchema = Type.Object({
  source: refine(Type.String({ minLength: 1, maxLength: 100, description: 'Lowercased and trimmed by the service.' }), {
    transform: trimmedLowercase,
  }),
  type: refine(Type.String({ minLength: 1, maxLength: 100, description: 'Lowercased and trimmed by the service.' }), {
    transform: trimmedLowercase,
  }),
  value: Type.String({ minLength: 1, maxLength: 500, description: 'Returned unchanged.' }),
})

const ContactInput = Type.Object({
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
        description: "The contact's IANA time zone. Without it, the zone is told from the phone number where it has only one.",
        examples: ['Europe/Madrid'],
      }),
      { check: (zone) => (isTimeZone(zone) ? zone : refuse('timezone must be an IANA time zone, such as Europe/Madrid')) },
    ),
  ),
})

const UNKNOWN_ZONE =
  "the contact's time zone cannot be told from this phone number and the campaign has no fallback_timezone; send contact.timezone (an IANA zone, such as America/Chicago)"

export const TriggerRequestSchema = Type.Object(
  {
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
  },
  { $id: 'TriggerRequest' },
)

const AcceptedSchema = Type.Object({
  id: Type.String({ examples: ['trg_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  task_id: Type.String({ examples: ['tsk_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  status: Type.Literal('accepted'),
  created_at: Timestamp,
})

const TriggerSchema = Type.Object({
  id: Type.String(),
  task_id: Type.String(),
  status: Type.Literal('accepted'),
  campaign: Type.String(),
  channel: ChannelSchema,
  ids: Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() })),
  contact: Type.Union([ContactSchema, Type.Null()], { description: 'As sent; null when the trigger left it out to reach a contact on file.' }),
  context: Type.Record(Type.String(), Type.Unknown()),
  test_mode: Type.Boolean(),
  created_at: Timestamp,
  task: Type.Object({ id: Type.String(), status: Type.String() }),
})

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Whether validation refused exactly this part of the body. */
function failed(errors: readonly ErrorDetail[], ...loc: (string | number)[]): boolean {
  return errors.some((error) => error.loc.length === loc.length + 1 && loc.every((part, depth) => error.loc[depth + 1] === part))
}

/** Whether validation refused this top-level field or anything inside it. */
function failedField(errors: readonly ErrorDetail[], field: string): boolean {
  return errors.some((error) => error.loc[1] === field)
}

/** A reservation outlives any request; one older belongs to a process that died. */
const IDEMPOTENCY_LEASE_MS = 60_000
const IDEMPOTENCY_KEEP_MS = 24 * 3_600_000
const MAX_IDEMPOTENCY_KEY_LENGTH = 255

const keyInUse = () => new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry in a moment.')

const IdempotencyKeyHeader = refine(Type.String({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }), {
  check: (key) => (/^[\x21-\x7e]+$/.test(key) ? key : refuse('Idempotency-Key must be 1 to 255 printable ASCII characters without spaces')),
})

/**
 * The Idempotency-Key header; when it is not one we can keep, its 422 entries
 * (at the header, as FastAPI reports a header) are added with the body's.
 */
function idempotencyKeyOf(header: string | string[] | undefined, errors: ErrorDetail[]): string | undefined {
  if (header === undefined) return undefined
  const checked = validate<string>(IdempotencyKeyHeader, header, ['header', 'idempotency-key'])
  errors.unshift(...checked.errors)
  return checked.value
}

export function triggerRoutes(
  app: FastifyInstance,
  deps: {
    db: Database
    authenticator: Authenticator
    campaigns: CampaignDirectory
    sources: SourceDirectory
    intake: TriggerIntake
    now: () => number
  },
) {
  const { db, authenticator, campaigns, sources, intake, now } = deps

  app.post(
    '/api/v2/triggers',
    {
      // Structural errors are collected with the campaign's, so that a 422 lists every problem at once.
      attachValidation: true,
      onRequest: requireOrganizationKey(authenticator, 'triggers:write', { confirm: 'deferred' }),
      schema: {
        summary: 'Start one conversation',
        description:
          'Records the trigger and creates its task. A 201 means both are committed; the conversation starts later, when the campaign schedule allows it. ' +
          'With an `Idempotency-Key` header (up to 255 characters, kept 24 hours per organization), a retry with the same body gets the first answer again ' +
          '(with `Idempotent-Replayed: true`) and records nothing; the same key with another body is 409 `idempotency_key_reused`, and while the first ' +
          'request is still in flight 409 `idempotency_key_in_use`.',
        tags: ['triggers'],
        security: [{ apiKey: [] }],
        body: TriggerRequestSchema,
        response: { 201: Envelope(AcceptedSchema), ...authErrors, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const principal = organizationOf(request)
      const errors = request.validationError instanceof ValidationFailed ? [...request.validationError.detail] : []
      const key = idempotencyKeyOf(request.headers['idempotency-key'], errors)
      let idempotency: { key: string; triggerId: string } | undefined
      if (key !== undefined && errors.length === 0) {
        // Looked at before the campaign and the sources, so that a retry gets its first answer whatever changed since;
        // and the key confirmed (one round trip), so that a replay never answers a revoked key.
        await confirmBeforeAnswering(authenticator, request)
        idempotency = { key, triggerId: newId('trigger', now()) }
        const reservation = await reserveKey(
          db,
          principal.orgId,
          key,
          { hash: requestHash(request.body as TriggerRequest), token: idempotency.triggerId },
          now(),
          IDEMPOTENCY_LEASE_MS,
          IDEMPOTENCY_KEEP_MS,
        )
        if (reservation.kind === 'replay') return reply.code(201).header('idempotent-replayed', 'true').send(envelope(request, reservation.response))
        if (reservation.kind === 'reused') {
          throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request body in the last 24 hours.')
        }
        if (reservation.kind === 'in_use') throw keyInUse()
      }
      let recording: Recording | undefined
      try {
        recording = await accept(request, principal, errors, idempotency)
      } finally {
        // Not recorded: the key may be used again. A failure to say so leaves it to expire with its lease; it must not hide why.
        if (recording?.kind !== 'accepted' && idempotency !== undefined) {
          await releaseKey(db, principal.orgId, idempotency.key, idempotency.triggerId).catch(() => {})
        }
      }
      if (recording.kind === 'conflict') {
        throw new ValidationFailed([idsNameSeveralContacts((request.body as TriggerRequest).ids, recording.named)])
      }
      if (recording.kind === 'not recorded') {
        // Its reservation was taken over after stalling past the lease: the request that took it answers.
        if (idempotency !== undefined && (await authenticator.confirm(principal))) throw keyInUse()
        // Campaigns are never deleted: only a key revoked since it was cached stops the commit.
        authenticator.forget(principal.keyId)
        throw unauthorized()
      }
      return reply.code(201).send(envelope(request, acceptedData(recording.accepted)))
    },
  )

  /**
   * Checks what depends on the organization's campaigns, sources and contacts,
   * then records the trigger.
   */
  async function accept(
    request: FastifyRequest,
    principal: OrganizationPrincipal,
    errors: ErrorDetail[],
    idempotency: { key: string; triggerId: string } | undefined,
  ): Promise<Recording> {
    const campaign = await resolveCampaign(principal.orgId, request.body, errors)
    // The body as sent when validation failed, which may be anything; only an object has fields to check.
    const raw = isObject(request.body) ? (request.body as Partial<Record<keyof TriggerRequest, unknown>>) : undefined
    const organizationSources = await sources.sourcesOf(principal.orgId)
    const omitsContact = raw !== undefined && (raw.contact === undefined || raw.contact === null)
    // Read only when something checks them: most triggers carry a contact for an organization without sources.
    const ids = organizationSources.size > 0 || omitsContact ? readableIds(raw, errors) : []
    errors.push(...sourceProblems(organizationSources, ids, failed(errors, 'context') ? undefined : ((raw?.context ?? {}) as Record<string, unknown>)))
    let onFile: ContactOnFile | undefined
    if (omitsContact) {
      // A test needs the tester's number; otherwise the person may be on file.
      const found = raw.test_mode === true ? missingContact(raw) : await contactOnFile(db, principal.orgId, organizationSources, ids, raw)
      if ('contactId' in found) onFile = found
      else errors.push(found)
    }
    if (errors.length > 0 || campaign === undefined) throw new ValidationFailed(inFieldOrder(TriggerRequestSchema, errors))
    const body = request.body as TriggerRequest
    const contact = body.contact ?? onFile!.contact
    const phoneZone = timeZoneOfPhone(contact.phone) ?? null
    if ((contact.timezone ?? phoneZone) === null && zoneOf(campaign.schedule, null) === undefined) {
      // A contact sent without a zone keeps the one on file, if the person has one.
      const stored = body.contact !== undefined && usesDirectory(body) ? await timezoneOnFile(db, principal.orgId, body.ids!) : undefined
      if (stored !== undefined && 'loc' in stored) throw new ValidationFailed([stored])
      if (stored?.timezone === undefined) {
        const loc = body.contact === undefined ? ['body', 'contact'] : ['body', 'contact', 'phone']
        throw new ValidationFailed([valueError(loc, body.contact?.phone, UNKNOWN_ZONE)])
      }
    }
    const submitter = {
      orgId: principal.orgId,
      apiKeyId: principal.keyId,
      requestId: request.id,
      bodyBytes: Number(request.headers['content-length'] ?? MAX_BODY_BYTES),
    }
    return intake.record(submitter, { campaignId: campaign.id, onFile, phoneZone, idempotency }, body)
  }

  /**
   * The ids of the body as far as they can be read, normalized as validation
   * normalizes them: from the raw body when other fields failed, so that the
   * source and contact checks still report on every id they can.
   */
  function readableIds(raw: Partial<Record<keyof TriggerRequest, unknown>> | undefined, errors: ErrorDetail[]): ReadableId[] {
    if (!Array.isArray(raw?.ids) || failed(errors, 'ids')) return []
    const part = (id: Record<string, unknown>, index: number, name: 'type' | 'value') =>
      failed(errors, 'ids', index, name) || typeof id[name] !== 'string' ? undefined : (id[name] as string)
    return (raw.ids as Record<string, unknown>[]).flatMap((id, index) => {
      if (failed(errors, 'ids', index) || failed(errors, 'ids', index, 'source') || typeof id.source !== 'string') return []
      const type = part(id, index, 'type')
      return [{ index, source: trimmedLowercase(id.source), type: type === undefined ? undefined : trimmedLowercase(type), value: part(id, index, 'value') }]
    })
  }

  /**
   * The campaign the body names, or undefined with the 422 entry
   * added that says why there is none. Runs on the raw body when other fields
   * failed, so that one answer lists every problem.
   */
  async function resolveCampaign(orgId: string, body: unknown, errors: ErrorDetail[]): Promise<Campaign | undefined> {
    const raw = body as Partial<Record<keyof TriggerRequest, unknown>> | undefined
    if (typeof raw?.campaign !== 'string' || failedField(errors, 'campaign')) return undefined
    const channelUsable = !failedField(errors, 'channel')
    const choice = await campaigns.choose(orgId, raw.campaign, channelUsable ? (raw.channel as TriggerRequest['channel']) : undefined)
    if ('campaign' in choice) return choice.campaign
    if (channelUsable || choice.error.loc[1] === 'campaign') errors.push(choice.error)
    return undefined
  }

  app.get(
    '/api/v2/triggers/:id',
    {
      onRequest: requireOrganizationKey(authenticator, 'triggers:read'),
      schema: {
        summary: 'Look up one trigger',
        description: 'The trigger as recorded (normalized ids and phone), with its task. Triggers of other organizations are not found.',
        tags: ['triggers'],
        security: [{ apiKey: [] }],
        params: Type.Object({ id: Type.String() }),
        response: { 200: Envelope(TriggerSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const principal = organizationOf(request)
      const { id } = request.params as { id: string }
      const trigger = isId('trigger', id) ? await findTrigger(db, principal.orgId, id) : undefined
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
    created_at: trigger.createdAt,
    task: trigger.task,
  }
}
