/**
 * The decision before each attempt (domain/contactability.ts) as a dispatch
 * batch makes it: what the batch's due tasks need beyond themselves is read
 * at once (the registries that list their numbers, the consents of the
 * numbers that need one, and, locked, the past attempts of the numbers a
 * law's cap binds), each task is decided in memory
 * (the batch's own attempts counted as they are taken), and the attempts
 * begun under a cap are written back before the batch commits. Two
 * dispatchers wanting one capped number wait for each other on its row, so
 * that they never both take its last place.
 *
 * Cost: for a batch whose attempts need no consent and no cap and no
 * registry covers (an informational campaign, a number whose law says
 * nothing of it), no statement at all; the decision itself is a few lookups
 * per task.
 */
import type { CallingLawProfile, Jurisdiction, Purpose } from '../domain/callingLaw.ts'
import { type Compliance, complianceOf, type ConsentOnFile } from '../domain/consent.ts'
import {
  contactabilityInput,
  type Decision,
  decideContactability,
  decisionNeeds,
  longestCapHours,
  type PastAttempt,
  type RegistryListing,
} from '../domain/contactability.ts'
import { jurisdictionsOfNumber } from '../domain/jurisdictions.ts'
import { scheduleZones } from '../domain/schedule.ts'
import { consentsOfNumbers } from '../store/consents.ts'
import type { Queryable } from '../store/database.ts'
import { lockLawAttempts, saveLawAttempts } from '../store/lawAttempts.ts'
import { numberKey } from '../store/numberAttempts.ts'
import { phoneDigestOfHash, phoneHash } from '../store/phoneHashKey.ts'
import { listedIn, type Registry, registryDigestOfHash } from '../store/registries.ts'
import type { DueTask } from '../store/tasks.ts'
import type { LawInForce } from './callingLaw.ts'

/** What the decision of one task reads of its campaign and number. */
interface TaskNature {
  compliance: Compliance
  jurisdictions: Jurisdiction[]
  needs: { consents: boolean; capHours: number | null }
  /** The registries that list its number, of those that cover its purpose for its organization. */
  listings: RegistryListing[]
  /** Its number's keyed digests, of one hash (store/phoneHashKey.ts). */
  digests: NumberDigests
}

export class LawChecks {
  readonly #profiles: readonly CallingLawProfile[]
  readonly #natures: Map<string, TaskNature>
  readonly #consents: Map<string, ConsentOnFile[]>
  /** Each capped number's remembered attempts as read, then with the batch's own. */
  readonly #attempts: Map<string, PastAttempt[]>
  readonly #phoneHashKey: Buffer

  private constructor(
    profiles: readonly CallingLawProfile[],
    natures: Map<string, TaskNature>,
    consents: Map<string, ConsentOnFile[]>,
    attempts: Map<string, PastAttempt[]>,
    phoneHashKey: Buffer,
  ) {
    this.#profiles = profiles
    this.#natures = natures
    this.#consents = consents
    this.#attempts = attempts
    this.#phoneHashKey = phoneHashKey
  }

  /** Reads what the due tasks' decisions need (none of the suppressed ones, which start nothing). */
  static async lock(tx: Queryable, phoneHashKey: Buffer, law: LawInForce, due: readonly DueTask[], now: number): Promise<LawChecks> {
    const { profiles } = law
    const natures = new Map<string, TaskNature>()
    const open = due.filter((task) => !task.suppressed)
    for (const task of open) {
      const compliance = complianceOf(task.campaign.compliance, task.campaign)
      const jurisdictions = jurisdictionsOfNumber(task.contact.phone)
      const needs = decisionNeeds({ profiles, jurisdictions, purpose: compliance.purpose, channel: task.campaign.channel, artificialVoice: compliance.artificialVoice }, compliance.requiredConsent, now)
      natures.set(task.id, { compliance, jurisdictions, needs, listings: [], digests: numberDigests(phoneHashKey, task.contact.phone) })
    }
    const listings = await registryListings(
      tx,
      law.registries,
      open.map((task) => {
        const nature = natures.get(task.id)!
        return { orgId: task.orgId, purpose: nature.compliance.purpose, digest: nature.digests.registry }
      }),
    )
    open.forEach((task, index) => (natures.get(task.id)!.listings = listings[index]!))
    // A number a registry lists needs its consents too: one that overrides the registry may be on file.
    const tasksNeeding = (need: (nature: TaskNature) => boolean) => open.filter((task) => need(natures.get(task.id)!))
    const consents = await consentsOfNumbers(
      tx,
      tasksNeeding((nature) => nature.needs.consents || nature.listings.length > 0).map((task) => ({ ...numberOf(task), digest: natures.get(task.id)!.digests.consent })),
    )
    const attempts = await lockLawAttempts(tx, phoneHashKey, tasksNeeding((nature) => nature.needs.capHours !== null).map(numberOf), now)
    return new LawChecks(profiles, natures, consents, attempts, phoneHashKey)
  }

