/**
 * The simulator: a complete channel that reaches nobody. Attempt n ends with
 * `outcomes[n-1]` (the last one repeating) `duration_ms` after it starts. It
 * keeps nothing in memory: the outcome follows from the attempt number, and
 * the dispatcher settles the interaction at its settle time, so simulated
 * conversations survive restarts and follow an injected clock in tests.
 *
 * A conversation that takes place (completed, replied) reports `result` when
 * the campaign sets one: validated as POST /api/v2/interactions/{id}/result
 * validates a result, and reported as the call ends, as a voice app that
 * posts its result before the provider's last status arrives.
 */
import type { ReportedResult } from '../../domain/conversationResult.ts'
import { type TObject, Type } from '@sinclair/typebox'
import { type Channel as ChannelName, INTERACTION_OUTCOMES, type InteractionOutcome, type JsonObject } from '../../domain/types.ts'
import { ConversationResultInput } from '../../validation/conversationResult.ts'
import { OneOf } from '../../validation/fields.ts'
import { conversationTookPlace } from '../../domain/attemptPolicy.ts'
import { isIsoInstant } from '../../domain/isoInstants.ts'
import type { Channel, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'

const DEFAULT_OUTCOME: Record<ChannelName, InteractionOutcome> = { voice: 'completed', whatsapp: 'replied', sms: 'replied' }
const DEFAULT_DURATION_MS = 200
const MAX_DURATION_MS = 86_400_000
const MAX_OUTCOMES = 20

interface SimulatorConfig {
  outcomes: InteractionOutcome[]
  durationMs: number
}

export class SimulatorChannel implements Channel {
  readonly provider = 'simulator'
  /** Its outcome is drawn at its settle time; no report or reply comes before. */
  readonly decidesOutcomeAtSettleTime = true

  readonly configSchema: TObject

  constructor(readonly channel: ChannelName) {
    this.configSchema = Type.Object(
      {
        outcomes: Type.Optional(
          Type.Array(OneOf(INTERACTION_OUTCOMES[channel]), {
            minItems: 1,
            maxItems: MAX_OUTCOMES,
            description: `Attempt n ends with outcomes[n-1], the last one repeating (default ['${DEFAULT_OUTCOME[channel]}']).`,
          }),
        ),
        duration_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_DURATION_MS, description: `How long after its start an attempt ends (default ${DEFAULT_DURATION_MS}).` })),
        result: Type.Optional(ConversationResultInput),
      },
      { additionalProperties: false },
    )
  }

  async start(attempt: OutboundAttempt): Promise<StartResult> {
    return { kind: 'started', providerRef: `sim_${attempt.interactionId}` }
  }

  /** Reaches nobody: unpaced, unless its campaign sets a pace (then the campaign's own). */
  senderPace(): undefined {
    return undefined
  }

  settleAfterMs(config: JsonObject): number {
    return this.#config(config).durationMs
  }

  async settle(progress: InteractionProgress): Promise<SettledInteraction> {
    // A start that was never confirmed did not happen, even in a simulation.
    if (progress.providerRef === null) return { outcome: 'failed' }
    const { outcomes } = this.#config(progress.config)
    const outcome = outcomes[Math.min(progress.attempt, outcomes.length) - 1]!
    const result = conversationTookPlace(outcome) ? resultOf(progress.config) : undefined
    return result === undefined ? { outcome } : { outcome, result }
  }

  /**
   * Read as stored, without its schema: every stored config was checked when
   * it was saved (and is kept normalized since the schema checks it), and
   * reading it through the schema at every call cost what resultOf's note says.
   */
  #config(config: JsonObject): SimulatorConfig {
    return {
      outcomes: (config.outcomes as InteractionOutcome[] | undefined) ?? [DEFAULT_OUTCOME[this.channel]],
      durationMs: (config.duration_ms as number | undefined) ?? DEFAULT_DURATION_MS,
    }
  }
}

/**
 * The campaign's result, with its instants in UTC; none when it sets none.
 * It was validated when the campaign was saved, so its instants are real
 * RFC 3339 date-times, which Date.parse reads exactly: validating it again
 * at every call (luxon reading each turn's time) was a seventh of a worker's
 * CPU end to end.
 */
function resultOf(config: JsonObject): ReportedResult | undefined {
  const result = config.result as ReportedResult | undefined
  if (result === undefined) return undefined
  const { callback_at: callbackAt, transcript } = result
  return {
    ...result,
    ...(typeof callbackAt === 'string' ? { callback_at: utc(callbackAt) } : {}),
    ...(transcript ? { transcript: transcript.map((turn) => (turn.at === undefined ? turn : { ...turn, at: utc(turn.at) })) } : {}),
  }
}

/** A valid RFC 3339 date-time as the UTC instant it names ('t' and 'z' may be lowercase there, not for Date.parse). */
const utc = (text: string): string => (isIsoInstant(text) ? text : new Date(Date.parse(text.toUpperCase())).toISOString())
