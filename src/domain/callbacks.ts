/**
 * A person calling back a number that called them (services/inboundCalls.ts):
 * the call lands on their open task of the organization, or on one completed
 * within the organization's window, the most recent first.
 */
import type { NextStep } from './attemptPolicy.ts'

/** The window a new organization has: a person may call back within two weeks of the task's end, the span a retry ladder and a voicemail's "call us back" cover. */
export const DEFAULT_CALLBACK_WINDOW_DAYS = 14
/** As long as the default retention keeps a task's personal data (domain/retention.ts): a callback past it could not be matched anyway. */
export const MAX_CALLBACK_WINDOW_DAYS = 365

/** What the end of a call back does to the task it landed on. */
export type CallBackStep = { kind: 'complete'; outcome: 'reached' | 'opted_out' } | { kind: 'release'; dueAt: number | null }

/**
 * A call back steers its task as an outbound attempt's conversation does
 * (the attempt policy's `step`, from stepAfterInteraction): a person reached
 * completes it `reached`, an opt-out `opted_out`, a callback time asked for
 * makes it due then. A call back that reached no conversation (the caller
 * hung up before it was handed over) is no attempt of the task's: it spends
 * none, falls back to nothing, completes nothing, and the task, held while
 * the call ran, is due again when it was before (`dueAt` null).
 */
export function stepAfterCallBack(step: NextStep, reached: boolean): CallBackStep {
  if (step.kind === 'complete' && step.outcome === 'opted_out') return { kind: 'complete', outcome: 'opted_out' }
  if (!reached) return { kind: 'release', dueAt: null }
  if (step.kind === 'retry') return { kind: 'release', dueAt: step.dueAt }
  return { kind: 'complete', outcome: 'reached' }
}
