/**
 * Daily counts (domain/dailyCounts.ts): what an organization's tasks and
 * calls came to, day by day and campaign by campaign, kept after the tasks
 * themselves are deleted at the end of its retention period (scope
 * triggers:read, and the operator).
 */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { type CampaignDay, campaignDays } from '../../domain/dailyCounts.ts'
import { INTERACTION_OUTCOMES, TASK_OUTCOMES } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Database } from '../../store/database.ts'
import { listDailyCounts } from '../../store/dailyCounts.ts'
import { calendarDate, dateRangeProblems } from '../../validation/fields.ts'
import { refineModel } from '../../validation/model.ts'
import { envelope } from '../reply.ts'
import { authErrors, ChannelSchema, Envelope, notFound, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'
import { component } from '../openapi.ts'

const DailyCountsQuery = refineModel(
  Type.Object({
    from: calendarDate('from', 'The first day (UTC), included.'),
    to: calendarDate('to', 'The last day (UTC), included.'),
    campaign: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A routing key: its campaigns on every channel.' })),
  }),
  dateRangeProblems,
)

const counts = (outcomes: readonly string[], description: string) =>
  Type.Object({ total: Type.Integer(), ...Object.fromEntries(outcomes.map((outcome) => [outcome, Type.Optional(Type.Integer())])) }, { description })

const CampaignDaySchema = component('CampaignDay', Type.Object({
  day: Type.String({ format: 'date', examples: ['2026-11-27'] }),
  campaign: Type.String({ description: 'Routing key.' }),
  channel: ChannelSchema,
  test_mode: Type.Boolean(),
  tasks: counts(TASK_OUTCOMES, 'Tasks completed that day, in all and by outcome (every outcome named, 0 where none).'),
  task_attempts: Type.Integer({ description: 'The attempts those tasks took, in all.' }),
  attempts: counts(
    [...new Set(Object.values(INTERACTION_OUTCOMES).flat())],
    "Outbound attempts (calls, WhatsApp conversations, texts) that ended that day, in all and by outcome (every outcome of the campaign's channel named).",
  ),
  attempt_seconds: Type.Integer({ description: 'How long those attempts lasted, in seconds: a call from its answer to its end.' }),
  inbound: Type.Integer({ description: 'Messages from people that answered no running conversation, that day.' }),
}))

const present = (day: CampaignDay): Static<typeof CampaignDaySchema> => ({
  day: day.day,
  campaign: day.campaign,
  channel: day.channel,
  test_mode: day.testMode,
  tasks: day.tasks,
  task_attempts: day.taskAttempts,
  attempts: day.outbound,
  attempt_seconds: day.outboundSeconds,
  inbound: day.inbound,
})

export function dailyCountRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator }) {
  for (const audience of audiences(deps, 'daily counts')) {
    const { prefix, docs, params } = audience
    app.get(
      `${prefix}/daily-counts`,
      {
        onRequest: audience.guard('triggers:read'),
        schema: {
          ...docs,
          operationId: audience.operationId('listDailyCounts'),
          summary: 'Count tasks and attempts by day and campaign',
          description:
            'For each UTC day from `from` to `to` (at most a year) and each campaign (of one routing key, with `campaign`) and test mode with anything to count: the tasks completed that day by outcome and the attempts they took, ' +
            'the outbound attempts that ended that day by outcome and how long they lasted, and the inbound messages. Counted by the transaction that completes each task or ends each attempt, ' +
            "and kept when the tasks themselves are deleted at the end of the organization's retention period. Days with nothing are left out; oldest day first.",
          params: Type.Object(params),
          querystring: DailyCountsQuery,
          response: { 200: Envelope(Type.Array(CampaignDaySchema)), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const query = request.query as Static<typeof DailyCountsQuery>
        const orgId = await audience.orgId(request)
        const found = await listDailyCounts(deps.db, orgId, { from: query.from, to: query.to, campaign: query.campaign })
        return reply.send(envelope(request, campaignDays(found).map(present)))
      },
    )
  }
}
