/**
 * Session messages (docs/messaging.md): a client's message to the person of
 * an interaction, sent while the window the person's latest message opened
 * is open (domain/messagingWindow.ts: WhatsApp's, and the same for texts,
 * which carry text only), at the pace of the campaign's sender
 * (domain/pacing.ts), at most once per Idempotency-Key, and never to a
 * number on the organization's suppression list or a person erased.
 *
 * It is recorded (`sending`) before it is handed to the provider, so that a
 * process that dies meanwhile leaves it known rather than lost; then it takes
 * the provider's answer: its id (`accepted`, its statuses following by the
 * provider's webhooks), or, when the provider certainly did not send it,
 * nothing is kept and the request is refused; when whether it was sent is
 * unknown (no answer), it is `unknown` and never sent again by itself.
 */
import { createHash } from 'node:crypto'
import type { ChannelRegistry } from '../channels/registry.ts'
import { type SessionMessageContent, sessionMessageProblems, sessionMessageText, textOnlyProblems } from '../channels/sessionMessages.ts'
import { MAX_SMS_CHARACTERS } from '../channels/twilio/messagingConfig.ts'
import { ApiError, type Refusal, ValidationFailed } from '../domain/errors.ts'
import { newId } from '../domain/ids.ts'
import { windowOpen } from '../domain/messagingWindow.ts'
import { takeSlot } from '../domain/pacing.ts'
import type { Database } from '../store/database.ts'
import { addAgentTurn } from '../store/interactions.ts'
import { lockSenderPaces, saveSenderPaces } from '../store/senderPaces.ts'
import { findSuppression, suppress } from '../store/suppressions.ts'
import {
  deleteUnsentMessage,
  findMessageByKey,
  findMessageTarget,
  insertSessionMessage,
  lockReachableInteraction,
  recordHandedMessage,
  settleAbandonedMessage,
} from '../store/sessionMessages.ts'
import type { SessionMessage } from '../domain/types.ts'

export class SessionMessages {
  readonly #db: Database
  readonly #channels: ChannelRegistry
  readonly #now: () => number
  readonly #phoneHashKey: Buffer

  constructor(deps: { db: Database; channels: ChannelRegistry; now: () => number; phoneHashKey: Buffer }) {
    this.#db = deps.db
    this.#channels = deps.channels
    this.#now = deps.now
    this.#phoneHashKey = deps.phoneHashKey
  }

