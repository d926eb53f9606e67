/** Schemas shared by several routes: the success envelope, the two error shapes, and the common resources. */
import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { TRANSCRIPT_ROLES } from '../domain/conversationResult.ts'
import { DECISIONS, REASON_CODES } from '../domain/contactability.ts'
import { CHANNELS, type Contact, INTERACTION_STATUSES } from '../domain/types.ts'
import { OneOf } from '../validation/fields.ts'

export const Timestamp = Type.String({ format: 'date-time', description: 'UTC, ISO 8601 with Z' })

export { instant, OneOf } from '../validation/fields.ts'

export const ChannelSchema = OneOf(CHANNELS)

/** A contact as the service recorded it: phone in E.164, language canonical. */
export const ContactSchema = Type.Object({
  first_name: Type.Optional(Type.String()),
  last_name: Type.Optional(Type.String()),
  phone: Type.String(),
  email: Type.Optional(Type.String()),
  language: Type.Optional(Type.String()),
  timezone: Type.Optional(Type.String()),
})

/** Only the fields the API names, whatever a stored document holds. */
export function presentContact({ first_name, last_name, phone, email, language, timezone }: Contact): Static<typeof ContactSchema> {
  return { first_name, last_name, phone, email, language, timezone }
}

/** A conversation's result as the service records it and sends it on events: every field there, null when not reported. */
export const ConversationResultSchema = Type.Object(
  {
    disposition: Type.Union([Type.String(), Type.Null()], { description: 'Your short code for how it went.' }),
    summary: Type.Union([Type.String(), Type.Null()]),
    data: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'Fields the conversation extracted.' }),
    transcript: Type.Union(
      [
        Type.Array(
          Type.Object({
            role: OneOf(TRANSCRIPT_ROLES),
            text: Type.String(),
            at: Type.Optional(Type.String({ format: 'date-time', description: 'UTC, ISO 8601 with Z' })),
          }),
        ),
        Type.Null(),
      ],
      { description: "The conversation turn by turn; for a WhatsApp exchange whose app sent none, what the person wrote, as it came." },
    ),
    transcript_url: Type.Union([Type.String(), Type.Null()]),
    recording_url: Type.Union([Type.String(), Type.Null()]),
    callback_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When the person asked to be called again (UTC).' }),
    opt_out: Type.Boolean({ description: 'The person asked not to be contacted again.' }),
    received_at: Type.String({ format: 'date-time', description: 'When the service recorded it.' }),
  },
  {
    $id: 'ConversationResult',
    description:
      "What the person said, as the interaction's conversation reported it (POST /api/v2/interactions/{id}/result). Personal data: erased with the person, and swept with the organization's retention.",
  },
)

export const InteractionStatusSchema = {
  ...OneOf(INTERACTION_STATUSES),
  description:
    'starting: recorded, the provider being asked; active: the provider has it; ended: over, waiting for its result (the campaign\'s results.wait_s); finalized: over and reported.',
}

/** How an answered call was handed to its conversation (Twilio), or null. */
export const NullableHandoff = Type.Union(
  [
    Type.Object({
      mode: OneOf(['redirect', 'stream', 'variables', 'voicemail'] as const),
      at: Timestamp,
      left_out: Type.Array(Type.Object({ key: Type.String(), reason: Type.String() }), {
        description: "What of the task was not passed (a stream's parameters, an agent's variables), each by name with why; never its value.",
      }),
    }),
    Type.Null(),
  ],
  {
    description:
      "How the call was handed to its conversation: a Twilio call when answered (redirect, stream); an agent platform's (vapi, retell, elevenlabs) when started, the task as its agent's variables (variables); a Twilio call whose voicemail greeting ended, given the campaign's message instead (voicemail, with provider_config.voicemail.policy leave_message). Null until then, and for other channels.",
  },
)

/** A result, or null where none came. */
export const NullableResult = Type.Union([Type.Ref(ConversationResultSchema.$id!), Type.Null()])

