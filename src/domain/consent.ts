/**
 * Consent on file: that a person agreed to be contacted by an organization,
 * on a channel, for a purpose; when, how, with what proof, until when. Kept
 * per organization and number (by the number's keyed digest, as
 * suppressions are, with the number itself only while it is not erased).
 * And a campaign's compliance settings: its purpose, the subject its
 * attempts count under for caps per subject, whether its voice is
 * artificial, and the consent it requires on each channel.
 */
import { type ConsentKind, PURPOSES, type Purpose } from './callingLaw.ts'
import type { Provider } from './campaignSettings.ts'
import type { Channel } from './types.ts'

/** How a consent was revoked: through the API, a STOP reply, the provider's opt-out, a conversation's opt_out, an erasure. */
export const REVOCATION_MEANS = ['api', 'reply', 'provider', 'conversation', 'erasure'] as const
export type RevocationMeans = (typeof REVOCATION_MEANS)[number]

/** How a consent was captured. */
export const CONSENT_SOURCES = ['web_form', 'call', 'paper', 'sms', 'whatsapp', 'email', 'in_person', 'import', 'api', 'other'] as const

/** A capture a little ahead of the server's clock is the client's clock; one further ahead is a mistake, refused. */
export const CAPTURED_AHEAD_MS = 5 * 60_000

/**
 * What is wrong with a consent's instants, by field: a capture further ahead
 * of `now` than a client's clock can be, an expiry not after the capture.
 * An instant not given (or not readable) is not judged.
 */
export function consentTimingProblems(capturedAt: number | undefined, expiresAt: number | undefined, now: number): { field: 'captured_at' | 'expires_at'; message: string }[] {
  const problems: { field: 'captured_at' | 'expires_at'; message: string }[] = []
  if (capturedAt !== undefined && capturedAt > now + CAPTURED_AHEAD_MS) problems.push({ field: 'captured_at', message: 'captured_at must not be in the future' })
  if (capturedAt !== undefined && expiresAt !== undefined && expiresAt <= capturedAt) problems.push({ field: 'expires_at', message: 'expires_at must be after captured_at' })
  return problems
}

/** Most characters of a consent's evidence: a reference (a form's URL and submission id, a recording's id) or a short text. */
export const MAX_EVIDENCE_LENGTH = 2_000

/** What a decision needs of a consent on file. */
export interface ConsentOnFile {
  id: string
  channel: Channel
  purpose: Purpose
  kind: ConsentKind
  capturedAt: number
  expiresAt: number | null
  revokedAt: number | null
}

/**
 * Kinds that satisfy a required kind: written consent is express consent
 * too (47 CFR 64.1200(f)(9) defines it as a form of it).
 */
const SATISFIES: Record<ConsentKind, readonly ConsentKind[]> = {
  express: ['express'],
  express_written: ['express_written', 'express'],
  whatsapp_opt_in: ['whatsapp_opt_in'],
}

export function kindSatisfies(given: ConsentKind, required: ConsentKind): boolean {
  return SATISFIES[given].includes(required)
}

/** Why a consent does not count at an instant, or undefined when it does. */
export function consentLapse(consent: ConsentOnFile, at: number): 'revoked' | 'expired' | 'not_yet' | undefined {
  if (consent.revokedAt !== null && consent.revokedAt <= at) return 'revoked'
  if (consent.expiresAt !== null && consent.expiresAt <= at) return 'expired'
  if (consent.capturedAt > at) return 'not_yet'
  return undefined
}

/** A campaign's compliance settings as stored (admin API field names); every field optional, defaults below. */
export interface ComplianceSettings {
  purpose?: Purpose
  /** What its attempts are about, for the caps per subject: campaigns of one subject count together. Default: its routing key. */
  subject?: string
  /** Whether its calls speak with an artificial voice (an AI agent, a recording). Default: true on the agent platforms, else false. */
  artificial_voice?: boolean
  /** The consent kinds, any one of which it requires on file, per channel. Default: by purpose (DEFAULT_CONSENT). */
  consent?: Partial<Record<Channel, ConsentKind[]>>
}

/** The purpose a campaign has when its settings name none: the service's campaigns before purposes were asked. */
export const DEFAULT_PURPOSE: Purpose = 'informational'

/**
 * What a campaign requires by default, by purpose and channel: marketing by
 * voice or text needs written consent (what the TCPA asks of a marketing call
 * by an artificial voice, the strictest of the shipped profiles; the FCC
 * holds a text to be a call), marketing on WhatsApp the person's opt-in; other purposes nothing beyond what the law
 * of the number's jurisdictions asks (the profiles).
 */
export const DEFAULT_CONSENT: Record<Purpose, Record<Channel, ConsentKind[]>> = {
  informational: { voice: [], whatsapp: [], sms: [] },
  transactional: { voice: [], whatsapp: [], sms: [] },
  healthcare: { voice: [], whatsapp: [], sms: [] },
  marketing: { voice: ['express_written'], whatsapp: ['whatsapp_opt_in'], sms: ['express_written'] },
}

const ARTIFICIAL_VOICE_PROVIDERS: ReadonlySet<Provider> = new Set(['vapi', 'retell', 'elevenlabs'])

/** A campaign's compliance settings with every default applied. */
export interface Compliance {
  purpose: Purpose
  subject: string
  artificialVoice: boolean
  /** Kinds any one of which its channel requires; empty: none. */
  requiredConsent: ConsentKind[]
}

export function complianceOf(settings: ComplianceSettings | null | undefined, campaign: { routingKey: string; channel: Channel; provider: Provider }): Compliance {
  const purpose = settings?.purpose ?? DEFAULT_PURPOSE
  return {
    purpose,
    subject: settings?.subject ?? campaign.routingKey,
    artificialVoice: campaign.channel === 'voice' && (settings?.artificial_voice ?? ARTIFICIAL_VOICE_PROVIDERS.has(campaign.provider)),
    requiredConsent: settings?.consent?.[campaign.channel] ?? DEFAULT_CONSENT[purpose][campaign.channel],
  }
}

export const isPurpose = (value: string): value is Purpose => (PURPOSES as readonly string[]).includes(value)
