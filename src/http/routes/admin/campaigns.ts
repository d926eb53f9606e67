/** Campaigns on the admin API: create, change (PATCH), list, pause and resume. */
import { type TString, Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { MAX_PER_SECOND } from '../../../domain/pacing.ts'
import { CONSENT_KINDS, PURPOSES } from '../../../domain/callingLaw.ts'
import {
  AFTER_VOICEMAIL_LEFT,
  ATTEMPT_TIMINGS,
  DEFAULT_VOICEMAIL_LEFT_RETRY_DELAY_S,
  FALLBACK_CONDITIONS,
  MAX_NO_REPLY_MINUTES,
  MAX_CONVERSATION_S,
  MAX_RESULT_WAIT_S,
  MIN_CONVERSATION_S,
  PROVIDERS,
  RETRY_OUTCOMES,
  type Schedule,
  WEEKDAYS,
} from '../../../domain/campaignSettings.ts'
import { refuse } from '../../../domain/errors.ts'
import { SCHEDULE_FIELD_RULES, scheduleRelationProblems, windowProblems } from '../../../domain/schedule.ts'
import type { Campaign } from '../../../domain/types.ts'
import {
  type CampaignChanges,
  createCampaign,
  type CreateCampaignInput,
  listCampaigns,
  type Operations,
  previewSchedule,
  updateCampaign,
} from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import type { CampaignDirectory } from '../../../services/campaignDirectory.ts'
import { type CampaignPauses, PAUSE_ACTIONS, type PauseAction } from '../../../services/campaignPauses.ts'
import { refine, refineModel } from '../../../validation/model.ts'
import { VoicemailSchema } from '../../../channels/twilio/voicemail.ts'
import { ContactInput } from '../triggers.ts'
import { actorOf, requireOperator } from '../../auth.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, ChannelSchema, conflict, Envelope, instant, notFound, OneOf, Timestamp, validationErrors } from '../../schemas.ts'
import { component } from '../../openapi.ts'

/** A string field that follows one of the schedule's field rules. */
function ruled<S extends TString>(schema: S, rule: (value: string) => string | undefined): S {
  return refine(schema, {
    check: (value) => {
      const problem = rule(value)
      return problem === undefined ? value : refuse(problem)
    },
  })
}

const rules = SCHEDULE_FIELD_RULES

const WindowSchema = refineModel(
  Type.Object(
    {
      days: Type.Array(OneOf(WEEKDAYS), { maxItems: 7 }),
      start: ruled(Type.String({ maxLength: 5, description: 'HH:MM, local time, inclusive.', examples: ['09:00'] }), rules.start),
      end: ruled(
        Type.String({ maxLength: 5, description: 'HH:MM, local time, exclusive; 24:00 for the end of the day.', examples: ['20:00'] }),
        rules.end,
      ),
    },
    { additionalProperties: false },
  ),
  windowProblems,
)

/**
 * Every rule of a schedule is checked here, each field's and each
 * relation's, so that one 422 lists all of a schedule's problems with the
 * rest of the body's. The provider's settings, which depend on the whole
 * body, are checked once it is valid.
 */
const ScheduleSchema = refineModel(Type.Object(
  {
    timezone: ruled(
      Type.String({ minLength: 1, maxLength: 64, description: '"contact" to follow each contact\'s own zones, or one IANA zone for every task.' }),
      rules.timezone,
    ),
    fallback_timezone: Type.Optional(
      ruled(
        Type.String({
          minLength: 1,
          maxLength: 64,
          description:
            'The zone of contacts whose number belongs to no country (+800...), decided when their trigger is accepted: a change applies to triggers accepted after it.',
        }),
        rules.fallback_timezone,
      ),
    ),
    windows: Type.Array(WindowSchema, { maxItems: 50 }),
    blackout_dates: Type.Optional(
      Type.Array(ruled(Type.String({ maxLength: 10 }), rules.blackout_date), { maxItems: 366, description: 'Local dates, YYYY-MM-DD.' }),
    ),
    starts_at: Type.Optional(ruled(Type.String({ maxLength: 40, description: 'ISO 8601 instant.' }), rules.starts_at)),
    ends_at: Type.Optional(ruled(Type.String({ maxLength: 40, description: 'ISO 8601 instant.' }), rules.ends_at)),
  },
  {
    additionalProperties: false,
    description: "When outreach may start, in the local time of every zone the contact may be in. Default: every day 09:00-20:00 in the contact's zones.",
  },
), scheduleRelationProblems)

const Seconds = (description: string, max: number) => Type.Integer({ minimum: 0, maximum: max, description })
const DAY_S = 86_400

const AttemptsSchema = Type.Object(
  {
    max: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, description: 'Most attempts per task. Default 3.' })),
    retry_delays_s: Type.Optional(
      Type.Object(
        Object.fromEntries(RETRY_OUTCOMES.map((outcome) => [outcome, Type.Optional(Seconds(`After ${outcome}.`, 30 * DAY_S))])),
        { additionalProperties: false, description: 'Seconds until the next attempt, by outcome; a retry also waits for the next window.' },
      ),
    ),
    expire_after_s: Type.Optional(Type.Integer({ minimum: 60, maximum: 90 * DAY_S, description: 'From the trigger. Default 7 days.' })),
    voicemail_left: Type.Optional(
      refineModel(
      Type.Object(
        {
          then: { ...OneOf(AFTER_VOICEMAIL_LEFT), description: 'stop: the task completes as unreachable (no person was reached; its last interaction says a message was left). retry: another attempt after delay_s, within the attempts left.' },
          delay_s: Type.Optional(
            Seconds(
              `With retry: seconds from the message to the next attempt, which also waits for the next window. Default ${DEFAULT_VOICEMAIL_LEFT_RETRY_DELAY_S} (a day and two hours: the next day, at another local hour).`,
              30 * DAY_S,
            ),
          ),
        },
        {
          additionalProperties: false,
          description:
            "What follows an interaction that ended voicemail_left (a Twilio campaign whose provider_config.voicemail.policy is leave_message). Default {\"then\": \"stop\"}; absent from the campaign until sent.",
        },
      ),
      // A delay that would never apply is a mistake the client should hear of, not a setting kept in silence.
      (value) => (value.then === 'stop' && value.delay_s !== undefined ? [{ path: ['delay_s'], message: 'delay_s applies only when then is retry' }] : []),
      ),
    ),
    timing: Type.Optional({
      ...OneOf(ATTEMPT_TIMINGS),
      description:
        "When a retry goes once its delay is over. fixed (the default): at the first opening of the schedule. learned: at the local hour, within the next three days and inside the schedule and the law's calling hours, where the campaign has reached people most often (Thompson sampling over the hours of the week, on the organization's reach as a prior), trying an hour not tried for the person yet; the task's decision says why (reason learned_hour). Absent from the campaign until sent.",
    }),
  },
  { additionalProperties: false, description: 'Omitted fields take their defaults.' },
)

