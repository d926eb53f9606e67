/**
 * An interaction for the conversation that runs in it: its context (whom it
 * serves and why) and its result. Another organization's interaction is
 * never found.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { interactionDurationS } from '../../domain/interactionDuration.ts'
import { type InteractionContext, SESSION_MESSAGE_STATUSES, type SessionMessage } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Conversations } from '../../services/conversations.ts'
import type { SessionMessages } from '../../services/sessionMessages.ts'
import { type SessionMessageContent, SessionMessageSchema } from '../../channels/sessionMessages.ts'
import { ValidationFailed } from '../../domain/errors.ts'
import { idempotencyKeyOf } from '../idempotencyKey.ts'
import { ConversationResultInput } from '../../validation/conversationResult.ts'
import { organizationOf, requireOrganizationKey } from '../auth.ts'
import { envelope } from '../reply.ts'
import {
  authErrors,
  ChannelSchema,
  conflict,
  Envelope,
  InteractionStatusSchema,
  notFound,
  NullableHandoff,
  NullableResult,
  OneOf,
  providerError,
  rateLimited,
  Timestamp,
  validationErrors,
} from '../schemas.ts'
import { component, routeHeaders } from '../openapi.ts'

const SessionMessageResource = component('SessionMessage', Type.Object({
  id: Type.String({ examples: ['msg_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  interaction_id: Type.String(),
  status: Type.Union(SESSION_MESSAGE_STATUSES.map((status) => Type.Literal(status)), {
    description:
      '`accepted` once WhatsApp took it, then `sent`, `delivered`, `read` as WhatsApp reports them (never back), or `failed`; `sending` while the service waits for WhatsApp\'s answer; `unknown` when WhatsApp gave none: whether it was sent is not known, and it is not sent again by itself.',
  }),
  content: Type.Union([SessionMessageSchema, Type.Null()], { description: 'What was sent; null once the person is erased.' }),
  provider_message_id: Type.Union([Type.String(), Type.Null()], { description: "WhatsApp's id of it (`wamid...`), once it took it." }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed, or why its fate is unknown.' }),
  created_at: Timestamp,
  status_at: Timestamp,
}))

const presentMessage = (message: SessionMessage) => ({
  id: message.id,
  interaction_id: message.interactionId,
  status: message.status,
  content: message.content,
  provider_message_id: message.providerMessageId,
  error: message.error,
  created_at: message.createdAt,
  status_at: message.statusAt,
})

const InteractionContextSchema = component('InteractionContext', Type.Object({
  id: Type.String({ examples: ['int_01jd3y5v8m6m1r9cz8xk4j2h7q'] }),
  task_id: Type.Union([Type.String(), Type.Null()], { description: 'Null for a message that answers no task.' }),
  trigger_id: Type.Union([Type.String(), Type.Null()]),
  attempt: Type.Union([Type.Integer(), Type.Null()], { description: "1 for the task's first attempt; null for an inbound message." }),
  campaign: Type.String({ description: 'Routing key.' }),
  channel: ChannelSchema,
  direction: OneOf(['outbound', 'inbound'] as const),
  provider: Type.String(),
  provider_ref: Type.Union([Type.String(), Type.Null()], { description: "The provider's own reference (Twilio's call SID, WhatsApp's message id)." }),
  status: InteractionStatusSchema,
  outcome: Type.Union([Type.String(), Type.Null()]),
  test_mode: Type.Boolean({ description: 'The outreach goes to the tester: `contact.phone` is theirs.' }),
  started_at: Timestamp,
  ended_at: Type.Union([Timestamp, Type.Null()]),
  duration_s: Type.Union([Type.Integer(), Type.Null()]),
  result_due_by: Type.Union([Timestamp, Type.Null()], { description: 'While it waits for its result (status `ended`): when the wait ends and it is reported without one.' }),
  messages: Type.Array(SessionMessageResource, { description: 'The messages sent to the person on it (POST .../messages), oldest first, each with its status.' }),
  window_closes_at: Type.Union([Timestamp, Type.Null()], {
    description: "WhatsApp and SMS: until when a message may be sent to the person in the conversation (on WhatsApp, not only an approved template): 24 hours from their latest message on this interaction; null before they have written, and for a call.",
  }),
  ids: Type.Array(Type.Object({ source: Type.String(), type: Type.String(), value: Type.String() }), { description: "Your ids, as the trigger sent them." }),
  contact: Type.Union(
    [
      Type.Object({
        first_name: Type.Optional(Type.String()),
        last_name: Type.Optional(Type.String()),
        language: Type.Optional(Type.String()),
        phone: Type.String({ description: 'The number reached (in test mode, the tester\'s).' }),
      }),
      Type.Null(),
    ],
    { description: 'Whom the conversation is with; null once erased.' },
  ),
  context: Type.Record(Type.String(), Type.Unknown(), { description: "The task's context: the campaign's default merged with the trigger's." }),
  timezones: Type.Array(Type.String(), { description: "The zones the contact may be in (the task's candidate_timezones)." }),
  handoff: NullableHandoff,
  result: NullableResult,
}))

const presentContext = (context: InteractionContext) => {
  const { interaction } = context
  return {
    id: interaction.id,
    task_id: interaction.taskId,
    trigger_id: context.triggerId,
    attempt: interaction.attempt,
    campaign: context.routingKey,
    channel: interaction.channel,
    direction: interaction.direction,
    provider: interaction.provider,
    provider_ref: interaction.providerRef,
    status: interaction.status,
    outcome: interaction.outcome,
    test_mode: interaction.testMode,
    started_at: interaction.startedAt,
    ended_at: interaction.endedAt,
    duration_s: interactionDurationS(interaction),
    result_due_by: context.resultDueBy,
    window_closes_at: context.windowClosesAt,
    messages: context.messages.map(presentMessage),
    ids: context.ids,
    contact: context.contact,
    context: context.context,
    timezones: context.timezones,
    handoff: interaction.handoff,
    result: interaction.result,
  }
}

const InteractionParams = Type.Object({ id: Type.String({ maxLength: 40 }) })

export function interactionRoutes(app: FastifyInstance, deps: { authenticator: Authenticator; conversations: Conversations; sessionMessages: SessionMessages }) {
  const { authenticator, conversations, sessionMessages } = deps
  const docs = { tags: ['conversations'], security: [{ apiKey: [] }] }

  app.get(
    '/api/v2/interactions/:id',
    {
      onRequest: requireOrganizationKey(authenticator, ['conversations:read', 'triggers:read']),
      schema: {
        ...docs,
        operationId: 'getInteraction',
        summary: 'Read an interaction’s context',
        description:
          'What the conversation running in this interaction (your voice app, an agent, a WhatsApp exchange) is to know: the task it serves, your ids, the contact (the number reached), the task context, and its result so far. ' +
          'A Twilio call hands your app the interaction id (see the campaign\'s `handoff`). Scope `conversations:read` or `triggers:read`.',
        params: InteractionParams,
        response: { 200: Envelope(InteractionContextSchema), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      return reply.send(envelope(request, presentContext(await conversations.context(organizationOf(request).orgId, id))))
    },
  )

  app.post(
    '/api/v2/interactions/:id/result',
    {
      onRequest: requireOrganizationKey(authenticator, 'conversations:write'),
      schema: {
        ...docs,
        operationId: 'reportInteractionResult',
        summary: 'Report a conversation’s result',
        description:
          'What the person said. Every field is optional, but a result carries at least one. It travels on `interaction.finalized` and `task.completed` with your ids, and decides what follows: ' +
          '`opt_out: true` suppresses the number and completes the task `opted_out`; `callback_at` makes the next attempt due then (in the campaign\'s window, within the task\'s expiry; it counts as an attempt). ' +
          'While the interaction runs, a result replaces the one before it; while it waits for one (the campaign\'s `results.wait_s`), the result ends the wait. ' +
          'Once the interaction has been reported without a result, the result is sent on `interaction.result_added`. An interaction reports one result: another one after it is 409, the same one again answers as the first did. ' +
          'Answers the interaction as it now is. Scope `conversations:write`.',
        params: InteractionParams,
        body: ConversationResultInput,
        response: { 200: Envelope(InteractionContextSchema), ...authErrors, ...notFound, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string }
      const result = request.body as ConversationResultInput
      return reply.send(envelope(request, presentContext(await conversations.recordResult(organizationOf(request).orgId, id, result))))
    },
  )

  app.post(
    '/api/v2/interactions/:id/messages',
    {
      attachValidation: true,
      onRequest: requireOrganizationKey(authenticator, 'messages:send'),
      schema: {
        ...docs,
        operationId: 'sendInteractionMessage',
        summary: 'Send the person a message in their open window',
        description:
          "A text, up to three reply buttons, or a list, to the person of a WhatsApp interaction (a text only, of up to 1,600 characters, on an SMS one), while the window their latest message opened there is open (`window_closes_at`, 24 hours from it: WhatsApp's customer service window, and the same for a text; docs/messaging.md): 409 once it has closed, or before they have written, and nothing is sent (a new trigger sends the campaign's template or text). " +
          "Sent at once, at the pace of the campaign's sender (429 with Retry-After when its pace is taken); answered with the message once the provider took it (`accepted`), whose statuses then follow on the interaction's `messages`. " +
          "409 too for a number on the suppression list (or one the provider says has opted out: it is suppressed then), and for a person erased. " +
          'With an Idempotency-Key, the same request again answers as the first did and sends nothing (its message, with `Idempotent-Replayed: true`; 409 `idempotency_key_in_use` while the first still waits for the provider; the same 502 when the provider gave it no answer); the key with another message is 409 `idempotency_key_reused`. ' +
          '502 `provider_error` when the provider refused it (nothing was sent) or gave no answer (the message is kept `unknown`, and not sent again by itself). Scope `messages:send`.',
        params: InteractionParams,
        body: SessionMessageSchema,
        ...routeHeaders({ request: ['Idempotency-Key'], responses: { 201: ['Idempotent-Replayed'] } }),
        response: {
          201: Envelope(SessionMessageResource),
          ...authErrors,
          ...notFound,
          ...conflict,
          ...validationErrors,
          429: { ...rateLimited[429], description: "The organization's rate limit, the campaign's sender with no slot free now, or WhatsApp asking for a pause: send it again after Retry-After seconds." },
          ...providerError,
        },
      },
    },
    async (request, reply) => {
      const errors = request.validationError instanceof ValidationFailed ? [...request.validationError.detail] : []
      const key = idempotencyKeyOf(request.headers['idempotency-key'], errors)
      if (errors.length > 0) throw new ValidationFailed(errors)
      const { id } = request.params as { id: string }
      const { message, replayed } = await sessionMessages.send(organizationOf(request).orgId, id, request.body as SessionMessageContent, key)
      if (replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(201).send(envelope(request, presentMessage(message)))
    },
  )
}
