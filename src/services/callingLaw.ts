/**
 * The calling-law profiles in force: the shipped ones with the operator's
 * overrides, read from the database at most once a second by each process,
 * so that every dispatcher (and the dry run) applies an override within a
 * second of its change without a statement per batch.
 */
import { type CallingLawProfile, profilesInForce, shippedProfiles } from '../domain/callingLaw.ts'
import type { Queryable } from '../store/database.ts'
import { listRuleOverrides } from '../store/callingLawOverrides.ts'

const REFRESH_MS = 1_000

export class CallingLaw {
  readonly #now: () => number
  #profiles: CallingLawProfile[] | undefined
  #readAt = -Infinity
  #reading: Promise<CallingLawProfile[]> | undefined

  constructor(deps: { now: () => number }) {
    this.#now = deps.now
  }

  /** The profiles in force, as of at most a second ago. */
  async profiles(db: Queryable): Promise<CallingLawProfile[]> {
    if (this.#profiles !== undefined && this.#now() - this.#readAt < REFRESH_MS) return this.#profiles
    this.#reading ??= this.#read(db).finally(() => (this.#reading = undefined))
    return this.#reading
  }

  /** Forgets what was read: the next read sees a change this process just made. */
  changed(): void {
    this.#readAt = -Infinity
  }

  async #read(db: Queryable): Promise<CallingLawProfile[]> {
    const at = this.#now()
    this.#profiles = profilesInForce(shippedProfiles().profiles, await listRuleOverrides(db))
    this.#readAt = at
    return this.#profiles
  }
}
