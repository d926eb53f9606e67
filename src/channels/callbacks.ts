/**
 * The inbound half of the port for a provider whose callbacks are about one
 * call each (the agent platforms: Vapi's server messages, Retell's and
 * ElevenLabs' webhooks): the adapter reads the bytes, names the call, checks
 * the signature with its campaign's secret and says what the callback tells;
 * services/providerCallbacks.ts finds the interaction, in the one way every
 * such provider shares, and applies what it tells. An adapter never touches
 * the store.
 */
import { Type } from '@sinclair/typebox'
import type { Provider } from '../domain/campaignSettings.ts'
import type { ExternalId, InteractionStatus, JsonObject, LeftOut } from '../domain/types.ts'
import type { ProviderReport } from './channel.ts'

/** A callback's request as it came: the exact bytes signed, their JSON, and its headers. */
export interface SignedRequest {
  raw: Buffer
  /** Undefined when the bytes are not JSON. */
  json: unknown
  /** A header sent once; undefined when absent or repeated. */
  header(name: string): string | undefined
}

/** The call a callback is about: its provider reference, and the interaction the call's metadata names (its start's answer may not be recorded yet). */
export interface CallClaim {
  ref: string
  interactionId: string | undefined
}

/** What of the interaction a callback's report reads. */
export interface ClaimedInteraction {
  status: InteractionStatus
  providerConfig: JsonObject
}

/** Where a callback is served, and how it is answered (http/routes/providers/callCallbacks.ts serves every one). */
export interface CallbackRoute {
  /** POST, at this path; in neither OpenAPI document. */
  path: string
  summary: string
  /** The largest body taken; 413 beyond. */
  bodyLimit: number
  /** The status of a callback applied (and, with `ignoresUnknown`, of one about no call of the service). */
  answer: 200 | 204
  /** A callback about no call of the service (or not one the service reads) is answered `answer` and ignored, where the platform would disable a URL that keeps failing; else 403. */
  ignoresUnknown: boolean
  /** What a 403 says. */
  refusal: string
}

/**
 * What a campaign's number says to a caller it knows no task of, instead of
 * handing them to the conversation, where the platform can speak and hang up
 * (Twilio's <Say>, Vapi's assistant-request `error`): a provider_config's
 * `unknown_caller_message`. Without it, the conversation takes the call
 * without a task.
 */
export const UnknownCallerMessageSchema = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 1000,
    description: "Said to a caller with no task of the organization's in its callback window, who is then hung up on (docs/callbacks.md); without it, the conversation takes the call without a task.",
  }),
)

/** A request to be told how to answer a call the person made to a campaign's number (Vapi's assistant-request, Retell's call_inbound). */
export interface InboundCallAsk {
  /**
   * The platform's id of the call (the interaction's provider_ref from now
   * on), or, where the platform names the call only later (Retell: its first
   * webhook, by the interaction its metadata names), what a repeat of the same
   * request has too, for the platform's retries (a digest of its body).
   */
  call: { ref: string } | { repeatKey: string }
  /** The caller's number as the platform gives it; undefined when withheld. */
  from: string | undefined
  /** The provider_config field that names the number called in a campaign's config, and the number (or the platform's id of it). */
  number: { field: string; value: string }
}

/** What the conversation of a call the person made is given: the agent platform's variables are made of it (domain/agentVariables.ts). */
export interface InboundHandoff {
  interactionId: string
  /** The task it landed on; null for an unknown caller. */
  taskId: string | null
  firstName: string | undefined
  language: string | undefined
  ids: readonly ExternalId[]
  context: JsonObject
}

/** Where a platform asks at a URL of its own: answered 200 with the answer, 403 when refused. */
export type InboundRoute = Pick<CallbackRoute, 'path' | 'summary' | 'bodyLimit' | 'refusal'>

/** The inbound half of a platform that asks the service how to answer a call to a campaign's number. */
export interface InboundCallbacks {
  /** Where the platform asks at a URL of its own (Retell's inbound webhook); without one, it asks at its callbacks' route (Vapi). */
  readonly route?: InboundRoute
  /** The ask a request makes, read into bounded values; undefined for any other request. */
  ask(request: SignedRequest): InboundCallAsk | undefined
  /** Whether the request is signed as the platform signs for this campaign. */
  verify(request: SignedRequest, config: JsonObject, now: number): boolean
  /** How long the call may run before it is settled (as the channel's settleAfterMs). */
  settleAfterMs(config: JsonObject): number
  /** The answer, for the campaign's config. */
  answer(handoff: InboundHandoff, config: JsonObject): InboundAnswer
}

/**
 * An answer to a platform's ask: its JSON body, and, when it hands the call
 * to the agent with the task's variables, what of the task is not among them
 * (recorded as an outbound start's is: the interaction's `handoff`).
 */
export interface InboundAnswer {
  body: unknown
  leftOut?: LeftOut[]
}

export interface CallCallback<Message> {
  readonly provider: Provider
  readonly route: CallbackRoute
  /** The message the request holds, read into bounded values (domain/boundedReaders.ts); undefined when it is none of the platform's. */
  parse(request: SignedRequest): Message | undefined
  claim(message: Message): CallClaim
  /** Whether the request is signed as the platform signs for this campaign (and names what only its calls name, such as its agent). */
  verify(message: Message, request: SignedRequest, config: JsonObject, now: number): boolean
  /** What the message tells of the interaction; undefined when nothing new. */
  report(message: Message, interaction: ClaimedInteraction, now: number): ProviderReport | undefined
  /** Where the platform asks how to answer a call the person made (docs/callbacks.md). */
  readonly inbound?: InboundCallbacks
}