const IdsSchema = Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() }), {
  description: "The trigger's ids: source and type lowercased, value as sent.",
})

/** One step of a task that went on to its campaign's fallback step (domain/fallback.ts, TaskStep). */
export const TaskStepSchema = Type.Object({
  campaign_id: Type.String(),
  campaign: Type.String({ description: 'Routing key.' }),
  channel: ChannelSchema,
  outcome: Type.String({
    description: "Why the step ended: the fallback condition it met (`undelivered`, `not_on_whatsapp`, `no_reply`), or, for the last step, the task's outcome.",
  }),
  attempts: Type.Integer({ description: "Attempts the step made, counted under its campaign's attempt policy." }),
})

const DecisionReasonSchema = Type.Object(
  {
    code: {
      ...OneOf(REASON_CODES),
      description:
        'allowed: consent_on_file, within_legal_hours, under_legal_cap, registry_overridden (what the attempt relied on). deferred: outside_campaign_window, outside_legal_hours, legal_holiday, legal_cap_reached; learned_hour (the campaign\'s learned timing chose the hour: on the task as it waits, and first on the decision that allowed the attempt). blocked: number_suppressed, consent_missing, consent_revoked, consent_expired, registry_listed.',
    },
    rule: Type.Union([Type.String(), Type.Null()], { description: 'A profile\'s rule ("us-fl.hours"), or the campaign\'s own ("campaign.schedule", "campaign.consent"); null for a registry or the suppression list.' }),
    source: Type.String({ description: "The rule's citation, or what it is (the campaign's setting, the registry's name)." }),
    profile: Type.Optional(Type.String({ description: 'The profile and its version, "us-fl@2026-12-01".' })),
    consent_id: Type.Optional(Type.String({ description: 'The consent relied on, revoked or expired.' })),
    registry_id: Type.Optional(Type.String()),
    holiday: Type.Optional(Type.String({ description: 'The holiday and its date, for legal_holiday.' })),
  },
  { $id: 'DecisionReason' },
)

/** The decision made before an attempt (domain/contactability.ts), as kept and shown. */
export const DecisionSchema = Type.Object(
  {
    decision: { ...OneOf(DECISIONS), description: 'allowed (an attempt may start now), deferred (not before not_before), blocked (not at all, until what the reasons name changes).' },
    at: Timestamp,
    not_before: Type.Union([Timestamp, Type.Null()], { description: 'deferred: the first instant every rule allows; null otherwise, or when nothing allows one within two years.' }),
    reasons: Type.Array(Type.Ref(DecisionReasonSchema.$id!)),
    profiles: Type.Array(Type.String(), { description: 'The calling-law profiles that applied (the jurisdictions the number may be in), each "id@version".' }),
  },
  { $id: 'ContactabilityDecision' },
)

/** What every event about an interaction says of it (domain/events.ts aboutInteraction), with its outcome as the event describes it. */
const aboutInteraction = (outcome: TSchema) => ({
  interaction_id: Type.String(),
  task_id: Type.Union([Type.String(), Type.Null()], { description: 'Null for a message that answers no task.' }),
  trigger_id: Type.Union([Type.String(), Type.Null()]),
  campaign: Type.String(),
  channel: ChannelSchema,
  direction: OneOf(['outbound', 'inbound'] as const),
  attempt: Type.Union([Type.Integer(), Type.Null()]),
  outcome,
  test_mode: Type.Boolean(),
  ids: Type.Optional({ ...IdsSchema, description: 'Exactly when task_id is not null.' }),
})

/**
 * What each event reports, as its `data` (the webhook body is `{id, type,
 * timestamp, data}`). Named in the OpenAPI document's components for clients
 * to generate types from; the events routes answer `data` as stored.
 */
