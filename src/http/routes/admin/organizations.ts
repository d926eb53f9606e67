import { type Static, Type } from '@sinclair/typebox'
import { DEFAULT_RATE_LIMIT, MAX_RATE_LIMIT } from '../../../domain/rateLimit.ts'
import { DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS } from '../../../domain/retention.ts'
import { MAX_CONTACT_CAP } from '../../../domain/contactCap.ts'
import { DEFAULT_CALLBACK_WINDOW_DAYS, MAX_CALLBACK_WINDOW_DAYS } from '../../../domain/callbacks.ts'
import type { FastifyInstance } from 'fastify'
import type { Organization } from '../../../domain/types.ts'
import { callbackNumbersOf, changeOrganization, createOrganization, listOrganizations, type Operations, requireOrganization, setCallbackNumbers } from '../../../services/administration.ts'
import type { CallbackNumber } from '../../../store/callbackNumbers.ts'
import { CALLBACK_NUMBER_FORMS, MAX_CALLBACK_NUMBER_ID_LENGTH } from '../../../domain/callbacks.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import { actorOf, requireOperator } from '../../auth.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, notFound, Timestamp, validationErrors } from '../../schemas.ts'
import { component } from '../../openapi.ts'

const PER_SECOND = 'Requests a second, sustained (a batch counts each trigger).'
const BURST = 'Requests at once, after a quiet spell.'
const RETENTION =
  "Days the personal data of a completed task (its contact's name, phone, email and the context sent) is kept after it completed; then it is erased as by POST /api/v2/contacts/erase, and the task and its outcome kept."
const RATE_LIMIT = `The organization's own rate limit on /api/v2; the service's default (${DEFAULT_RATE_LIMIT.perSecond} a second, bursts of ${DEFAULT_RATE_LIMIT.burst}, unless it is set otherwise) where null.`

const CALLBACK_WINDOW = `Days after a task completed that the person's call to a campaign's number still lands on it (docs/callbacks.md); an open task always does. 0: open tasks only. Default ${DEFAULT_CALLBACK_WINDOW_DAYS}.`

const PER_24H = 'At most this many attempts started to one number in any 24 hours (a rolling day), across all campaigns; null: no such rule.'
const PER_LOCAL_DAY =
  "At most this many attempts started to one number on one calendar day of the contact's time zone (in every zone the contact may be in), across all campaigns; null: no such rule."
const CONTACT_CAP =
  "The organization's cap on attempts to one number across all its campaigns. A task held by it waits until the cap allows its attempt (GET /api/v2/tasks/{id} says so in `waiting`), and still expires on time. Both null (the default): no cap."

const capFigure = (description: string) => Type.Union([Type.Integer({ minimum: 1, maximum: MAX_CONTACT_CAP }), Type.Null()], { description })

export const ContactCapSchema = Type.Object({ per_24h: capFigure(PER_24H), per_local_day: capFigure(PER_LOCAL_DAY) }, { description: CONTACT_CAP })

export const OrganizationSchema = component('Organization', Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Timestamp,
  rate_limit: Type.Object(
    { per_second: Type.Union([Type.Integer(), Type.Null()], { description: PER_SECOND }), burst: Type.Union([Type.Integer(), Type.Null()], { description: BURST }) },
    { description: RATE_LIMIT },
  ),
  retention_days: Type.Union([Type.Integer(), Type.Null()], { description: `${RETENTION} Null: the default, ${DEFAULT_RETENTION_DAYS} days.` }),
  contact_cap: ContactCapSchema,
  callback_window_days: Type.Integer({ description: CALLBACK_WINDOW }),
}))

const CALLBACK_NUMBER =
  'The number as the campaign’s platform names it: in international form for Twilio and Retell (+14155550100), the phone number’s id for Vapi, the agent’s id for ElevenLabs.'

const CallbackNumberSchema = component('CallbackNumber', Type.Object({
  number: Type.String({ description: CALLBACK_NUMBER }),
  provider: Type.String({ description: 'The campaign’s platform, which the number is on.' }),
  campaign_id: Type.String({ description: 'The campaign whose settings answer a caller without a task (its inbound default); a caller with a task is answered through the task’s own campaign where that campaign’s settings verify the call.' }),
  created_at: Timestamp,
}))

const CallbackNumbersBody = Type.Object({
  callback_numbers: Type.Array(
    Type.Object(
      {
        number: Type.String({ minLength: 1, maxLength: MAX_CALLBACK_NUMBER_ID_LENGTH, description: CALLBACK_NUMBER }),
        campaign_id: Type.String({ minLength: 1, maxLength: 64, description: `A campaign of the organization on ${Object.keys(CALLBACK_NUMBER_FORMS).join(', ')}.` }),
      },
      { additionalProperties: false },
    ),
    { maxItems: 100, description: 'Every callback number of the organization: those it had and are not here are removed. At most 100.' },
  ),
})

const presentCallbackNumber = (entry: CallbackNumber) => ({ number: entry.number, provider: entry.provider, campaign_id: entry.campaignId, created_at: entry.createdAt })

export const RateLimitBody = Type.Object(
  {
    per_second: Type.Integer({ minimum: 1, maximum: MAX_RATE_LIMIT, description: PER_SECOND }),
    burst: Type.Integer({ minimum: 1, maximum: MAX_RATE_LIMIT, description: BURST }),
  },
  { description: "The organization's own rate limit on /api/v2, both figures. DELETE .../rate-limit returns it to the default." },
)

const RetentionDays = Type.Integer({ minimum: 1, maximum: MAX_RETENTION_DAYS, description: RETENTION })