const ResultsSchema = Type.Object(
  {
    wait_s: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_RESULT_WAIT_S,
        description:
          "Seconds a call that completed (or a WhatsApp conversation that got a reply) waits for its conversation's result before interaction.finalized is sent without one; the result ends the wait at once. Default 0: reported at once, and a result that comes later is sent as interaction.result_added.",
      }),
    ),
    conversation_s: Type.Optional(
      Type.Integer({
        minimum: MIN_CONVERSATION_S,
        maximum: MAX_CONVERSATION_S,
        description:
          "WhatsApp and SMS campaigns: a conversation the person replied on stays one interaction, gathering their messages, until your result ends it, their WhatsApp window closes, or this many seconds after their first reply have passed (docs/messaging.md). Absent: wait_s applies.",
      }),
    ),
  },
  { additionalProperties: false, description: "What the campaign does with its conversations' results (POST /api/v2/interactions/{id}/result)." },
)

const PacingSchema = Type.Object(
  {
    per_second: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PER_SECOND,
        description:
          "Most attempts started a second from the campaign's sender (its WhatsApp number, its Twilio account), across every worker. Default: the provider's documented rate (WhatsApp Cloud 80 messages a second per number, Twilio 1 call a second per account), none for the simulator and the agent platforms.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description: "The pace of the campaign's sender; `{}` for the provider's. A task held by it waits a moment, its attempt not spent (`waiting` on the task).",
  },
)

