/**
 * Reach statistics (domain/reachCounts.ts): when an organization's people
 * answer, by their own local hour and weekday, by attempt number, and how
 * long after the trigger they were reached; kept after the tasks themselves
 * are deleted at the end of its retention period (scope triggers:read, and
 * the operator).
 */
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { WEEKDAYS } from '../../domain/campaignSettings.ts'
import { REACH_DELAY_BOUNDS_S, type ReachStatistics, reachStatistics } from '../../domain/reachCounts.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Database } from '../../store/database.ts'
import { listReachCells } from '../../store/reachCounts.ts'
import { calendarDate, dateRangeProblems, OneOf } from '../../validation/fields.ts'
import { refineModel } from '../../validation/model.ts'
import { component } from '../openapi.ts'
import { envelope } from '../reply.ts'
import { authErrors, ChannelSchema, Envelope, notFound, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'

const ReachStatisticsQuery = refineModel(
  Type.Object({
    from: calendarDate('from', "The first local date (the person's), included."),
    to: calendarDate('to', 'The last local date, included.'),
    campaign: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A routing key: its campaigns, on every channel unless `channel` says.' })),
    channel: Type.Optional(ChannelSchema),
    test_mode: Type.Optional(Type.Boolean({ description: 'Test-mode attempts instead of real ones (default false).' })),
  }),
  dateRangeProblems,
)

const Tally = {
  attempts: Type.Integer({ description: 'Outbound attempts.' }),
  reached: Type.Integer({ description: 'Of them, those that reached the person (a call answered by them, a reply).' }),
}
const Share = (description: string) => Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: `${description}; null without attempts.` })

const ReachStatisticsSchema = component(
  'ReachStatistics',
  Type.Object({
    from: Type.String({ format: 'date' }),
    to: Type.String({ format: 'date' }),
    campaign: Type.Union([Type.String(), Type.Null()], { description: 'The routing key asked for; null for every campaign.' }),
    channel: Type.Union([ChannelSchema, Type.Null()]),
    test_mode: Type.Boolean(),
    ...Tally,
    attempt_seconds: Type.Integer({ description: 'How long the attempts lasted, in seconds.' }),
    outcomes: Type.Record(Type.String(), Type.Integer(), { description: 'Attempts by outcome (only outcomes that happened).' }),
    rates: Type.Object({
      reach: Share('Share of the attempts that reached the person'),
      voicemail: Share('Share a machine answered (voicemail and voicemail_left)'),
      no_answer: Share('Share nobody answered'),
    }),
    by_hour: Type.Array(Type.Object({ weekday: OneOf(WEEKDAYS), hour: Type.Integer({ minimum: 0, maximum: 23 }), ...Tally }), {
      description:
        "By the person's local weekday and hour of the attempt's start, in the zone their task's schedule was read in (the campaign's own, or their number's first): Monday 00:00 first, hours without attempts left out.",
    }),
    by_attempt: Type.Array(Type.Object({ attempt: Type.Integer({ minimum: 1 }), ...Tally }), {
      description: "The funnel: each attempt number's attempts, and the people reached at it.",
    }),
    by_day: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), ...Tally, outcomes: Type.Record(Type.String(), Type.Integer()) }), {
      description: 'By local date, oldest first, dates without attempts left out.',
    }),
    time_to_reach: Type.Object(
      {
        mean_s: Type.Union([Type.Number(), Type.Null()], { description: 'Mean seconds from the trigger to the start of the attempt that reached the person; null when none did.' }),
        buckets: Type.Array(
          Type.Object({
            up_to_s: Type.Union([Type.Integer(), Type.Null()], { description: `Upper bound in seconds (${REACH_DELAY_BOUNDS_S.join(', ')}); null for the last, longer.` }),
            reached: Type.Integer(),
          }),
        ),
      },
      { description: 'Of the attempts that reached the person: how long after the trigger they started.' },
    ),
  }),
)

type Query = Static<typeof ReachStatisticsQuery>

const present = (query: Query, statistics: ReachStatistics): Static<typeof ReachStatisticsSchema> => ({
  from: query.from,
  to: query.to,
  campaign: query.campaign ?? null,
  channel: query.channel ?? null,
  test_mode: query.test_mode ?? false,
  attempts: statistics.attempts,
  reached: statistics.reached,
  attempt_seconds: statistics.attemptSeconds,
  outcomes: statistics.outcomes,
  rates: { reach: statistics.rates.reach, voicemail: statistics.rates.voicemail, no_answer: statistics.rates.noAnswer },
  by_hour: statistics.byHour,
  by_attempt: statistics.byAttempt,
  by_day: statistics.byDay,
  time_to_reach: { mean_s: statistics.timeToReach.meanS, buckets: statistics.timeToReach.buckets.map((bucket) => ({ up_to_s: bucket.upToS, reached: bucket.reached })) },
})

export function reachStatisticsRoutes(app: FastifyInstance, deps: { db: Database; authenticator: Authenticator }) {
  for (const audience of audiences(deps, 'reach statistics')) {
    const { prefix, docs, params } = audience
    app.get(
      `${prefix}/reach-statistics`,
      {
        onRequest: audience.guard('triggers:read'),
        schema: {
          ...docs,
          operationId: audience.operationId('getReachStatistics'),
          summary: "Reach by the person's local hour, weekday and attempt number",
          description:
            "The outbound attempts of the organization's campaigns (of one routing key with `campaign`, one channel with `channel`) that started from local date `from` to `to` (at most a year; the person's own dates): " +
            'in all and by outcome, by local weekday and hour, by attempt number (the funnel), by date, and how long after the trigger the person was reached. ' +
            "Counted by the transaction that ends each attempt, and kept when the tasks themselves are deleted at the end of the organization's retention period.",
          params: Type.Object(params),
          querystring: ReachStatisticsQuery,
          response: { 200: Envelope(ReachStatisticsSchema), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const query = request.query as Query
        const orgId = await audience.orgId(request)
        const cells = await listReachCells(deps.db, orgId, {
          from: query.from,
          to: query.to,
          campaign: query.campaign,
          channel: query.channel,
          testMode: query.test_mode ?? false,
        })
        return reply.send(envelope(request, present(query, reachStatistics(cells))))
      },
    )
  }
}
