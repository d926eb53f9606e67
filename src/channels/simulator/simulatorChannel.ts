/**
 * The simulator: a complete channel that reaches nobody. Attempt n ends with
 * `outcomes[n-1]` (the last one repeating) `duration_ms` after it starts. It
 * keeps nothing in memory: the outcome follows from the attempt number, and
 * the dispatcher settles the interaction at its settle time, so simulated
 * conversations survive restarts and follow an injected clock in tests.
 *
 * With a reach model (`reach`), each person answers by the hour instead:
 * attempt n reaches them with the probability its `answer_rates` gives
 * for the local hour (and `weekday_factors` for the weekday) it starts at,
 * in the zone their number tells (the first, for a number of several). The
 * draw is seeded by the number and the local date and hour, so that one
 * person called at one hour answers alike under any campaign: two
 * policies compared on one population meet the same people.
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
import { seededRandom } from '../../domain/learnedTiming.ts'
import { zonesOfPhone } from '../../domain/timezones.ts'
import { DateTime } from 'luxon'
import type { Channel, InteractionProgress, OutboundAttempt, SettledInteraction, StartResult } from '../channel.ts'

const DEFAULT_OUTCOME: Record<ChannelName, InteractionOutcome> = { voice: 'completed', whatsapp: 'replied', sms: 'replied' }
/** What an attempt that does not reach the person ends with, under a reach model. */
const UNANSWERED: Record<ChannelName, InteractionOutcome> = { voice: 'no_answer', whatsapp: 'read', sms: 'delivered' }
const DEFAULT_DURATION_MS = 200
const MAX_DURATION_MS = 86_400_000
const MAX_OUTCOMES = 20

interface SimulatorConfig {
  outcomes: InteractionOutcome[]
  durationMs: number
  reach: ReachModel | undefined
}

interface ReachModel {
  answer_rates: number[]
  weekday_factors?: number[]
}

const Probability = Type.Number({ minimum: 0, maximum: 1 })

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
        reach: Type.Optional(
          Type.Object(
            {
              answer_rates: Type.Array(Probability, {
                minItems: 24,
                maxItems: 24,
                description: "The probability that an attempt reaches the person, by the local hour (0-23) it starts at, in the zone the person's number tells.",
              }),
              weekday_factors: Type.Optional(
                Type.Array(Type.Number({ minimum: 0, maximum: 10 }), { minItems: 7, maxItems: 7, description: 'Multiplies the rate by the local weekday, Monday first (default 1 each); the product is capped at 1.' }),
              ),
            },
            {
              additionalProperties: false,
              description: `A person who answers by the hour: when set, it decides each attempt rather than outcomes (reached: ${DEFAULT_OUTCOME[channel]}; otherwise ${UNANSWERED[channel]}). For comparing retry timings on one population.`,
            },
          ),
        ),
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
    const { outcomes, reach } = this.#config(progress.config)
    const outcome = reach === undefined ? outcomes[Math.min(progress.attempt, outcomes.length) - 1]! : this.#answered(reach, progress)
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
      reach: config.reach as ReachModel | undefined,
    }
  }

  /** Whether the person of a reach model answers the attempt: drawn for their number and the local hour it starts at. */
  #answered(reach: ReachModel, progress: InteractionProgress): InteractionOutcome {
    const zone = zonesOfPhone(progress.to, undefined)?.zones[0] ?? 'UTC'
    const local = DateTime.fromMillis(progress.startedAt, { zone })
    const rate = Math.min(1, reach.answer_rates[local.hour]! * (reach.weekday_factors?.[local.weekday - 1] ?? 1))
    const draw = seededRandom(`${progress.to} ${local.toISODate()} ${local.hour}`)()
    return draw < rate ? DEFAULT_OUTCOME[this.channel] : UNANSWERED[this.channel]
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
