/**
 * WhatsApp Cloud webhooks: GET /providers/whatsapp/webhook answers Meta's
 * subscription handshake; POST receives notifications signed with the app
 * secret in X-Hub-Signature-256 over the raw body, applied by
 * services/whatsappNotifications.ts (403 when no campaign sending from the
 * numbers they name verifies them). Called by Meta: in neither OpenAPI document.
 */
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../../../domain/errors.ts'
import type { WhatsAppNotifications } from '../../../services/whatsappNotifications.ts'
import { keepRawBodies, signedRequest } from './signedBodies.ts'

export async function whatsappRoutes(app: FastifyInstance, deps: { whatsapp: WhatsAppNotifications }) {
  const { whatsapp } = deps
  const docs = { hide: true }

  keepRawBodies(app)

  app.get('/providers/whatsapp/webhook', { schema: { ...docs, summary: 'WhatsApp webhook subscription handshake' } }, async (request, reply) => {
    const challenge = whatsapp.subscribed(request.query as Record<string, string | undefined>)
    if (challenge === undefined) throw new ApiError('forbidden', 'The subscription request does not carry the verify token.')
    return reply.type('text/plain').send(challenge)
  })

  app.post('/providers/whatsapp/webhook', { schema: { ...docs, summary: 'WhatsApp notifications' } }, async (request, reply) => {
    const received = await whatsapp.receive(signedRequest(request))
    if (received === 'refused') throw new ApiError('forbidden', 'The notification is not signed with the app secret of a campaign sending from its number.')
    // Meta delivers a notification again until it is answered 200: a status that came before its message's send was answered.
    if (received === 'again') throw new ApiError('service_unavailable', 'A message this status may be of still waits for WhatsApp\'s answer to its send; deliver it again.', 1)
    return reply.code(200).send()
  })
}