export const RetentionBody = Type.Object({ retention_days: RetentionDays })

export const ContactCapBody = Type.Object(
  {
    per_24h: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONTACT_CAP, description: `${PER_24H} Left out or null: no such rule.` })),
    per_local_day: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONTACT_CAP, description: `${PER_LOCAL_DAY} Left out or null: no such rule.` })),
  },
  { description: `${CONTACT_CAP} Replaces the whole cap: a figure left out (or null) is no such rule; \`{}\` turns the cap off.`, additionalProperties: false },
)

const ChangeOrganizationBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  rate_limit: Type.Optional(RateLimitBody),
  retention_days: Type.Optional(RetentionDays),
  contact_cap: Type.Optional(ContactCapBody),
  callback_window_days: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CALLBACK_WINDOW_DAYS, description: CALLBACK_WINDOW })),
})

export const CreateOrganizationBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) })

const MAX_ORGANIZATIONS = 1000

const ListOrganizationsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ORGANIZATIONS, description: `At most this many (default 100, at most ${MAX_ORGANIZATIONS}).` })),
})

export const presentOrganization = (org: Organization) => ({
  id: org.id,
  name: org.name,
  created_at: org.createdAt,
  rate_limit: { per_second: org.rateLimit.perSecond, burst: org.rateLimit.burst },
  retention_days: org.retentionDays,
  contact_cap: { per_24h: org.contactCap.per_24h, per_local_day: org.contactCap.per_local_day },
  callback_window_days: org.callbackWindowDays,
})

export function organizationRoutes(app: FastifyInstance, deps: { ops: Operations; authenticator: Authenticator }) {
  app.post(
    '/admin/v1/organizations',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'createOrganization',
        summary: 'Create an organization',
        description: 'With the default rate limit and retention unless given. Issue it an API key next.',
        ...adminDocs,
        body: CreateOrganizationBody,
        response: { 201: Envelope(OrganizationSchema), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { name } = request.body as { name: string }
      const organization = await createOrganization(deps.ops, actorOf(request), name)
      return reply.code(201).send(envelope(request, presentOrganization(organization)))
    },
  )

  app.get(
    '/admin/v1/organizations',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'listOrganizations',
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
        operationId: 'getOrganization',
        summary: 'Look up an organization',
        description: 'Its name, rate limit and retention.',
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

  app.patch(
    '/admin/v1/organizations/:org_id',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'updateOrganization',
        summary: 'Change an organization',
        description:
          'Its name, its own rate limit (`rate_limit`, both figures), how long it keeps personal data (`retention_days`), its cap on attempts to one number across its campaigns (`contact_cap`), or how long after a task completed a call back still lands on it (`callback_window_days`). Every API process applies a new limit from its next lease of tokens: within a tenth of a second for an organization sending at its limit; the dispatchers apply a new cap from their next batch.',
        ...adminDocs,
        params: OrgParams,
        body: ChangeOrganizationBody,
        response: { 200: Envelope(OrganizationSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const { name, rate_limit, retention_days, contact_cap, callback_window_days } = request.body as Static<typeof ChangeOrganizationBody>
      const changes = {
        name,
        rateLimit: rate_limit === undefined ? undefined : { perSecond: rate_limit.per_second, burst: rate_limit.burst },
        retentionDays: retention_days,
        contactCap: contact_cap === undefined ? undefined : { per_24h: contact_cap.per_24h ?? null, per_local_day: contact_cap.per_local_day ?? null },
        callbackWindowDays: callback_window_days,
      }
      return reply.send(envelope(request, presentOrganization(await changeOrganization(deps.ops, actorOf(request), org_id, changes))))
    },
  )

  app.get(
    '/admin/v1/organizations/:org_id/callback-numbers',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'listCallbackNumbers',
        summary: "An organization's callback numbers",
        description: 'The numbers besides its campaigns’ own where a call from a person lands on their task (docs/callbacks.md), by number.',
        ...adminDocs,
        params: OrgParams,
        response: { 200: Envelope(Type.Array(CallbackNumberSchema)), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, (await callbackNumbersOf(deps.ops, org_id)).map(presentCallbackNumber)))
    },
  )

  app.put(
    '/admin/v1/organizations/:org_id/callback-numbers',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'setCallbackNumbers',
        summary: "Set an organization's callback numbers",
        description:
          'Numbers no campaign calls from (a published line, say) where a call from a person lands on their open or recently completed task of the organization, as a call to a campaign’s own number does (docs/callbacks.md). Each is answered through a campaign on a platform that takes calls; the list replaces the one before. A number is one organization’s.',
        ...adminDocs,
        params: OrgParams,
        body: CallbackNumbersBody,
        response: { 200: Envelope(Type.Array(CallbackNumberSchema)), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const { callback_numbers } = request.body as Static<typeof CallbackNumbersBody>
      return reply.send(envelope(request, (await setCallbackNumbers(deps.ops, actorOf(request), org_id, callback_numbers)).map(presentCallbackNumber)))
    },
  )

  app.delete(
    '/admin/v1/organizations/:org_id/rate-limit',
    {
      onRequest: requireOperator(deps.authenticator),
      schema: {
        operationId: 'resetOrganizationRateLimit',
        summary: "Return an organization's rate limit to the default",
        description: "The organization then follows the service's default rate limit again.",
        ...adminDocs,
        params: OrgParams,
        response: { 200: Envelope(OrganizationSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const organization = await changeOrganization(deps.ops, actorOf(request), org_id, { rateLimit: { perSecond: null, burst: null } })
      return reply.send(envelope(request, presentOrganization(organization)))
    },
  )
}
