/**
 * An interaction for the conversation that runs in it: its context (whom it
 * serves and why) and its result. Another organization's interaction is
 * never found.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { interactionDurationS } from '../../domain/interactionDuration.ts'
import type { InteractionContext } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import type { Conversations } from '../../services/conversations.ts'
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
  Timestamp,
  validationErrors,
} from '../schemas.ts'
import { component } from '../openapi.ts'

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
  window_closes_at: Type.Union([Timestamp, Type.Null()], {
    description: "WhatsApp: until when any message may be sent to the person, not only an approved template (24 hours from their latest message on this interaction); null before they have written, and on other channels.",
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
    ids: context.ids,
    contact: context.contact,
    context: context.context,
    timezones: context.timezones,
    handoff: interaction.handoff,
    result: interaction.result,
  }
}

const InteractionParams = Type.Object({ id: Type.String({ maxLength: 40 }) })

export function interactionRoutes(app: FastifyInstance, deps: { authenticator: Authenticator; conversations: Conversations }) {
  const { authenticator, conversations } = deps
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
}