export const EventDataSchemas = [
  Type.Object(
    {
      task_id: Type.String(),
      trigger_id: Type.String(),
      campaign: Type.String({ description: 'Routing key.' }),
      channel: ChannelSchema,
      status: Type.Literal('completed'),
      outcome: OneOf(['reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out', 'not_permitted'] as const),
      attempts: Type.Integer(),
      test_mode: Type.Boolean(),
      ids: IdsSchema,
      completed_at: Timestamp,
      result: { ...NullableResult, description: 'The result of the interaction that completed the task; null when none came, or the task was cancelled or expired.' },
      steps: Type.Optional(
        Type.Array(TaskStepSchema, {
          description:
            "Only for a task that went on to its campaign's fallback step (WhatsApp, then a call): every step it took, oldest first; `campaign` and `channel` above are its last step's.",
        }),
      ),
      decision: Type.Union([Type.Ref(DecisionSchema.$id!), Type.Null()], {
        description:
          "The task's last decision, with its reasons: the one that blocked it (not_permitted), the law's deferral it expired under, else the one that allowed its last attempt (why the person was called); null when none was made (cancelled before any attempt, or attempts made before decisions were kept).",
      }),
    },
    { $id: 'TaskCompletedData', description: 'task.completed: a task completed, with its outcome.' },
  ),
  Type.Object(
    {
      ...aboutInteraction(
        Type.String({ description: 'voice: completed, no_answer, busy, voicemail (a machine answered), voicemail_left (the campaign\'s message was left on it), failed; WhatsApp: replied, read, delivered, undelivered, failed; SMS: replied, delivered, sent (the carrier took it, with no delivery receipt), undelivered, failed.' }),
      ),
      started_at: Timestamp,
      timezone: Type.Union([Type.String(), Type.Null()], {
        description: "The zone the task's schedule was read in (the campaign's own, or the person's first candidate zone): the person's local time; null for a message that answers no task.",
      }),
      started_at_local: Type.Union([Type.String(), Type.Null()], {
        description: 'started_at in that zone, ISO 8601 with its offset (2026-06-01T18:02:11.000+02:00): the local hour the reach statistics count the attempt under; null with timezone.',
      }),
      ended_at: Timestamp,
      duration_s: Type.Integer(),
      result: { ...NullableResult, description: "Its conversation's result, as recorded; null when none came (before the campaign's results.wait_s ended)." },
    },
    { $id: 'InteractionFinalizedData', description: 'interaction.finalized: an attempt (or a message that answers no task) ended.' },
  ),
  Type.Object(
    {
      ...aboutInteraction(Type.String()),
      result: Type.Ref(ConversationResultSchema.$id!),
    },
    {
      $id: 'InteractionResultAddedData',
      description:
        'interaction.result_added: the result of an interaction whose interaction.finalized was sent without one (it came after the wait). An interaction reports one result, on one of the two.',
    },
  ),
  Type.Object(
    {
      ...aboutInteraction(Type.String({ description: 'What the message made of the interaction: `replied`.' })),
      message: Type.Object({
        id: Type.String({ description: "The provider's id of the message (WhatsApp's `wamid`, Twilio's `SM...` or `MM...`): a message is reported once, however often the provider delivers it." }),
        text: Type.Union([Type.String(), Type.Null()], { description: "What the person wrote, or the label of the button or list row they chose, or a file's caption; null for a message without text (an image without caption, a location)." }),
        media: Type.Array(
          Type.Object({
            type: Type.String({ description: 'image, video, audio, document or sticker: WhatsApp\'s types, and an MMS file\'s by its content type (image, video, audio, else document).' }),
            ref: Type.String({ description: "What to fetch it by from the provider, with the campaign's credentials: WhatsApp's media id (Graph API GET /{media-id}), Twilio's MediaUrl. The service keeps no copy." }),
            mime_type: Type.Union([Type.String(), Type.Null()]),
          }),
          { description: 'The files the message carried; [] for none (and once the person is erased).' },
        ),
        received_at: Timestamp,
      }),
      window_closes_at: Type.Union([Timestamp, Type.Null()], {
        description: "Until when a message may be sent to the person in the conversation (on WhatsApp, not only an approved template): 24 hours from their latest message.",
      }),
    },
    {
      $id: 'InteractionMessageReceivedData',
      description:
        "interaction.message_received: a message the person sent, on the interaction it landed on (the one it answers, else an inbound one, on the task it answers), written as it lands: in order per interaction, before the interaction.finalized it may end in.",
    },
  ),
]