  /** Sends `content` to the person of the organization's interaction; a repeated Idempotency-Key answers the message its first request made. */
  async send(orgId: string, interactionId: string, content: SessionMessageContent, key: string | undefined): Promise<{ message: SessionMessage; replayed: boolean }> {
    refuseProblems(content, sessionMessageProblems(content))
    const requestHash = createHash('sha256').update(interactionId).update('\n').update(JSON.stringify(content)).digest()
    if (key !== undefined) {
      const earlier = await findMessageByKey(this.#db, orgId, key)
      if (earlier !== undefined) return replayed({ ...earlier, message: await settleAbandonedMessage(this.#db, earlier.message, this.#now()) }, requestHash)
    }
    const target = await findMessageTarget(this.#db, orgId, interactionId)
    if (target === undefined) throw new ApiError('not_found', `No interaction ${interactionId} exists.`)
    const channel = this.#channels.get(target.provider, target.channel)
    if (channel.sendSessionMessage === undefined) {
      throw new ApiError('conflict', `Interaction ${interactionId} is a ${target.channel} interaction through ${target.provider}, which takes no messages: only WhatsApp and SMS conversations do.`)
    }
    if (target.channel === 'sms') refuseProblems(content, textOnlyProblems(content, MAX_SMS_CHARACTERS))
    const providerName = PROVIDER_NAMES[target.provider] ?? target.provider
    if (target.toPhone === '') throw erased(interactionId)
    const suppression = await findSuppression(this.#db, this.#phoneHashKey, orgId, target.toPhone)
    if (suppression !== undefined) {
      throw new ApiError('conflict', `The number of interaction ${interactionId} is on the organization's suppression list (${suppression.reason}): it is not contacted, not even within its window.`)
    }
    const now = this.#now()
    if (!windowOpen(target.windowClosesAt, now)) {
      const closed = target.windowClosesAt === null ? 'has not opened: the person has not written on this interaction' : `closed at ${new Date(target.windowClosesAt).toISOString()}, 24 hours after the person's latest message`
      throw new ApiError(
        'conflict',
        target.channel === 'whatsapp'
          ? `WhatsApp's customer service window of interaction ${interactionId} ${closed}; only an approved template can reach them now (a new trigger sends the campaign's).`
          : `The conversation window of interaction ${interactionId} ${closed}: a text in the conversation answers the person; a new trigger sends the campaign's own, in its window.`,
      )
    }
    const id = newId('sessionMessage', now)
    const recorded = await this.#db.transaction(async (tx) => {
      if (!(await lockReachableInteraction(tx, interactionId))) throw erased(interactionId)
      const pace = channel.senderPace(target.providerConfig)
      const perSecond = target.pacing.per_second ?? pace?.perSecond
      if (perSecond !== undefined) {
        const sender = pace?.sender ?? `campaign:${target.campaignId}`
        const slots = (await lockSenderPaces(tx, [sender])).get(sender)!
        // The time once the sender's row is locked: read before the wait for the lock, a slot another request took
        // in the next second meanwhile made this one look a full second late (42 spurious 429s in 3,200 at 1,000,000/s).
        const at = this.#now()
        const decision = takeSlot(slots, perSecond, at)
        // Told to wait, a message takes no place in the line of the tasks that wait for the sender: it is asked again.
        if (!decision.start) {
          const waitS = Math.max(1, Math.ceil((decision.until - at) / 1000))
          throw new ApiError('rate_limited', `The campaign's sender sends ${perSecond} messages a second, all taken now; send this one again in ${waitS} s.`, waitS)
        }
        await saveSenderPaces(tx, new Map([[sender, decision.slots]]))
      }
      return insertSessionMessage(tx, { id, orgId, interactionId, provider: target.provider, content, key, requestHash, at: now })
    })
    // A request with the same key recorded its message in the meantime: that one is the answer, once it has one.
    if (!recorded) {
      const earlier = await findMessageByKey(this.#db, orgId, key!)
      if (earlier === undefined) throw keyInUse()
      return replayed(earlier, requestHash)
    }

    let started
    try {
      started = await channel.sendSessionMessage(target.providerConfig, target.toPhone, content)
    } catch (error) {
      throw unknownFate(await recordHandedMessage(this.#db, id, { status: 'unknown', error: error instanceof Error ? error.message : String(error) }, this.#now()))
    }
    if (started.kind === 'started') {
      const message = await recordHandedMessage(this.#db, id, { status: 'accepted', providerMessageId: started.providerRef }, this.#now())
      // Its transcript holds both sides of the conversation while it runs (or is kept open: results.conversation_s).
      await addAgentTurn(this.#db, interactionId, { role: 'agent', text: sessionMessageText(content), at: message.createdAt })
      return { message, replayed: false }
    }
    await deleteUnsentMessage(this.#db, id)
    if (started.kind === 'refused' && started.windowClosed === true) {
      // The window as the provider keeps it closed before the service's (a message of the person's it never delivered): only a template now.
      throw new ApiError('conflict', `${providerName} says the person's window is closed (${started.reason}): nothing was sent; a new trigger sends the campaign's template.`)
    }
    if (started.kind === 'refused' && started.optedOut === true) {
      await suppress(this.#db, orgId, target.toPhone, 'provider', this.#now())
      throw new ApiError('conflict', `${providerName} says the person has opted out of the sender's messages (${started.reason}): nothing was sent, and the number is now on the organization's suppression list.`)
    }
    if (started.kind === 'deferred') {
      const waitS = Math.max(1, Math.ceil(started.retryAfterMs / 1000))
      throw new ApiError('rate_limited', `${providerName} asks for a pause (${started.reason}); send this message again in ${waitS} s.`, waitS)
    }
    throw new ApiError('provider_error', `${providerName} refused the message, which was not sent: ${started.reason}`)
  }
}

/**
 * What an earlier request with the same key answered, if it was the same
 * request: its message once WhatsApp took it; while that request still
 * waits for WhatsApp, a moment's wait; when WhatsApp gave it no answer, the
 * same 502 (it may have reached the person, and is not sent twice).
 */
function replayed(earlier: { message: SessionMessage; requestHash: Buffer }, requestHash: Buffer): { message: SessionMessage; replayed: true } {
  if (!earlier.requestHash.equals(requestHash)) throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another message or interaction.')
  const { message } = earlier
  if (message.status === 'sending') throw keyInUse()
  if (message.status === 'unknown') throw unknownFate(message)
  return { message, replayed: true }
}

/** How a provider is named in an answer. */
const PROVIDER_NAMES: Partial<Record<string, string>> = { whatsapp_cloud: 'WhatsApp', twilio: 'Twilio' }

/** A 422 of a message's problems, if it has any. */
function refuseProblems(content: SessionMessageContent, problems: { loc: (string | number)[]; refusal: Refusal }[]): void {
  if (problems.length === 0) return
  throw new ValidationFailed(problems.map(({ loc, refusal }) => ({ type: 'value_error', loc: ['body', ...loc], msg: refusal.msg, input: valueAt(content, loc), ctx: refusal.ctx })))
}

const keyInUse = () => new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being sent; retry in a moment.', 1)

const erased = (interactionId: string) => new ApiError('conflict', `The person of interaction ${interactionId} has been erased: nothing can be sent to them.`)

const unknownFate = (message: SessionMessage) =>
  new ApiError('provider_error', `${message.error} The message is kept as ${message.id}, status unknown, and is not sent again by itself.`)

/** The value at `loc` in the message, as a 422 entry shows it. */
function valueAt(content: SessionMessageContent, loc: readonly (string | number)[]): unknown {
  let value: unknown = content
  for (const step of loc) value = value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[step] : undefined
  return value
}
