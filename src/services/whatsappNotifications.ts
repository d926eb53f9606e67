/**
 * WhatsApp Cloud's webhooks, applied: the subscription handshake
 * (WHATSAPP_VERIFY_TOKEN), and the notifications, signed with the app secret
 * in X-Hub-Signature-256 over the raw body (http/routes/providers/whatsapp.ts
 * passes them as they came).
 *
 * A notification is believed only when it verifies with the app secret of a
 * campaign sending from the number it names, and only that number's changes
 * are applied. Meta retries anything but a 200 and repeats and reorders
 * notifications, so every change applies idempotently and a status never
 * moves back (read > delivered > sent).
 */
import type { FastifyBaseLogger } from 'fastify'
import type { SignedRequest } from '../channels/callbacks.ts'
import {
  notificationsFromWebhook,
  readWhatsAppCloudConfig,
  verifyWebhookSubscription,
  verifyWhatsAppSignature,
  type WhatsAppNotification,
} from '../channels/whatsappCloud/whatsappCloudChannel.ts'
import { storableId } from '../domain/boundedReaders.ts'
import { asksToStop } from '../domain/optOut.ts'
import type { Campaign } from '../domain/types.ts'
import { findCampaignsByWhatsAppNumber } from '../store/campaigns.ts'
import type { Database } from '../store/database.ts'
import { findInteractionByProviderRef, findLatestInteractionWith, type InteractionWithConfig } from '../store/interactions.ts'
import { recordMessageStatus } from '../store/sessionMessages.ts'
import type { ProviderReport } from '../channels/channel.ts'
import { readableConfig } from './providerCallbacks.ts'
import type { PersonMessage, TaskLifecycle } from './taskLifecycle.ts'

const VERIFY_TOKEN_ENV = 'WHATSAPP_VERIFY_TOKEN'
const STATUS_RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3 }
const SESSION_STATUSES: ReadonlySet<string> = new Set(Object.keys(STATUS_RANK))

export class WhatsAppNotifications {
  readonly #db: Database
  readonly #secret: (name: string) => string | undefined
  readonly #lifecycle: TaskLifecycle
  readonly #log: FastifyBaseLogger
  readonly #now: () => number

  constructor(deps: { db: Database; secret: (name: string) => string | undefined; lifecycle: TaskLifecycle; now: () => number; log: FastifyBaseLogger }) {
    this.#log = deps.log
    this.#now = deps.now
    this.#db = deps.db
    this.#secret = deps.secret
    this.#lifecycle = deps.lifecycle
  }

  /** The challenge to answer Meta's subscription request with; undefined when it does not carry the verify token. */
  subscribed(query: Record<string, string | undefined>): string | undefined {
    return verifyWebhookSubscription(query, this.#secret(VERIFY_TOKEN_ENV))
  }

  /**
   * Applies a webhook's notifications: `refused` when it names numbers but
   * verifies with the app secret of no campaign sending from them; `again`
   * when a status in it may be of a session message still waiting for
   * WhatsApp's answer (the status came first): the rest is applied, and Meta,
   * answered non-2xx, delivers it all again, idempotently.
   */
  async receive(request: SignedRequest): Promise<'applied' | 'refused' | 'again'> {
    const notifications = notificationsFromWebhook(request.json)
    // A number id no number can have (a NUL in it) is looked up for none: it is refused as an unknown number is.
    const numbers = [...new Set(notifications.flatMap((notification) => storableId(notification.phoneNumberId) ?? []))]
    const campaigns = numbers.length === 0 ? [] : await findCampaignsByWhatsAppNumber(this.#db, numbers)
    const signature = request.header('x-hub-signature-256')
    // A campaign whose stored config cannot be read verifies nothing; the others of the number still may.
    const verified = campaigns.filter((campaign) =>
      readableConfig(this.#log, campaign.id, () => {
        const secret = this.#secret(readWhatsAppCloudConfig(campaign.providerConfig).appSecretEnv)
        return secret !== undefined && verifyWhatsAppSignature(secret, request.raw, signature)
      }),
    )
    if (verified.length === 0 && notifications.length > 0) return 'refused'
    let again = false
    for (const notification of notifications) {
      const senders = verified.filter((campaign) => campaign.providerConfig.phone_number_id === notification.phoneNumberId)
      if (senders.length > 0 && (await this.#apply(notification, senders)) === 'again') again = true
    }
    return again ? 'again' : 'applied'
  }

  /** A status of a session message of these campaigns' interactions, applied forward only; `again` when it may be of one still waiting for WhatsApp's answer. */
  async #sessionMessageStatus(report: ProviderReport, campaignIds: readonly string[]): Promise<'again' | undefined> {
    if (report.kind === 'progress' ? !SESSION_STATUSES.has(report.status) : report.kind !== 'final') return undefined
    const status = report.kind === 'progress' ? (report.status as 'sent' | 'delivered' | 'read') : 'failed'
    const error = report.kind === 'final' ? `WhatsApp reports it ${report.outcome}${report.optedOut ? ': the person has stopped marketing messages' : ''}` : null
    const applied = await recordMessageStatus(this.#db, 'whatsapp_cloud', report.providerRef, campaignIds, status, error, report.at, this.#now())
    return applied === 'awaited' ? 'again' : undefined
  }

  /** Applies one notification; only interactions of the campaigns whose secret verified it are touched. */
  async #apply(notification: WhatsAppNotification, senders: Campaign[]): Promise<'again' | undefined> {
    const campaignIds = senders.map((campaign) => campaign.id)
    const ours = (interaction: InteractionWithConfig | undefined) =>
      interaction !== undefined && campaignIds.includes(interaction.campaignId) ? interaction : undefined
    const sent = async (wamid: string | undefined) =>
      wamid === undefined ? undefined : ours(await findInteractionByProviderRef(this.#db, 'whatsapp_cloud', wamid))

    if (notification.kind === 'report') {
      const { report } = notification
      const interaction = await sent(report.providerRef)
      // Not an attempt's template: maybe a session message sent on one (services/sessionMessages.ts).
      if (interaction === undefined) return this.#sessionMessageStatus(report, campaignIds)
      if (report.kind === 'progress' && (STATUS_RANK[report.status] ?? 0) <= (STATUS_RANK[interaction.providerStatus ?? ''] ?? 0)) return undefined
      await this.#lifecycle.report(interaction, report)
      return undefined
    }
    // A reply: to the message it names, else to the latest conversation with its sender from this number
    // (a running one first). One that answers nothing running is an inbound interaction of its own.
    const message: PersonMessage = { provider: 'whatsapp_cloud', id: notification.messageId, from: notification.from, at: notification.at, text: notification.text, media: notification.media }
    const answered = (await sent(notification.replyTo)) ?? ours(await findLatestInteractionWith(this.#db, senders, notification.from))
    await this.#lifecycle.landMessage(senders, answered, message, asksToStop(notification.text) ? 'reply' : undefined)
  }
}