const FallbackSchema = Type.Object(
  {
    campaign_id: Type.String({ minLength: 1, maxLength: 64, description: 'Another campaign of the organization, on another channel, with no fallback step of its own.' }),
    when: Type.Array(OneOf(FALLBACK_CONDITIONS), {
      minItems: 1,
      maxItems: FALLBACK_CONDITIONS.length,
      description:
        "When a task goes on to it: `undelivered` (the message failed: a failed status, or a send that failed), `not_on_whatsapp` (WhatsApp Cloud's error 131026, WhatsApp campaigns only: the task goes on at once, in the fallback campaign's window), `no_reply` (the message was delivered or read, or the call reached no conversation, and no reply came). A task falls back at the first attempt that meets one, before any retry of its own.",
    }),
    no_reply_minutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_NO_REPLY_MINUTES,
        description:
          "With `no_reply`: minutes of this campaign's schedule, open in the contact's zones, from the message's start, that the person has to reply (60 for a message sent at 19:50 into a window that closes at 20:00: 10 minutes that evening, 50 the next morning). The message is over unanswered then, in place of its provider's reply window: a reply until then reaches the task. Absent: when the reply window ends.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "A second step for the campaign's tasks: the same task (ids, contact, context, expiry) goes on to another campaign on another channel, its attempts counted afresh under that campaign's policy, due at that campaign's next opening in the contact's zones. Once per task. `null` on a PATCH removes it (tasks that fell back already go on).",
  },
)

const ComplianceSchema = component(
  'CampaignCompliance',
  Type.Object(
    {
      purpose: Type.Optional({
        ...OneOf(PURPOSES),
        description:
          'Why its tasks contact people: informational (the default), transactional, healthcare or marketing. The calling-law profiles bind by purpose (telephone-solicitation laws bind marketing), and so does the consent it requires by default.',
      }),
      subject: Type.Optional(
        Type.String({ minLength: 1, maxLength: 100, description: "What its attempts are about, for a law's cap per number and subject (Florida's 3 calls in 24 hours on the same subject): campaigns of one subject count together. Default: its routing key." }),
      ),
      artificial_voice: Type.Optional(
        Type.Boolean({ description: 'Whether its calls speak with an artificial voice (an AI agent, a recording): the TCPA then requires consent. Default: true on vapi, retell and elevenlabs, false otherwise.' }),
      ),
      consent: Type.Optional(
        Type.Object(
          {
            voice: Type.Optional(Type.Array(OneOf(CONSENT_KINDS), { maxItems: CONSENT_KINDS.length, uniqueItems: true })),
            whatsapp: Type.Optional(Type.Array(OneOf(CONSENT_KINDS), { maxItems: CONSENT_KINDS.length, uniqueItems: true })),
            sms: Type.Optional(Type.Array(OneOf(CONSENT_KINDS), { maxItems: CONSENT_KINDS.length, uniqueItems: true })),
          },
          {
            additionalProperties: false,
            description:
              'The consent kinds, any one of which must be on file for the number, the channel and the purpose, by channel ([] for none of its own; the law of the number may still require one). Default: marketing requires express_written by voice and by SMS, whatsapp_opt_in on WhatsApp; other purposes none.',
          },
        ),
      ),
    },
    { additionalProperties: false, description: "What its tasks are for, and what must be on file before each attempt (docs/compliance.md). `{}`: the defaults." },
  ),
)

const settingsFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  context: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50, description: 'Default task context.' })),
  schedule: Type.Optional(ScheduleSchema),
  attempts: Type.Optional(AttemptsSchema),
  provider: Type.Optional({ ...OneOf(PROVIDERS), description: 'simulator (default; reaches nobody), twilio (voice), whatsapp_cloud (WhatsApp), vapi (voice, Vapi assistants), retell (voice, Retell AI agents), elevenlabs (voice, ElevenLabs agents).' }),
  provider_config: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      maxProperties: 20,
      description: "The provider's settings. Credentials are never sent: name the environment variables that hold them.",
    }),
  ),
  max_concurrent: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100_000, description: 'Most interactions of the campaign at once. No limit when absent.' }),
  ),
  results: Type.Optional(ResultsSchema),
  pacing: Type.Optional(PacingSchema),
  fallback: Type.Optional(FallbackSchema),
  compliance: Type.Optional(ComplianceSchema),
}

export const CreateCampaignBody = Type.Object({
  routing_key: Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
    description: 'What triggers send as `campaign`: letters, digits, dot, dash, underscore.',
  }),
  channel: ChannelSchema,
  ...settingsFields,
})