  /** The decision for the task's next attempt at `now`. */
  decide(task: DueTask, now: number): Decision {
    const nature = this.#natures.get(task.id)!
    const key = numberKey(numberOf(task))
    return decideContactability(
      contactabilityInput(nature.compliance, {
        // A suppressed task completes opted_out before it is decided.
        suppressed: task.suppressed,
        channel: task.campaign.channel,
        jurisdictions: nature.jurisdictions,
        zones: task.timezones,
        profiles: this.#profiles,
        campaignWindow: { schedule: task.campaign.schedule, zones: scheduleZones(task.campaign.schedule, task.timezones) },
        consents: this.#consents.get(key) ?? [],
        registries: nature.listings,
        pastAttempts: this.#attempts.get(key) ?? [],
        until: task.expiresAt,
      }),
      now,
    )
  }

  /** Counts an attempt the batch is about to begin for the task, under the caps that bind it. */
  take(task: DueTask, now: number): void {
    const nature = this.#natures.get(task.id)!
    if (nature.needs.capHours === null) return
    const key = numberKey(numberOf(task))
    this.#attempts.set(key, [...(this.#attempts.get(key) ?? []), { at: now, subject: nature.compliance.subject }])
  }

  /** Writes the capped numbers' attempts, with those the batch began (the tasks taken but not begun left out). */
  async record(tx: Queryable, taken: readonly DueTask[], begun: ReadonlySet<string>, now: number): Promise<void> {
    const notBegun = new Set(taken.filter((task) => !begun.has(task.id)).map((task) => task.id))
    const numbers = new Map<string, { orgId: string; phone: string; attempts: PastAttempt[]; keepHours: number }>()
    for (const task of taken) {
      const nature = this.#natures.get(task.id)!
      if (nature.needs.capHours === null) continue
      const key = numberKey(numberOf(task))
      // As long as any cap in force looks back, not only those of this batch: another campaign's may look further.
      const entry = numbers.get(key) ?? { ...numberOf(task), attempts: this.#attempts.get(key) ?? [], keepHours: longestCapHours(this.#profiles) }
      // An attempt taken but not begun (its number suppressed meanwhile) was never made.
      if (notBegun.has(task.id)) entry.attempts = withoutOneAt(entry.attempts, now, nature.compliance.subject)
      numbers.set(key, entry)
    }
    if (numbers.size > 0) await saveLawAttempts(tx, this.#phoneHashKey, [...numbers.values()], now)
  }
}

const numberOf = (task: DueTask) => ({ orgId: task.orgId, phone: task.contact.phone })

function withoutOneAt(attempts: PastAttempt[], at: number, subject: string): PastAttempt[] {
  const index = attempts.findIndex((attempt) => attempt.at === at && attempt.subject === subject)
  return index === -1 ? attempts : [...attempts.slice(0, index), ...attempts.slice(index + 1)]
}

/** A number's keyed digests: a consent's and a suppression's, and a registry's. */
export interface NumberDigests {
  consent: string
  registry: bigint
}

/** Both of a number's digests, of one hash: about 1.5 µs of the worker's a number. */
export function numberDigests(phoneHashKey: Buffer, phone: string): NumberDigests {
  const hash = phoneHash(phoneHashKey, phone)
  return { consent: phoneDigestOfHash(hash), registry: registryDigestOfHash(hash) }
}

/**
 * The registries that list each number (by its registry digest), of those
 * that cover its purpose for its organization (the service's own and the
 * organization's), in the order asked: one statement for them all, and none
 * when no registry covers any of them.
 */
export async function registryListings(
  db: Queryable,
  registries: readonly Registry[],
  numbers: readonly { orgId: string; purpose: Purpose; digest: bigint }[],
): Promise<RegistryListing[][]> {
  const covering = numbers.map((number) => registries.filter((registry) => (registry.orgId === null || registry.orgId === number.orgId) && registry.purposes.includes(number.purpose)))
  if (covering.every((each) => each.length === 0)) return numbers.map(() => [])
  const generations = [...new Set(covering.flat().map((registry) => registry.generation))]
  const listed = await listedIn(db, generations, numbers.filter((_, index) => covering[index]!.length > 0).map((number) => number.digest))
  return numbers.map((number, index) => {
    const inGenerations = new Set(listed.get(String(number.digest)) ?? [])
    return covering[index]!.filter((registry) => inGenerations.has(registry.generation)).map((registry) => ({ id: registry.id, name: registry.name, purposes: registry.purposes, overriddenBy: registry.overriddenBy }))
  })
}
