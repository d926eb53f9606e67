/**
 * WhatsApp's customer service window: for 24 hours from a person's latest
 * message, a business may send them any message (text, interactive buttons
 * or lists); outside it, only an approved template
 * (https://developers.facebook.com/docs/whatsapp/conversation-types#customer-service-window).
 * A message the business sends does not extend it; each message the person
 * sends does. Meta's rule, not a law:
 * it decides what the platform accepts, and changes only when Meta does.
 *
 * A text (SMS) is held to the same window by the service's own rule: what
 * the client sends in a conversation answers the person, so it goes only
 * within 24 hours of their latest message there; outreach beyond it is an
 * attempt, under the campaign's schedule, its caps and the law's hours.
 */
import type { Channel } from './types.ts'

export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * When the window closes once the person has written at `messageAt`, given
 * when it closed before (null for none): the later of the two, since
 * a provider may deliver an older message after a newer one. Null for a
 * call, which has none.
 */
export function windowClosesAt(channel: Channel, messageAt: number, closedAt: number | null): number | null {
  if (channel === 'voice') return null
  return Math.max(messageAt + CUSTOMER_SERVICE_WINDOW_MS, closedAt ?? Number.NEGATIVE_INFINITY)
}

/** Whether a window that closes at `closesAt` (null: never opened) is open at `now`. */
export function windowOpen(closesAt: number | null, now: number): boolean {
  return closesAt !== null && now < closesAt
}