export const UpdateCampaignBody = Type.Object(settingsFields, {
  description: 'Each field sent replaces the current one; `max_concurrent: null` removes the limit, `fallback: null` the fallback step.',
})

/** A Twilio campaign's voicemail policy, as its provider_config holds it: the schema its provider checks (channels/twilio/voicemail.ts). */
const TwilioVoicemailSchema = component('TwilioVoicemail', VoicemailSchema)

const CampaignSchema = component('Campaign', Type.Object({
  id: Type.String(),
  routing_key: Type.String(),
  channel: ChannelSchema,
  name: Type.String(),
  context: Type.Record(Type.String(), Type.Unknown()),
  schedule: Type.Unknown(),
  attempts: Type.Unknown(),
  provider: OneOf(PROVIDERS),
  provider_config: Type.Object(
    { voicemail: Type.Optional(TwilioVoicemailSchema) },
    { additionalProperties: true, description: "The provider's settings (see the manual's docs/providers/); a twilio campaign's may hold its voicemail policy." },
  ),
  max_concurrent: Type.Union([Type.Integer(), Type.Null()]),
  results: Type.Object({ wait_s: Type.Integer(), conversation_s: Type.Optional(Type.Integer()) }),
  pacing: Type.Object({ per_second: Type.Optional(Type.Integer()) }, { description: 'As set; `{}`: the provider\'s documented rate.' }),
  fallback: Type.Union([FallbackSchema, Type.Null()]),
  compliance: ComplianceSchema,
  paused_at: Type.Union([Timestamp, Type.Null()], { description: 'When the campaign was paused: no attempt starts until it is resumed. Null while it runs.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
}))

export const presentCampaign = (campaign: Campaign) => ({
  id: campaign.id,
  routing_key: campaign.routingKey,
  channel: campaign.channel,
  name: campaign.name,
  context: campaign.context,
  schedule: campaign.schedule,
  attempts: campaign.attempts,
  provider: campaign.provider,
  provider_config: campaign.providerConfig,
  max_concurrent: campaign.maxConcurrent,
  results: campaign.results,
  pacing: campaign.pacing,
  fallback: campaign.fallback,
  compliance: campaign.compliance,
  paused_at: campaign.pausedAt,
  created_at: campaign.createdAt,
  updated_at: campaign.updatedAt,
})

const PAUSE_DOCS: Record<PauseAction, { operationId: string; summary: string; description: string }> = {
  pause: {
    operationId: 'adminPauseCampaign',
    summary: 'Pause a campaign',
    description:
      'No attempt of its tasks starts until it is resumed. Its triggers are still accepted and its tasks still fall due; interactions already running finish and are reported, and their retries are scheduled as usual. Pausing a paused campaign keeps its `paused_at`.',
  },
  resume: {
    operationId: 'adminResumeCampaign',
    summary: 'Resume a paused campaign',
    description: 'Its tasks that fell due while it was paused start at once, within its schedule. Resuming a campaign that runs changes nothing.',
  },
}

const MAX_PREVIEW_PERIODS = 20

const SchedulePreviewBody = Type.Object(
  {
    schedule: ScheduleSchema,
    phone: Type.Optional({ ...ContactInput.properties.phone, description: "The contact's number: its zones, as a trigger's would be told." }),
    timezone: Type.Optional({ ...ContactInput.properties.timezone, description: "The contact's IANA zone, as contact.timezone on a trigger." }),
    from: Type.Optional(instant('from', 'From when (RFC 3339, with an offset). Default: now.')),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PREVIEW_PERIODS, description: 'How many periods (default 5).' })),
  },
  { additionalProperties: false },
)

const SchedulePreviewSchema = component('SchedulePreview', Type.Object({
  zones: Type.Array(Type.String(), { description: 'The zones the schedule is read in for this contact: open periods are those open in all of them at once.' }),
  zone_source: Type.String({ description: '`schedule` (the campaign keeps a zone of its own), or what told the contact\'s zones, as `timezone_source` on a task.' }),
  openings: Type.Array(
    Type.Object({
      opens_at: Timestamp,
      closes_at: Type.Union([Timestamp, Type.Null()], { description: 'Null when it is still open two years on.' }),
    }),
  ),
}))

