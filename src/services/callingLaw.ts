/**
 * The law in force, as the operator keeps it: the calling-law profiles (the
 * shipped ones with the operator's overrides) and the do-not-call registries
 * loaded. Read from the database at most once a second by each process, so
 * that every dispatcher (and the dry run) applies a change within a second
 * of it without a statement per batch; a change this process makes is seen
 * at once.
 */
import { type CallingLawProfile, profilesInForce, shippedProfiles } from '../domain/callingLaw.ts'
import type { Queryable } from '../store/database.ts'
import { listRuleOverrides } from '../store/callingLawOverrides.ts'
import { listRegistries, type Registry } from '../store/registries.ts'

const REFRESH_MS = 1_000

export interface LawInForce {
  profiles: CallingLawProfile[]
  registries: Registry[]
}

export class CallingLaw {
  readonly #now: () => number
  #inForce: LawInForce | undefined
  #readAt = -Infinity
  #reading: Promise<LawInForce> | undefined

  constructor(deps: { now: () => number }) {
    this.#now = deps.now
  }

  /** The profiles and registries in force, as of at most a second ago. */
  async current(db: Queryable): Promise<LawInForce> {
    if (this.#inForce !== undefined && this.#now() - this.#readAt < REFRESH_MS) return this.#inForce
    this.#reading ??= this.#read(db).finally(() => (this.#reading = undefined))
    return this.#reading
  }

  /** Forgets what was read: the next read sees a change this process just made. */
  changed(): void {
    this.#readAt = -Infinity
  }

  async #read(db: Queryable): Promise<LawInForce> {
    const at = this.#now()
    const [overrides, registries] = [await listRuleOverrides(db), await listRegistries(db)]
    this.#inForce = { profiles: profilesInForce(shippedProfiles().profiles, overrides), registries }
    this.#readAt = at
    return this.#inForce
  }
}
