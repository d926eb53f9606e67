/**
 * The TwiML that hands an answered call to its conversation, in one of two
 * ways (the campaign's `handoff`):
 * - `redirect`: <Redirect> to the app's TwiML at `answer_url`, with
 *   `interaction_id`, `task_id` and `attempt` (or, for a call the person
 *   made, `direction=inbound`) added to its query, so that the
 *   app reads the rest of the context from GET /api/v2/interactions/{id};
 * - `stream`: <Connect><Stream> to an agent's WebSocket at `stream_url`, with
 *   the context as <Parameter> elements, which Twilio hands the agent in the
 *   stream's `start` message (`customParameters`). That is how media-stream
 *   agents (Pipecat, LiveKit, ElevenLabs, Deepgram...) take a call.
 *
 * Twilio's limits (TwiML <Stream> reference, "Custom Parameters"; errors 11750
 * and 31920): each parameter's name and value together under 500 characters,
 * a stream URL without a query string, a TwiML answer under 64 kB. A context
 * value that cannot go as a parameter is left out, and the TwiML says which
 * and why in a comment, as the interaction's handoff record does.
 */
import type { JsonObject, LeftOut } from '../../domain/types.ts'
import { escapeXml } from '../../domain/messageText.ts'
import type { TwilioConfig } from './config.ts'

/** The call's part of its task, as the answer route reads it. */
export interface AnsweredCall {
  interactionId: string
  taskId: string | null
  attempt: number | null
  /** Given only for a call the person made (docs/callbacks.md): the conversation is told `direction=inbound`. */
  direction?: 'inbound'
  language: string | undefined
  firstName: string | undefined
  context: JsonObject
}

/** Twilio's bound on one <Parameter>: its name and value together under this many characters. */
export const MAX_PARAMETER_CHARACTERS = 500
/**
 * Twilio refuses a TwiML answer of 64 kB or more (error 11750); the
 * parameters stop short of it, with room for the rest of the document.
 */
const MAX_PARAMETERS_BYTES = 60 * 1024

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'

export function handoffTwiml(config: TwilioConfig, call: AnsweredCall): { twiml: string; leftOut: LeftOut[] } {
  if (config.handoff === 'redirect') return { twiml: redirectTwiml(config.answerUrl!, call), leftOut: [] }
  const { parameters, leftOut } = streamParameters(call)
  const elements = parameters.map(([name, value]) => `<Parameter name="${escapeXml(name)}" value="${escapeXml(value)}"/>`).join('')
  const note = leftOut.length === 0 ? '' : `<!-- ${commentText(leftOut)} -->`
  return {
    twiml: `${XML_DECLARATION}<Response>${note}<Connect><Stream url="${escapeXml(config.streamUrl!)}">${elements}</Stream></Connect></Response>`,
    leftOut,
  }
}

/** What answers a call whose interaction is over: nothing to hand it to. */
export const HANG_UP_TWIML = `${XML_DECLARATION}<Response><Hangup/></Response>`

/** A message said, then the call hung up (a campaign's unknown_caller_message). */
export function sayAndHangUpTwiml(text: string): string {
  return `${XML_DECLARATION}<Response><Say>${escapeXml(text)}</Say><Hangup/></Response>`
}

function redirectTwiml(answerUrl: string, call: AnsweredCall): string {
  const url = new URL(answerUrl)
  url.searchParams.set('interaction_id', call.interactionId)
  if (call.taskId !== null) url.searchParams.set('task_id', call.taskId)
  if (call.attempt !== null) url.searchParams.set('attempt', String(call.attempt))
  if (call.direction !== undefined) url.searchParams.set('direction', call.direction)
  return `${XML_DECLARATION}<Response><Redirect method="POST">${escapeXml(url.href)}</Redirect></Response>`
}

/**
 * The stream's parameters: the service's own first (the interaction, task
 * and attempt, the contact's language and first name), then each context
 * value that is one string, number or boolean, as text, in the context's
 * order, while they fit.
 */
export function streamParameters(call: AnsweredCall): { parameters: [string, string][]; leftOut: LeftOut[] } {
  const own: [string, string | undefined][] = [
    ['interaction_id', call.interactionId],
    ['task_id', call.taskId ?? undefined],
    ['attempt', call.attempt === null ? undefined : String(call.attempt)],
    ['direction', call.direction],
    ['language', call.language],
    ['first_name', call.firstName],
  ]
  const parameters: [string, string][] = []
  const leftOut: LeftOut[] = []
  let bytes = 0
  const add = (name: string, value: string) => {
    const size = Buffer.byteLength(`<Parameter name="${escapeXml(name)}" value="${escapeXml(value)}"/>`, 'utf8')
    if ([...name].length + [...value].length >= MAX_PARAMETER_CHARACTERS) return `its name and value are ${MAX_PARAMETER_CHARACTERS} characters or more`
    if (bytes + size > MAX_PARAMETERS_BYTES) return "the TwiML would pass Twilio's 64 kB"
    parameters.push([name, value])
    bytes += size
    return undefined
  }
  for (const [name, value] of own) {
    if (value === undefined) continue
    const reason = add(name, value)
    // The service's own come first and are short; a first name too long for Twilio is the one that can miss.
    if (reason !== undefined) leftOut.push({ key: name, reason })
  }
  const taken = new Set(own.map(([name]) => name))
  for (const [key, value] of Object.entries(call.context)) {
    const reason = taken.has(key)
      ? 'the name of one of the service\'s own parameters'
      : typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? add(key, String(value))
        : 'not a single string, number or boolean'
    if (reason !== undefined) leftOut.push({ key, reason })
  }
  return { parameters, leftOut }
}

/** A comment's text: XML comments cannot hold "--" (nor end with "-"), so each key is quoted and any "--" broken up. */
function commentText(leftOut: readonly LeftOut[]): string {
  const quoted = leftOut.map(({ key, reason }) => `${JSON.stringify(key).replaceAll('--', '- -')} (${reason})`)
  return `Left out of the stream's parameters (read them from GET /api/v2/interactions/{id}): ${quoted.join(', ')}`
}
