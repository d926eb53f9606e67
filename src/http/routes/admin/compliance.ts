/**
 * The law the operator keeps (docs/compliance.md): the calling-law profiles
 * in force, and the operator's overrides of their rules (a rule added or
 * replaced, a shipped rule disabled); and the do-not-call registries loaded
 * (loaded by the command line, `registry load`, which reads a file of
 * millions of numbers: listed, read and deleted here).
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { CONSENT_KINDS, type LawRule, PURPOSES, type RuleOverride, shippedProfiles } from '../../../domain/callingLaw.ts'
import { WEEKDAYS } from '../../../domain/campaignSettings.ts'
import { ApiError, refuse } from '../../../domain/errors.ts'
import { SCHEDULE_FIELD_RULES, windowProblems } from '../../../domain/schedule.ts'
import { CHANNELS } from '../../../domain/types.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import type { CallingLaw } from '../../../services/callingLaw.ts'
import { type RegistryOperations, removeRegistry, requireRegistry } from '../../../services/registries.ts'
import { listRuleOverrides } from '../../../store/callingLawOverrides.ts'
import type { Database } from '../../../store/database.ts'
import { listRegistries, type Registry } from '../../../store/registries.ts'
import { disableRule, overrideRule, removeOverride } from '../../../services/callingLawOverrides.ts'
import { refine, refineModel } from '../../../validation/model.ts'
import { actorOf, requireOperator } from '../../auth.ts'
import { envelope } from '../../reply.ts'
import { authErrors, Envelope, notFound, OneOf, Timestamp, validationErrors } from '../../schemas.ts'
import { adminDocs } from './shared.ts'

const RegistrySchema = Type.Object({
  id: Type.String(),
  org_id: Type.Union([Type.String(), Type.Null()], { description: "Null: the whole service's, for every organization." }),
  name: Type.String(),
  purposes: Type.Array(OneOf(PURPOSES), { description: 'A number listed is blocked for these purposes...' }),
  overridden_by: Type.Array(OneOf(CONSENT_KINDS), { description: '...unless a consent of one of these kinds is on file for the channel and purpose.' }),
  list_date: Type.String({ format: 'date', description: "The list's own date." }),
  numbers: Type.Integer({ description: 'Numbers listed, each once.' }),
  loaded_at: Timestamp,
  created_at: Timestamp,
})

export const presentRegistry = (registry: Registry) => ({
  id: registry.id,
  org_id: registry.orgId,
  name: registry.name,
  purposes: registry.purposes,
  overridden_by: registry.overriddenBy,
  list_date: registry.listDate,
  numbers: registry.numbers,
  loaded_at: registry.loadedAt,
  created_at: registry.createdAt,
})

const time = (field: 'start' | 'end') =>
  refine(Type.String({ maxLength: 5 }), {
    check: (value) => {
      const problem = SCHEDULE_FIELD_RULES[field](value)
      return problem === undefined ? value : refuse(problem)
    },
  })
const WindowSchema = refineModel(
  Type.Object({ days: Type.Array(OneOf(WEEKDAYS), { minItems: 1, maxItems: 7, uniqueItems: true }), start: time('start'), end: time('end') }, { additionalProperties: false }),
  windowProblems,
)
const common = {
  id: Type.String({ maxLength: 100 }),
  purposes: Type.Array(OneOf(PURPOSES), { minItems: 1, maxItems: PURPOSES.length, uniqueItems: true }),
  channels: Type.Array(OneOf(CHANNELS), { minItems: 1, maxItems: CHANNELS.length, uniqueItems: true }),
  applies_to: Type.Optional(Type.Literal('artificial_voice')),
  source: Type.Object({ citation: Type.String({ minLength: 1, maxLength: 300 }), url: Type.String({ minLength: 1, maxLength: 2048, format: 'uri' }) }, { additionalProperties: false }),
  effective_from: Type.String({ format: 'date', maxLength: 10 }),
  note: Type.Optional(Type.String({ maxLength: 2000 })),
}
/** A holiday: a fixed date (month, day), the nth weekday of a month (month, weekday, nth; -1 the last), or days from Easter Sunday (easter_offset). */
const HolidaySchema = refineModel(
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 100 }),
      month: Type.Optional(Type.Integer({ minimum: 1, maximum: 12 })),
      day: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })),
      weekday: Type.Optional(OneOf(WEEKDAYS)),
      nth: Type.Optional(Type.Integer({ minimum: -1, maximum: 5 })),
      easter_offset: Type.Optional(Type.Integer({ minimum: -100, maximum: 100 })),
    },
    { additionalProperties: false },
  ),
  (holiday) => {
    const fixed = holiday.month !== undefined && holiday.day !== undefined && holiday.weekday === undefined && holiday.nth === undefined && holiday.easter_offset === undefined
    const nthWeekday = holiday.month !== undefined && holiday.weekday !== undefined && holiday.nth !== undefined && holiday.nth !== 0 && holiday.day === undefined && holiday.easter_offset === undefined
    const easter = holiday.easter_offset !== undefined && holiday.month === undefined && holiday.day === undefined && holiday.weekday === undefined && holiday.nth === undefined
    return fixed || nthWeekday || easter ? [] : [{ path: [], message: 'a holiday is {month, day}, {month, weekday, nth} (nth 1 to 5, or -1 for the last) or {easter_offset}' }]
  },
)
const LawRuleSchema = Type.Union(
  [
    Type.Object({ ...common, kind: Type.Literal('hours'), windows: Type.Array(WindowSchema, { minItems: 1, maxItems: 14 }) }, { additionalProperties: false }),
    Type.Object({ ...common, kind: Type.Literal('forbidden_dates'), holidays: Type.Array(HolidaySchema, { minItems: 1, maxItems: 40 }) }, { additionalProperties: false }),
    Type.Object({ ...common, kind: Type.Literal('cap'), max_attempts: Type.Integer({ minimum: 1, maximum: 1000 }), per_hours: Type.Integer({ minimum: 1, maximum: 24 * 366 }), scope: OneOf(['subject', 'any'] as const) }, { additionalProperties: false }),
    Type.Object({ ...common, kind: Type.Literal('consent'), consent_kinds: Type.Array(OneOf(CONSENT_KINDS), { minItems: 1, maxItems: CONSENT_KINDS.length, uniqueItems: true }) }, { additionalProperties: false }),
  ],
  { description: 'A rule as the shipped profiles hold them (docs/compliance.md): `hours`, `forbidden_dates`, `cap` or `consent`, with its source and effective date.' },
)