export function campaignRoutes(
  app: FastifyInstance,
  deps: { ops: Operations; authenticator: Authenticator; campaigns: CampaignDirectory; pauses: CampaignPauses },
) {
  const { ops, authenticator, campaigns, pauses } = deps
  const CampaignParams = Type.Object({ org_id: Type.String(), campaign_id: Type.String() })

  app.post(
    '/admin/v1/organizations/:org_id/campaigns',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'createCampaign',
        summary: 'Create a campaign',
        description: 'A routing key may have one campaign per channel.',
        params: OrgParams,
        body: CreateCampaignBody,
        response: { 201: Envelope(CampaignSchema), ...authErrors, ...notFound, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const campaign = await createCampaign(ops, actorOf(request), org_id, request.body as CreateCampaignInput)
      campaigns.forget(org_id, campaign.routingKey)
      return reply.code(201).send(envelope(request, presentCampaign(campaign)))
    },
  )

  app.patch(
    '/admin/v1/organizations/:org_id/campaigns/:campaign_id',
    {
      onRequest: requireOperator(authenticator),
      // Validation drops a null as "not sent"; for max_concurrent, null means "no limit".
      preValidation: (request, _reply, done) => {
        const raw = request.body as Record<string, unknown> | undefined
        request.clearMaxConcurrent = typeof raw === 'object' && raw !== null && raw.max_concurrent === null
        request.clearFallback = typeof raw === 'object' && raw !== null && raw.fallback === null
        done()
      },
      schema: {
        ...adminDocs,
        operationId: 'updateCampaign',
        summary: "Change a campaign's settings",
        description: 'Routing key and channel never change. Tasks already waiting follow the new settings from their next step on.',
        params: CampaignParams,
        body: UpdateCampaignBody,
        response: { 200: Envelope(CampaignSchema), ...authErrors, ...notFound, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id, campaign_id } = request.params as { org_id: string; campaign_id: string }
      const changes = { ...(request.body as CampaignChanges), clearMaxConcurrent: request.clearMaxConcurrent, clearFallback: request.clearFallback }
      const campaign = await updateCampaign(ops, actorOf(request), org_id, campaign_id, changes)
      campaigns.forget(org_id, campaign.routingKey)
      return reply.send(envelope(request, presentCampaign(campaign)))
    },
  )

  app.get(
    '/admin/v1/organizations/:org_id/campaigns',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'listCampaigns',
        summary: "List an organization's campaigns",
        description: 'Every campaign with its settings.',
        params: OrgParams,
        response: { 200: Envelope(Type.Array(CampaignSchema)), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, (await listCampaigns(ops, org_id)).map(presentCampaign)))
    },
  )

  app.post(
    '/admin/v1/schedule-preview',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        operationId: 'previewSchedule',
        summary: 'Preview a schedule for one contact',
        description:
          "The next periods in which the schedule (as a campaign's, saved or not) lets outreach start for a contact of this phone or zone: each from when it opens to when it closes, in every zone the contact may be in at once.",
        body: SchedulePreviewBody,
        response: { 200: Envelope(SchedulePreviewSchema), ...authErrors, ...validationErrors },
      },
    },
    async (request, reply) => {
      const body = request.body as { schedule: Schedule; phone?: string; timezone?: string; from?: string; count?: number }
      const from = body.from === undefined ? ops.now() : Date.parse(body.from)
      const preview = previewSchedule(body.schedule, body, from, body.count ?? 5)
      return reply.send(
        envelope(request, {
          zones: preview.zones,
          zone_source: preview.zoneSource,
          openings: preview.periods.map(({ opensAt, closesAt }) => ({
            opens_at: new Date(opensAt).toISOString(),
            closes_at: closesAt === null ? null : new Date(closesAt).toISOString(),
          })),
        }),
      )
    },
  )

  for (const action of PAUSE_ACTIONS) {
    app.post(
      `/admin/v1/organizations/:org_id/campaigns/:campaign_id/${action}`,
      {
        onRequest: requireOperator(authenticator),
        schema: { ...adminDocs, ...PAUSE_DOCS[action], params: CampaignParams, response: { 200: Envelope(CampaignSchema), ...authErrors, ...notFound } },
      },
      async (request, reply) => {
        const { org_id, campaign_id } = request.params as { org_id: string; campaign_id: string }
        return reply.send(envelope(request, presentCampaign(await pauses.ofCampaign(action, actorOf(request), org_id, campaign_id))))
      },
    )
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    clearMaxConcurrent: boolean
    clearFallback: boolean
  }
}
