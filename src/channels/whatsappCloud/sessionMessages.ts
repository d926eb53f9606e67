/** The Cloud API's session messages (channels/sessionMessages.ts for what one may hold): a `text` message, or an `interactive` one with reply buttons or a list. */
import type { SessionMessageContent } from '../sessionMessages.ts'

/** The Cloud API's message for `content` (one that sessionMessageProblems passes), to the person's WhatsApp number (E.164). */
export function sessionMessagePayload(to: string, content: SessionMessageContent): Record<string, unknown> {
  const envelope = { messaging_product: 'whatsapp', recipient_type: 'individual', to: to.replace(/^\+/, '') }
  if (content.text !== undefined) return { ...envelope, type: 'text', text: { body: content.text, preview_url: false } }
  if (content.buttons !== undefined) {
    const { body, options } = content.buttons
    return {
      ...envelope,
      type: 'interactive',
      interactive: { type: 'button', body: { text: body }, action: { buttons: options.map((option) => ({ type: 'reply', reply: option })) } },
    }
  }
  const { body, button, sections } = content.list!
  return { ...envelope, type: 'interactive', interactive: { type: 'list', body: { text: body }, action: { button, sections } } }
}