const OverrideSchema = Type.Object({
  rule_id: Type.String(),
  profile_id: Type.String(),
  rule: Type.Union([Type.Unknown(), Type.Null()], { description: 'The rule in force in place of the shipped one (or added); null: the shipped rule is disabled.' }),
  reason: Type.String(),
  updated_at: Timestamp,
})

const presentOverride = (override: RuleOverride) => ({ rule_id: override.ruleId, profile_id: override.profileId, rule: override.rule, reason: override.reason, updated_at: override.updatedAt })

const ReasonBody = Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500, description: "Why: counsel's advice, a change of the law (recorded in the audit log)." }) }, { additionalProperties: false })

export function complianceRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator; law: CallingLaw; registries: RegistryOperations }) {
  const guard = requireOperator(deps.authenticator)
  const { db, law } = deps
  const overrideOps = { db, now: deps.registries.now, law }
  const ruleParams = Type.Object({ rule_id: Type.String({ maxLength: 100 }) })

  app.get(
    '/admin/v1/calling-law',
    {
      onRequest: guard,
      schema: {
        ...adminDocs,
        operationId: 'getCallingLaw',
        summary: 'The calling-law profiles in force',
        description: "The shipped profiles with the operator's overrides applied (each changed profile versioned anew), the overrides themselves, and the disclaimer: a starting point for the operator's counsel.",
        response: {
          200: Envelope(Type.Object({ disclaimer: Type.String(), profiles: Type.Array(Type.Unknown()), overrides: Type.Array(OverrideSchema) })),
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      law.changed()
      const { profiles } = await law.current(db)
      const overrides = await listRuleOverrides(db)
      return reply.send(envelope(request, { disclaimer: shippedProfiles().disclaimer, profiles, overrides: overrides.map(presentOverride) }))
    },
  )

  app.put(
    '/admin/v1/calling-law/rules/:rule_id',
    {
      onRequest: guard,
      schema: {
        ...adminDocs,
        operationId: 'putCallingLawRule',
        summary: 'Add or replace a rule',
        description: "The rule of this id is in force in place of the shipped one (or added to its profile), from the next decision on, within a second in every process. Its id must be the path's.",
        params: ruleParams,
        body: Type.Object({ rule: LawRuleSchema, reason: ReasonBody.properties.reason }, { additionalProperties: false }),
        response: { 200: Envelope(OverrideSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { rule_id } = request.params as { rule_id: string }
      const { rule, reason } = request.body as { rule: LawRule; reason: string }
      if (rule.id !== rule_id) throw new ApiError('bad_request', `The rule's id (${rule.id}) is not the path's (${rule_id}).`)
      const override = await overrideRule(overrideOps, actorOf(request), rule, reason)
      return reply.send(envelope(request, presentOverride(override)))
    },
  )

  app.post(
    '/admin/v1/calling-law/rules/:rule_id/disable',
    {
      onRequest: guard,
      schema: {
        ...adminDocs,
        operationId: 'disableCallingLawRule',
        summary: 'Disable a rule',
        description: 'The rule no longer applies to any decision, until its override is removed.',
        params: ruleParams,
        body: ReasonBody,
        response: { 200: Envelope(OverrideSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { rule_id } = request.params as { rule_id: string }
      const override = await disableRule(overrideOps, actorOf(request), rule_id, (request.body as { reason: string }).reason)
      return reply.send(envelope(request, presentOverride(override)))
    },
  )

  app.delete(
    '/admin/v1/calling-law/rules/:rule_id/override',
    {
      onRequest: guard,
      schema: {
        ...adminDocs,
        operationId: 'deleteCallingLawOverride',
        summary: "Remove a rule's override",
        description: 'The shipped rule applies again; a rule the operator added is gone.',
        params: ruleParams,
        response: { 204: Type.Null(), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { rule_id } = request.params as { rule_id: string }
      await removeOverride(overrideOps, actorOf(request), rule_id)
      return reply.code(204).send()
    },
  )

  const registryParams = Type.Object({ registry_id: Type.String({ maxLength: 40 }) })
  app.get(
    '/admin/v1/registries',
    {
      onRequest: guard,
      schema: {
        ...adminDocs,
        operationId: 'listRegistries',
        summary: 'List the do-not-call registries',
        description: "The service's and every organization's (or one's, with `org_id`, with the service's). Loaded by the command line: `registry load`.",
        querystring: Type.Object({ org_id: Type.Optional(Type.String({ maxLength: 40 })) }),
        response: { 200: Envelope(Type.Array(RegistrySchema)), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.query as { org_id?: string }
      return reply.send(envelope(request, (await listRegistries(db, org_id)).map(presentRegistry)))
    },
  )

  app.get(
    '/admin/v1/registries/:registry_id',
    { onRequest: guard, schema: { ...adminDocs, operationId: 'getRegistry', summary: 'Get a registry', description: 'What it covers, its date and how many numbers it lists.', params: registryParams, response: { 200: Envelope(RegistrySchema), ...authErrors, ...notFound } } },
    async (request, reply) => {
      const { registry_id } = request.params as { registry_id: string }
      return reply.send(envelope(request, presentRegistry(await requireRegistry(deps.registries, registry_id))))
    },
  )

  app.delete(
    '/admin/v1/registries/:registry_id',
    {
      onRequest: guard,
      schema: { ...adminDocs, operationId: 'deleteRegistry', summary: 'Delete a registry', description: 'Its numbers are no longer looked up, from the next decision on, and are deleted.', params: registryParams, response: { 204: Type.Null(), ...authErrors, ...notFound } },
    },
    async (request, reply) => {
      const { registry_id } = request.params as { registry_id: string }
      await removeRegistry(deps.registries, actorOf(request), registry_id)
      return reply.code(204).send()
    },
  )
}
