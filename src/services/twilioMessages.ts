/**
 * Twilio's requests about texts (docs/messaging.md), form-encoded and signed
 * with X-Twilio-Signature over the exact URL Twilio was given
 * (http/routes/providers/twilio.ts passes them as they came):
 * - an attempt's status callbacks (the URL names the interaction): reported
 *   through the task's lifecycle, a status on the way never going back;
 * - the status callbacks of texts sent in conversations (one URL, by SID):
 *   applied to the session message forward only;
 * - a campaign's number's messaging webhook, a text the person sent: the
 *   carriers' keywords honoured (STOP and its kind suppress the number,
 *   START lifts the suppression the person's STOP made, HELP is answered
 *   with the campaign's help text), and anything else landed as a WhatsApp reply
 *   lands: on the running conversation with the person, else on their latest
 *   task as an inbound interaction.
 * A request is believed only when its signature verifies with the auth token
 * of a campaign of the account it names, and names that account: otherwise it
 * is refused and nothing changes.
 */
import type { FastifyBaseLogger } from 'fastify'
import { readTwilioMessagingConfig } from '../channels/twilio/messagingConfig.ts'
import type { TwilioMessagingChannel } from '../channels/twilio/messagingChannel.ts'
import { errorCodeOf, inboundText, MESSAGE_STATUS_RANK, reportFromMessageStatus } from '../channels/twilio/messagingWebhooks.ts'
import { signedByAccount } from '../channels/twilio/webhooks.ts'
import { storableId } from '../domain/boundedReaders.ts'
import { escapeXml } from '../domain/messageText.ts'
import { asksToStop, smsKeyword, type SmsKeyword } from '../domain/optOut.ts'
import { isId } from '../domain/ids.ts'
import type { Campaign, JsonObject } from '../domain/types.ts'
import { findTextCampaignsByAccount, findTextCampaignsByNumber } from '../store/campaigns.ts'
import type { Database } from '../store/database.ts'
import { findInteractionWithConfig, findLatestInteractionWith, recordProviderMessage } from '../store/interactions.ts'
import { recordMessageStatus } from '../store/sessionMessages.ts'
import { unsuppressKeywordOptOut } from '../store/suppressions.ts'
import { audited } from './auditTrail.ts'
import { readableConfig } from './providerCallbacks.ts'
import type { PersonMessage, TaskLifecycle } from './taskLifecycle.ts'

/** One of Twilio's requests: its form body, as sent, and its signature. */
export interface TwilioMessageRequest {
  form: string
  signature: string | undefined
}

/** The answer to a text that needs none of the service's own: Twilio sends nothing back. */
export const EMPTY_MESSAGING_TWIML = '<?xml version="1.0" encoding="UTF-8"?>\n<Response/>'

/** Who lifts a suppression when the person texts START: the person, by their own text. */
const THE_PERSON = { id: 'person', address: null }

const SESSION_STATUS: Readonly<Record<string, 'sent' | 'delivered' | 'read' | 'failed'>> = {
  sent: 'sent',
  partially_delivered: 'delivered',
  delivered: 'delivered',
  read: 'read',
  undelivered: 'failed',
  failed: 'failed',
}

export class TwilioMessages {
  readonly #db: Database
  readonly #channel: TwilioMessagingChannel
  readonly #lifecycle: TaskLifecycle
  readonly #now: () => number
  readonly #log: FastifyBaseLogger
  readonly #phoneHashKey: Buffer

  constructor(deps: { db: Database; channel: TwilioMessagingChannel; lifecycle: TaskLifecycle; now: () => number; log: FastifyBaseLogger; phoneHashKey: Buffer }) {
    this.#phoneHashKey = deps.phoneHashKey
    this.#db = deps.db
    this.#channel = deps.channel
    this.#lifecycle = deps.lifecycle
    this.#now = deps.now
    this.#log = deps.log
  }