/** webhook.test's `data`: the endpoint tested. */
const WebhookTestDataSchema = Type.Object(
  {
    endpoint_id: Type.String(),
    message: Type.String({ description: 'Says that the event reports nothing.' }),
  },
  { $id: 'WebhookTestData', description: 'webhook.test: sent to one endpoint on request (POST .../webhook-endpoints/{id}/test).' },
)

/** Each event as a webhook's body (and an item of the events API), by type: named in the client document's `webhooks`. */
export const WebhookEventSchemas = (
  [
    ['task.completed', 'TaskCompletedEvent', EventDataSchemas[0]!],
    ['interaction.finalized', 'InteractionFinalizedEvent', EventDataSchemas[1]!],
    ['interaction.result_added', 'InteractionResultAddedEvent', EventDataSchemas[2]!],
    ['interaction.message_received', 'InteractionMessageReceivedEvent', EventDataSchemas[3]!],
    ['webhook.test', 'WebhookTestEvent', WebhookTestDataSchema],
  ] as const
).map(([type, $id, data]) =>
  Type.Object(
    {
      id: Type.String({ description: 'The webhook-id header of its every delivery.', examples: ['evt_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
      type: Type.Literal(type),
      timestamp: Timestamp,
      data: Type.Ref(data.$id!),
    },
    { $id },
  ),
)

export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    data,
    metadata: Type.Object({ request_id: Type.String() }),
  })

/** The `error` member of every error other than 422. */
export const ErrorBody = Type.Object({
  code: Type.String({ description: 'Stable snake_case code; branch on this, not on the message.' }),
  message: Type.String(),
})

/** One entry of a 422's `detail`. */
export const ValidationErrorEntry = Type.Object({
  type: Type.String({ description: 'Kind of error, e.g. missing, string_type, value_error' }),
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Path to the faulty field, starting with "body"' }),
  msg: Type.String(),
  input: Type.Unknown(),
  ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})

export const ErrorResponse = Type.Object(
  {
    error: ErrorBody,
    metadata: Type.Object({ request_id: Type.String() }),
  },
  { $id: 'ErrorResponse', description: 'Every error other than 422.' },
)

export const ValidationErrorResponse = Type.Object(
  {
    detail: Type.Array(ValidationErrorEntry),
  },
  { $id: 'ValidationErrorResponse', description: 'Request validation failed (pydantic v2 / FastAPI shape). All problems are listed.' },
)

const ref = (schema: { $id?: string }) => Type.Ref(schema.$id!)

/** Error responses any authenticated route may give. */
export const authErrors = {
  401: ref(ErrorResponse),
  403: ref(ErrorResponse),
}

export const validationErrors = {
  422: ref(ValidationErrorResponse),
}

export const notFound = {
  404: ref(ErrorResponse),
}

export const conflict = {
  409: ref(ErrorResponse),
}

export const providerError = {
  502: { ...ref(ErrorResponse), description: '`provider_error`: the provider refused the request, or gave no answer; the message says which.' },
}

export const rateLimited = {
  429: { ...ref(ErrorResponse), description: "The organization's rate limit: send it again after Retry-After seconds." },
}

/** The schemas routes refer to by $id (Type.Ref), added to the app once: components of the documents under those names. */
export const SharedSchemas = [ErrorResponse, ValidationErrorResponse, ConversationResultSchema, DecisionReasonSchema, DecisionSchema, ...EventDataSchemas, WebhookTestDataSchema, ...WebhookEventSchemas]
