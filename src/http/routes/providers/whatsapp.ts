/**
 * WhatsApp Cloud webhooks: GET /providers/whatsapp/webhook answers Meta's
 * subscription handshake (WHATSAPP_VERIFY_TOKEN); POST receives notifications
 * signed with the app secret in X-Hub-Signature-256 over the raw body.
 *
 * A notification is believed only when it verifies with the app secret of a
 * campaign sending from the number it names, and only that number's changes
 * are applied. Meta retries anything but a 200 and repeats and reorders
 * notifications, so every change applies idempotently and a status never
 * moves back (read > delivered > sent).
 */
import type { FastifyInstance } from 'fastify'
import type { Channels } from '../../../channels/index.ts'
import {
  notificationsFromWebhook,
  readWhatsAppCloudConfig,
  verifyWebhookSubscription,
  verifyWhatsAppSignature,
  type WhatsAppNotification,
} from '../../../channels/whatsappCloud/whatsappCloudChannel.ts'
import { storableId } from '../../../domain/boundedReaders.ts'
import { ApiError } from '../../../domain/errors.ts'
import { asksToStop } from '../../../domain/optOut.ts'
import type { Campaign } from '../../../domain/types.ts'
import { type PersonMessage, type TaskLifecycle, turnsOf } from '../../../services/taskLifecycle.ts'
import { findCampaignsByWhatsAppNumber } from '../../../store/campaigns.ts'
import type { Database } from '../../../store/database.ts'
import { findInteractionByProviderRef, findLatestInteractionWith, type InteractionWithConfig } from '../../../store/interactions.ts'
import { headerOf, keepRawBodies, signedBody } from './signedBodies.ts'

const VERIFY_TOKEN_ENV = 'WHATSAPP_VERIFY_TOKEN'
const STATUS_RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3 }

export async function whatsappRoutes(
  app: FastifyInstance,
  deps: { db: Database; channels: Channels; lifecycle: TaskLifecycle },
) {
  const { db, channels, lifecycle } = deps
  // Called by Meta: in neither OpenAPI document.
  const docs = { hide: true }

  keepRawBodies(app)

  app.get('/providers/whatsapp/webhook', { schema: { ...docs, summary: 'WhatsApp webhook subscription handshake' } }, async (request, reply) => {
    const challenge = verifyWebhookSubscription(request.query as Record<string, string | undefined>, channels.secret(VERIFY_TOKEN_ENV))
    if (challenge === undefined) throw new ApiError('forbidden', 'The subscription request does not carry the verify token.')
    return reply.type('text/plain').send(challenge)
  })

  app.post(
    '/providers/whatsapp/webhook',
    { schema: { ...docs, summary: 'WhatsApp notifications' } },
    async (request, reply) => {
      const { raw, json } = signedBody(request)
      const notifications = notificationsFromWebhook(json)
      // A number id no number can have (a NUL in it) is looked up for none: it is refused as an unknown number is.
      const numbers = [...new Set(notifications.flatMap((notification) => storableId(notification.phoneNumberId) ?? []))]
      const campaigns = numbers.length === 0 ? [] : await findCampaignsByWhatsAppNumber(db, numbers)
      const signature = headerOf(request, 'x-hub-signature-256')
      const verified = campaigns.filter((campaign) => {
        const secret = channels.secret(readWhatsAppCloudConfig(campaign.providerConfig).appSecretEnv)
        return secret !== undefined && verifyWhatsAppSignature(secret, raw, signature)
      })
      if (verified.length === 0 && notifications.length > 0) {
        throw new ApiError('forbidden', 'The notification is not signed with the app secret of a campaign sending from its number.')
      }
      for (const notification of notifications) {
        const senders = verified.filter((campaign) => campaign.providerConfig.phone_number_id === notification.phoneNumberId)
        if (senders.length > 0) await apply(notification, senders)
      }
      return reply.code(200).send()
    },
  )

  /** Applies one notification; only interactions of the campaigns whose secret verified it are touched. */
  async function apply(notification: WhatsAppNotification, senders: Campaign[]): Promise<void> {
    const campaignIds = senders.map((campaign) => campaign.id)
    const ours = (interaction: InteractionWithConfig | undefined) =>
      interaction !== undefined && campaignIds.includes(interaction.campaignId) ? interaction : undefined
    const sent = async (wamid: string | undefined) =>
      wamid === undefined ? undefined : ours(await findInteractionByProviderRef(db, 'whatsapp_cloud', wamid))

    if (notification.kind === 'report') {
      const { report } = notification
      const interaction = await sent(report.providerRef)
      if (interaction === undefined) return
      if (report.kind === 'progress' && (STATUS_RANK[report.status] ?? 0) <= (STATUS_RANK[interaction.providerStatus ?? ''] ?? 0)) return
      await lifecycle.report(interaction, report)
      return
    }
    // A reply: to the message it names, else to the latest conversation with its sender from this number
    // (a running one first). One that answers nothing running is an inbound interaction of its own.
    const message: PersonMessage = { provider: 'whatsapp_cloud', id: notification.messageId, from: notification.from, at: notification.at, text: notification.text }
    const optOut = asksToStop(notification.text)
    const answered = (await sent(notification.replyTo)) ?? ours(await findLatestInteractionWith(db, senders, notification.from))
    if (answered !== undefined && answered.status !== 'finalized') {
      const orgId = senders.find((campaign) => campaign.id === answered.campaignId)!.orgId
      // Added to its transcript; one that waits for its result waits on, unless the person wrote STOP.
      await lifecycle.finalize({
        interactionId: answered.id,
        outcome: 'replied',
        at: notification.at,
        message: { provider: message.provider, id: message.id },
        turns: turnsOf(message) ?? undefined,
        optOut: optOut ? { orgId, phone: notification.from, reason: 'reply' } : undefined,
        closesWait: optOut,
      })
    } else {
      const campaign = senders.find((candidate) => candidate.id === answered?.campaignId) ?? senders[0]!
      await lifecycle.recordInbound(campaign, message, answered?.taskId ?? null, optOut)
    }
  }
}