  /** Applies an attempt's status callback; false when the request is refused. */
  async statusReported(interactionId: string, request: TwilioMessageRequest): Promise<boolean> {
    const interaction = isId('interaction', interactionId) ? await findInteractionWithConfig(this.#db, interactionId) : undefined
    if (interaction === undefined || interaction.provider !== 'twilio' || interaction.channel !== 'sms') return false
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const url = this.#channel.statusCallbackUrl(interactionId)
    if (!readableConfig(this.#log, interaction.campaignId, () => this.#signedFor(interaction.providerConfig, url, params, request.signature))) return false
    if (interaction.providerRef !== null && params.MessageSid !== interaction.providerRef) return false
    const report = reportFromMessageStatus(params, this.#now())
    if (report === undefined) return true
    // Twilio's callbacks may come out of order: `sent` after `delivered` changes nothing.
    if (report.kind === 'progress' && (MESSAGE_STATUS_RANK[report.status] ?? 0) <= (MESSAGE_STATUS_RANK[interaction.providerStatus ?? ''] ?? 0)) return true
    await this.#lifecycle.report(interaction, report)
    return true
  }

  /** Applies the status callback of a text sent in a conversation; false when the request is refused. */
  async sessionStatusReported(request: TwilioMessageRequest): Promise<'applied' | 'refused' | 'again'> {
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const accountSid = storableId(params.AccountSid)
    const messageSid = storableId(params.MessageSid)
    if (accountSid === undefined || messageSid === undefined) return 'refused'
    const url = this.#channel.sessionStatusUrl()
    const campaigns = (await findTextCampaignsByAccount(this.#db, accountSid)).filter((campaign) =>
      readableConfig(this.#log, campaign.id, () => this.#signedFor(campaign.providerConfig, url, params, request.signature)),
    )
    if (campaigns.length === 0) return 'refused'
    const status = SESSION_STATUS[params.MessageStatus ?? '']
    if (status === undefined) return 'applied'
    const code = errorCodeOf(params.ErrorCode)
    const error = status === 'failed' ? `Twilio reports it ${params.MessageStatus}${code === undefined ? '' : ` (error ${code})`}` : null
    const now = this.#now()
    const applied = await recordMessageStatus(this.#db, 'twilio', messageSid, campaigns.map((campaign) => campaign.id), status, error, now, now)
    return applied === 'awaited' ? 'again' : 'applied'
  }

  /**
   * The TwiML a text to a campaign's number is answered with; undefined when
   * the request is refused (no SMS campaign sends from the number or the
   * Messaging Service it names, or it verifies with the account of none).
   * Twilio delivers a message once; a repeated one (its SID recorded) changes nothing.
   */
  async inbound(request: TwilioMessageRequest): Promise<string | undefined> {
    const params = Object.fromEntries(new URLSearchParams(request.form))
    const text = inboundText(params)
    if (text === undefined) return undefined
    const url = this.#channel.inboundUrl()
    const senders = (await findTextCampaignsByNumber(this.#db, text.to, text.messagingServiceSid)).filter((campaign) =>
      readableConfig(this.#log, campaign.id, () => this.#signedFor(campaign.providerConfig, url, params, request.signature)),
    )
    if (senders.length === 0) return undefined
    const answered = await findLatestInteractionWith(this.#db, senders, text.from)
    const campaign = senders.find((candidate) => candidate.id === answered?.campaignId) ?? senders[0]!
    const keyword = keywordOf(text.text, text.optOutType)
    if (keyword === 'help') {
      const help = readTwilioMessagingConfig(campaign.providerConfig).helpText
      return help === undefined ? EMPTY_MESSAGING_TWIML : `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Message>${escapeXml(help)}</Message></Response>`
    }
    if (keyword === 'start' && (await this.#optedBackIn(campaign, text.from, text.messageSid))) return EMPTY_MESSAGING_TWIML
    const optOut = keyword === 'stop' ? (isCarrierStop(text.text, text.optOutType) ? 'keyword' : 'reply') : undefined
    const message: PersonMessage = { provider: 'twilio', id: text.messageSid, from: text.from, at: this.#now(), text: text.text, media: text.media }
    await this.#lifecycle.landMessage(senders, answered, message, optOut)
    return EMPTY_MESSAGING_TWIML
  }

  /**
   * START from a person whose carriers' keyword STOP suppressed the number
   * (reason `keyword`): they ask for the sender's texts again (Twilio sends
   * them again from then on), so that suppression is lifted, in the audit log
   * as theirs; true then. Otherwise (a YES that confirms an appointment, say)
   * it is a message as any other. Any other suppression stays: a STOP on
   * WhatsApp, an opt-out in other words, one the client or the operator
   * added (adding a number suppressed by keyword makes it theirs), one a
   * provider reported. Consents the STOP revoked stay revoked (a campaign
   * that needs one needs it recorded anew).
   */
  async #optedBackIn(campaign: Campaign, phone: string, messageSid: string): Promise<boolean> {
    return audited({ db: this.#db, now: this.#now }, THE_PERSON, async (tx) => {
      const lifted = await unsuppressKeywordOptOut(tx, campaign.orgId, phone)
      // Recorded by its SID, so that Twilio's retry of it (after a timeout) is not taken for a reply the second time.
      if (lifted) await recordProviderMessage(tx, 'twilio', messageSid, null, this.#now())
      return { result: lifted, audit: lifted ? { orgId: campaign.orgId, action: 'suppression.lifted', target: phone, details: { reason: 'keyword', by: 'START' } } : undefined }
    })
  }

  /** Whether Twilio signed these parameters for `url` with the auth token of the config's account, naming that account. */
  #signedFor(config: JsonObject, url: string, params: Record<string, string>, signature: string | undefined): boolean {
    return signedByAccount({ accountSid: readTwilioMessagingConfig(config).accountSid, authToken: this.#channel.authTokenFor(config) }, url, params, signature)
  }
}

/** Whether a STOP is one of the carriers' own keywords (which Twilio acts on itself), not an opt-out in other words. */
function isCarrierStop(text: string | undefined, optOutType: string | undefined): boolean {
  return optOutType === 'STOP' || smsKeyword(text) === 'stop'
}

/** The carriers' keyword a text is, by Twilio's Advanced Opt-Out verdict when it gives one, else by its words (any language's STOP counts). */
function keywordOf(text: string | undefined, optOutType: string | undefined): SmsKeyword | undefined {
  if (optOutType === 'STOP' || optOutType === 'START' || optOutType === 'HELP') return optOutType.toLowerCase() as SmsKeyword
  return smsKeyword(text) ?? (asksToStop(text) ? 'stop' : undefined)
}
