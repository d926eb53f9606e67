/**
 * Calling-law profiles: what the law of one jurisdiction says of an outreach
 * attempt, as data (data/calling-law-profiles.json), each rule with its source
 * and the date it took effect. A starting point for the operator's counsel,
 * never the last word: operators add, override and disable rules.
 *
 * - jurisdiction: a country (ISO 3166-1 alpha-2), or one of its subdivisions
 *   (ISO 3166-2 code without the country, "FL" of US-FL). A number may be in
 *   several (domain/jurisdictions.ts); every candidate's profile applies, and
 *   the strictest wins, as a campaign's window holds in every candidate zone.
 * - purpose: why the organization contacts the person (a campaign setting).
 *   Telephone-solicitation laws bind marketing, not a clinic's reminder.
 * - rule kinds: `hours` (allowed local hours per weekday: outside them an
 *   attempt is deferred), `forbidden_dates` (named local holidays, computed
 *   per year: deferred), `cap` (attempts per number per rolling window and
 *   subject: deferred), `consent` (the consent kinds of which one must be on
 *   file: blocked without).
 */
import { readFileSync } from 'node:fs'
import type { ScheduleWindow } from './campaignSettings.ts'
import type { Channel } from './types.ts'

export const PURPOSES = ['informational', 'transactional', 'healthcare', 'marketing'] as const
export type Purpose = (typeof PURPOSES)[number]

/**
 * Kinds of consent a person gives. `express`: prior express consent (the
 * person gave the number for this purpose); `express_written`: prior express
 * written consent (a signed agreement, e-sign included, naming the seller and
 * the number: 47 CFR 64.1200(f)(9)); `whatsapp_opt_in`: an opt-in to
 * messages on WhatsApp from this business.
 */
export const CONSENT_KINDS = ['express', 'express_written', 'whatsapp_opt_in'] as const
export type ConsentKind = (typeof CONSENT_KINDS)[number]

/** Where a jurisdiction's law applies: a country, or one subdivision of it. */
export interface Jurisdiction {
  /** ISO 3166-1 alpha-2, upper case: "US", "CA", "GB", "FR", "DE". */
  country: string
  /** ISO 3166-2 subdivision code without the country, upper case: "FL", "ON"; absent for the country's own rules. */
  region?: string
}

/** Where a rule comes from. */
export interface RuleSource {
  /** The statute, regulation or regulator's decision: "47 CFR 64.1200(c)(1)", "Fla. Stat. § 501.059(8)(a)". */
  citation: string
  /** An official page of it (the legislature's, the regulator's, the official journal's). */
  url: string
}

/** A date that recurs every year: fixed, the nth weekday of a month, or a day relative to (Western) Easter Sunday. */
export type HolidayRule =
  | { name: string; month: number; day: number }
  /** nth: 1..5, or -1 for the last one of the month; weekday as in ScheduleWindow. */
  | { name: string; month: number; weekday: ScheduleWindow['days'][number]; nth: number }
  | { name: string; easter_offset: number }

interface RuleBase {
  /** Unique across all profiles: "<profile id>.<name>", e.g. "us-fl.hours". */
  id: string
  /** The purposes it binds. */
  purposes: Purpose[]
  /** The channels it binds. */
  channels: Channel[]
  /**
   * Binds only attempts of this nature: `artificial_voice` (an AI agent's or
   * a prerecorded voice: 47 CFR 64.1200(a)(1)-(3), the FCC's ruling of
   * 2024-02-08), absent for every attempt of its purposes and channels.
   */
  applies_to?: 'artificial_voice'
  source: RuleSource
  /** The date it took effect, "YYYY-MM-DD". */
  effective_from: string
  /** What a reader should know: an ambiguity, a disagreement between sources and which reading is applied. */
  note?: string
}

export type LawRule =
  /** Attempts only within these local windows (the called party's local time, in every candidate zone). */
  | (RuleBase & { kind: 'hours'; windows: ScheduleWindow[] })
  /** No attempt on these local dates. */
  | (RuleBase & { kind: 'forbidden_dates'; holidays: HolidayRule[] })
  /**
   * At most `max_attempts` attempts to one number in any `per_hours`
   * rolling hours, counted across the organization's campaigns of the same
   * subject (`scope: 'subject'`) or of any (`scope: 'any'`).
   */
  | (RuleBase & { kind: 'cap'; max_attempts: number; per_hours: number; scope: 'subject' | 'any' })
  /** One consent on file of one of these kinds, else the attempt is blocked. */
  | (RuleBase & { kind: 'consent'; consent_kinds: ConsentKind[] })

export type LawRuleKind = LawRule['kind']

export interface CallingLawProfile {
  /** "us-federal", "us-fl", "ca", "gb", "fr", "de". */
  id: string
  /** The version of this profile's rules, a date "YYYY-MM-DD": changes with any rule. */
  version: string
  name: string
  jurisdiction: Jurisdiction
  rules: LawRule[]
}

export interface CallingLawProfiles {
  /** What every reader must be told: a starting point for counsel. */
  disclaimer: string
  profiles: CallingLawProfile[]
}

let shipped: CallingLawProfiles | undefined

/** The profiles the service ships (data/calling-law-profiles.json), read on first use. */
export function shippedProfiles(): CallingLawProfiles {
  shipped ??= JSON.parse(readFileSync(new URL('./data/calling-law-profiles.json', import.meta.url), 'utf8')) as CallingLawProfiles
  return shipped
}

/** An operator's change to a profile: a rule added, or one of the same id replaced (`rule`), or a shipped rule disabled (`rule` null). */
export interface RuleOverride {
  ruleId: string
  profileId: string
  rule: LawRule | null
  reason: string
  updatedAt: string
}

/**
 * The profiles in force: the shipped ones with the operator's overrides
 * applied. A profile an override changed is versioned anew, its shipped
 * version and the instant of its latest override ("2026-12-01+20270115T093000Z"),
 * so that a decision names the rules as they were when it was made.
 */
export function profilesInForce(profiles: readonly CallingLawProfile[], overrides: readonly RuleOverride[]): CallingLawProfile[] {
  if (overrides.length === 0) return [...profiles]
  return profiles.map((profile) => {
    const mine = overrides.filter((override) => override.profileId === profile.id)
    if (mine.length === 0) return profile
    const byRule = new Map(mine.map((override) => [override.ruleId, override]))
    const kept = profile.rules.flatMap((rule) => {
      const override = byRule.get(rule.id)
      if (override === undefined) return [rule]
      return override.rule === null ? [] : [override.rule]
    })
    const added = mine.filter((override) => override.rule !== null && !profile.rules.some((rule) => rule.id === override.ruleId)).map((override) => override.rule!)
    const latest = mine.map((override) => override.updatedAt.replace(/[-:]|\.\d+/g, '')).sort().at(-1)!
    return { ...profile, version: `${profile.version}+${latest}`, rules: [...kept, ...added] }
  })
}
