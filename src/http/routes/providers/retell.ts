/**
 * Retell's webhooks: POST /providers/retell/webhook, the URL set as the
 * agent's webhook (or the account's), receives `{"event", "call"}` for every
 * call of the agent, signed in `x-retell-signature` with the API key over the
 * raw body (channels/retell/calls.ts).
 *
 * A webhook is believed only when it names a call of a Retell campaign (by
 * its call_id, or, before the call's creation was answered, by the
 * interaction its metadata names) and verifies with that campaign's API key;
 * anything else is refused with 403 and changes nothing. Retell retries a
 * webhook not answered 2xx within 10 s, up to three times, and may deliver
 * one twice: every report applies idempotently (an interaction's end and its
 * result are recorded once), and the answer, 204, comes as soon as the report
 * is recorded. Bodies are bounded by the service's body limit (1 MiB: an
 * hour's transcript, with its words' timings, is about half that), 413
 * beyond. Nothing of the body is logged but the event, the ids, and the
 * names of the variables the agent did not receive.
 */
import type { FastifyInstance } from 'fastify'
import { interactionIdOf, readRetellWebhook, type RetellChannel, verifyRetellSignature } from '../../../channels/retell/retellChannel.ts'
import { ApiError } from '../../../domain/errors.ts'
import { isId } from '../../../domain/ids.ts'
import type { TaskLifecycle } from '../../../services/taskLifecycle.ts'
import type { Database } from '../../../store/database.ts'
import { findInteractionByProviderRef, findInteractionWithConfig, type InteractionWithConfig } from '../../../store/interactions.ts'
import { MAX_BODY_BYTES } from '../../limits.ts'
import { headerOf, keepRawBodies, signedBody } from './signedBodies.ts'

export async function retellRoutes(app: FastifyInstance, deps: { db: Database; retell: RetellChannel; lifecycle: TaskLifecycle; now: () => number }) {
  const { db, retell, lifecycle, now } = deps
  const refused = () => new ApiError('forbidden', 'The request is not a verified Retell webhook for a call of this service.')

  keepRawBodies(app)

  /** The interaction a call is of: by its call id, or by the interaction its metadata names while its creation is unconfirmed. */
  async function interactionOf(callId: string, named: string | undefined): Promise<InteractionWithConfig | undefined> {
    const known = await findInteractionByProviderRef(db, 'retell', callId)
    if (known !== undefined) return known
    const interaction = named !== undefined && isId('interaction', named) ? await findInteractionWithConfig(db, named) : undefined
    return interaction?.provider === 'retell' && interaction.providerRef === null ? interaction : undefined
  }

  app.post(
    '/providers/retell/webhook',
    // Called by Retell: in neither OpenAPI document.
    { bodyLimit: MAX_BODY_BYTES, schema: { hide: true, summary: 'Retell call webhook' } },
    async (request, reply) => {
      const { raw, json } = signedBody(request)
      const webhook = readRetellWebhook(json)
      if (webhook === undefined) throw refused()
      const interaction = await interactionOf(webhook.call.call_id, interactionIdOf(webhook.call))
      const apiKey = interaction === undefined ? undefined : retell.apiKeyFor(interaction.providerConfig)
      if (interaction === undefined || apiKey === undefined || !verifyRetellSignature(apiKey, raw, headerOf(request, 'x-retell-signature'), now())) {
        throw refused()
      }
      request.log.info({ interaction: interaction.id, call: webhook.call.call_id, event: webhook.event }, 'Retell webhook')
      const report = retell.reportFor(webhook, interaction, now())
      // Progress says nothing new of a call already over.
      const stale = report?.kind === 'progress' && interaction.status !== 'starting' && interaction.status !== 'active'
      if (report !== undefined && !stale) await lifecycle.report(interaction, report)
      return reply.code(204).send()
    },
  )
}
