/**
 * The dry run of the decision made before each attempt: may this number be
 * contacted on this channel, by this campaign or for this purpose, now or at
 * `at`? The same decision the dispatcher would make at that instant
 * (services/contactability.ts).
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { PURPOSES } from '../../domain/callingLaw.ts'
import { normalizePhone, PHONE_REFUSED } from '../../domain/contact.ts'
import { recordedDecision } from '../../domain/contactability.ts'
import { refuse } from '../../domain/errors.ts'
import { CHANNELS } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import { type ContactabilityOperations, type DryRun, dryRun } from '../../services/contactability.ts'
import { refine, refineModel } from '../../validation/model.ts'
import { envelope } from '../reply.ts'
import { authErrors, DecisionSchema, Envelope, instant, notFound, OneOf, validationErrors } from '../schemas.ts'
import { audiences } from './audiences.ts'

const DryRunBody = refineModel(
  Type.Object(
    {
      phone: refine(Type.String({ maxLength: 64, examples: ['+1 305 555 0123'] }), { check: (phone) => normalizePhone(phone) ?? refuse(PHONE_REFUSED) }),
      channel: OneOf(CHANNELS),
      campaign: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "A campaign's routing key: its purpose, consent, voice and schedule apply." })),
      purpose: Type.Optional({ ...OneOf(PURPOSES), description: "Without a campaign: the purpose's default consent, and no campaign window." }),
      artificial_voice: Type.Optional(Type.Boolean({ description: 'With `purpose`: whether the call would speak with an artificial voice (an AI agent, a recording); default false. A campaign says so itself.' })),
      at: Type.Optional(instant('at', 'The instant to decide for; default now.')),
    },
    { additionalProperties: false },
  ),
  (body) => [
    ...((body.campaign === undefined) === (body.purpose === undefined) ? [{ path: [body.campaign === undefined ? 'purpose' : 'campaign'], message: 'send either campaign or purpose' }] : []),
    ...(body.campaign !== undefined && body.artificial_voice !== undefined ? [{ path: ['artificial_voice'], message: 'artificial_voice goes with purpose: a campaign says it itself' }] : []),
  ],
)

export function contactabilityRoutes(app: FastifyInstance, deps: { ops: ContactabilityOperations; authenticator: Authenticator }) {
  const { ops } = deps
  for (const audience of audiences({ db: ops.db, authenticator: deps.authenticator }, 'contactability')) {
    app.post(
      `${audience.prefix}/contactability`,
      {
        onRequest: audience.guard('triggers:read'),
        schema: {
          ...audience.docs,
          operationId: audience.operationId('checkContactability'),
          summary: 'May this number be contacted? (dry run)',
          description:
            "The decision the dispatcher would make before an attempt to the number at `at` (default now): allowed, deferred until `not_before`, or blocked, with the rules, profiles and consents behind it. Nothing is recorded. The number's zones are its phone's (a trigger's contact.timezone would narrow them).",
          params: Type.Object(audience.params),
          body: DryRunBody,
          response: { 200: Envelope(Type.Ref(DecisionSchema.$id!)), ...authErrors, ...notFound, ...validationErrors },
        },
      },
      async (request, reply) => {
        const body = request.body as { phone: string; channel: (typeof CHANNELS)[number]; campaign?: string; purpose?: (typeof PURPOSES)[number]; artificial_voice?: boolean; at?: string }
        const at = body.at === undefined ? ops.now() : Date.parse(body.at)
        const ask: DryRun =
          body.campaign === undefined
            ? { phone: body.phone, channel: body.channel, purpose: body.purpose!, artificialVoice: body.artificial_voice ?? false, at }
            : { phone: body.phone, channel: body.channel, campaign: body.campaign, at }
        const decision = await dryRun(ops, await audience.orgId(request), ask)
        return reply.send(envelope(request, recordedDecision(decision, at)))
      },
    )
  }
}
