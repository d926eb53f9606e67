/**
 * How a campaign reaches people: when (schedule), how often (attempts),
 * through whom (provider), how many at once (max_concurrent), and how long
 * it waits for a conversation's result (results). Field names
 * are those of the admin API, since these documents are stored as sent.
 */

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
export type Weekday = (typeof WEEKDAYS)[number]

/** Local wall-clock hours on some days of the week: `start` inclusive, `end` exclusive; `end` may be "24:00". */
export interface ScheduleWindow {
  days: Weekday[]
  /** "HH:MM" */
  start: string
  /** "HH:MM", or "24:00" for the end of the day. */
  end: string
}

export interface Schedule {
  /** "contact": each task in its contact's own zone; otherwise one IANA zone for every task. */
  timezone: 'contact' | string
  /**
   * The zone of contacts whose number belongs to no country (+800...), decided
   * when their trigger is accepted; also read for a task accepted with no
   * zones, while the campaign kept a zone of its own.
   */
  fallback_timezone?: string
  windows: ScheduleWindow[]
  /** Local dates ("YYYY-MM-DD") on which nothing starts. */
  blackout_dates?: string[]
  /** Instants (ISO 8601) before which, and from which on, nothing starts. */
  starts_at?: string
  ends_at?: string
}

/** Every day 09:00–20:00 in the contact's local time. */
export const DEFAULT_SCHEDULE: Schedule = {
  timezone: 'contact',
  windows: [{ days: [...WEEKDAYS], start: '09:00', end: '20:00' }],
}

/** Interaction outcomes after which another attempt may follow, each with its own delay. */
export const RETRY_OUTCOMES = ['no_answer', 'busy', 'voicemail', 'failed'] as const
export type RetryOutcome = (typeof RETRY_OUTCOMES)[number]

export interface AttemptPolicy {
  /** Most interactions per task. */
  max: number
  /** Seconds from the end of an attempt to the earliest next one, by outcome. */
  retry_delays_s: Record<RetryOutcome, number>
  /** Seconds from the trigger after which the task completes as expired. */
  expire_after_s: number
  /** What follows a message left on a voicemail; absent: {@link DEFAULT_AFTER_VOICEMAIL_LEFT}. */
  voicemail_left?: AfterVoicemailLeft
  /** When a retry goes once its delay is over; absent: `fixed`. */
  timing?: AttemptTiming
}

/**
 * `fixed`: at the first opening after the retry delay. `learned`: at the
 * local hour, from then until three days on, where the campaign has reached
 * people most often (domain/learnedTiming.ts).
 */
export const ATTEMPT_TIMINGS = ['fixed', 'learned'] as const
export type AttemptTiming = (typeof ATTEMPT_TIMINGS)[number]

export const AFTER_VOICEMAIL_LEFT = ['stop', 'retry'] as const

/**
 * `stop`: the message was the outreach; the task completes (as
 * `unreachable`: no person was reached, and the interaction says a message
 * was left). `retry`: another attempt, `delay_s` after, so that a delay
 * that is not a whole number of days calls at another local hour of day.
 */
export interface AfterVoicemailLeft {
  then: (typeof AFTER_VOICEMAIL_LEFT)[number]
  delay_s?: number
}

/** A day and two hours: the next day, two hours later on the contact's clock than the message was left. */
export const DEFAULT_VOICEMAIL_LEFT_RETRY_DELAY_S = 26 * 3600
export const DEFAULT_AFTER_VOICEMAIL_LEFT: AfterVoicemailLeft = { then: 'stop' }

export const DEFAULT_ATTEMPTS: AttemptPolicy = {
  max: 3,
  retry_delays_s: { no_answer: 7200, busy: 900, voicemail: 14400, failed: 1800 },
  expire_after_s: 604800,
}

/** What a campaign does with its conversations' results. */
export interface ResultSettings {
  /**
   * Seconds an interaction whose conversation took place (a call completed, a
   * reply came) waits for its result before it is reported without one: a
   * result usually comes seconds after the call's last status.
   */
  wait_s: number
  /**
   * A WhatsApp or SMS campaign's conversation, open on purpose: an interaction
   * the person replied on stays one interaction, gathering what they write,
   * until the client's result ends it, their WhatsApp window closes (24 hours
   * after their latest message), or this many seconds after their first
   * reply have passed, whichever comes first; then it is reported, and its
   * task moves on. Absent: `wait_s` applies, as for calls.
   */
  conversation_s?: number
}

export const DEFAULT_RESULTS: ResultSettings = { wait_s: 0 }
/** The longest conversation a messaging campaign keeps open: a week, as the longest reply window. */
export const MAX_CONVERSATION_S = 7 * 24 * 60 * 60
export const MIN_CONVERSATION_S = 60

/**
 * The campaign's own pace for its sender (domain/pacing.ts): starts per
 * second. Absent: its provider's documented rate (Channel.senderPace), or
 * none for a provider that states none.
 */
export interface PacingSettings {
  per_second?: number
}
export const MAX_RESULT_WAIT_S = 600

export const PROVIDERS = ['simulator', 'twilio', 'whatsapp_cloud', 'vapi', 'retell', 'elevenlabs'] as const
export type Provider = (typeof PROVIDERS)[number]

/**
 * Why a task goes on to its campaign's fallback step: its message was not
 * delivered (a failed status, or a send that failed), the number is not on
 * WhatsApp (Graph error 131026), or the person did not reply (the message,
 * or the call, reached them without a conversation).
 */
export const FALLBACK_CONDITIONS = ['undelivered', 'not_on_whatsapp', 'no_reply'] as const
export type FallbackCondition = (typeof FALLBACK_CONDITIONS)[number]

/** A campaign's fallback step: another campaign of its organization, on another channel, that its tasks go on to. */
export interface FallbackSettings {
  campaign_id: string
  when: FallbackCondition[]
  /**
   * With `no_reply`: minutes of this campaign's open window in the contact's
   * zones, counted from the message's start, that the person has to reply
   * before the task goes on: the message is over then, in place of its
   * provider's reply window (domain/fallback.ts, noReplyDeadline). Absent:
   * when the reply window ends.
   */
  no_reply_minutes?: number
}

/** Most no_reply_minutes: a week of open minutes. */
export const MAX_NO_REPLY_MINUTES = 7 * 24 * 60
