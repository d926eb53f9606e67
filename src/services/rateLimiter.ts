/**
 * Each organization's rate limit, as this process applies it: tokens are
 * leased from the organization's bucket in the database (shared by every
 * process) a few at a time and spent from memory, so that a request the
 * limit lets through costs no round trip, and an organization sending at
 * its limit costs at most ten leases a second (domain/rateLimit.ts,
 * leaseChunk). A refusal is remembered until a token is due again, so that a
 * flood of refused requests reads nothing either.
 */
import { leaseChunk, msUntil, type RateLimitPolicy, refill } from '../domain/rateLimit.ts'
import type { Database } from '../store/database.ts'
import { leaseTokens } from '../store/rateBuckets.ts'

/** What the limit says of one request: let through or not, and what its answer tells the client. */
export interface Admission {
  allowed: boolean
  policy: RateLimitPolicy
  /** Tokens the organization has left, as this process last learned (an estimate, with several processes). */
  remaining: number
  /** When refused: how long until the request's tokens are there (ms). */
  waitMs: number
}

interface OrganizationState {
  policy: RateLimitPolicy
  /** Tokens leased and not yet spent. */
  stock: number
  /** The bucket as the last lease left it. */
  bucket: { tokens: number; at: number }
  /** Until when a request is refused without asking the bucket (epoch ms). */
  refusedUntil: number
  /** The lease under way, which requests that find no stock wait for. */
  leasing: Promise<void> | undefined
}

export class RateLimiter {
  readonly #db: Database
  readonly #defaults: RateLimitPolicy
  readonly #now: () => number
  readonly #organizations = new Map<string, OrganizationState>()

  constructor(db: Database, defaults: RateLimitPolicy, now: () => number) {
    this.#db = db
    this.#defaults = defaults
    this.#now = now
  }

  /** Takes `cost` tokens for a request of the organization: at once from what this process holds, else from the bucket. */
  admit(orgId: string, cost: number): Admission | Promise<Admission> {
    const state = this.#organizations.get(orgId)
    if (state === undefined || state.leasing !== undefined) return this.#admitLeasing(orgId, cost)
    return this.#fromStock(state, cost) ?? this.#admitLeasing(orgId, cost)
  }

  /** From the stock, or refused while a refusal holds; undefined when the bucket must be asked. */
  #fromStock(state: OrganizationState, cost: number): Admission | undefined {
    if (state.stock >= cost) {
      state.stock -= cost
      return { allowed: true, policy: state.policy, remaining: this.#remaining(state), waitMs: 0 }
    }
    const now = this.#now()
    if (now < state.refusedUntil) return { allowed: false, policy: state.policy, remaining: 0, waitMs: state.refusedUntil - now }
    return undefined
  }

  async #admitLeasing(orgId: string, cost: number): Promise<Admission> {
    for (;;) {
      const state = this.#organizations.get(orgId)
      if (state?.leasing !== undefined) {
        await state.leasing
        continue
      }
      const held = state === undefined ? undefined : this.#fromStock(state, cost)
      if (held !== undefined) return held
      return this.#lease(orgId, state, cost)
    }
  }

  async #lease(orgId: string, state: OrganizationState | undefined, cost: number): Promise<Admission> {
    const stock = state?.stock ?? 0
    let admission: Admission | undefined
    const leasing = (async () => {
      const now = this.#now()
      const need = Math.max(0, cost - stock)
      const leased = await leaseTokens(this.#db, orgId, this.#defaults, now, need, leaseChunk(state?.policy ?? this.#defaults))
      // An organization that no longer exists has no key left to call with; its request goes on to be refused for that.
      const policy = leased?.policy ?? this.#defaults
      const lease = leased?.lease ?? { granted: need, bucket: { tokens: 0, at: now }, waitMs: 0 }
      const next: OrganizationState = { policy, stock: stock + lease.granted, bucket: lease.bucket, refusedUntil: 0, leasing: undefined }
      if (lease.granted === 0 && need > 0) {
        // Refused without asking until a token is there (a smaller request may pass before: the bucket is asked).
        next.refusedUntil = now + msUntil(lease.bucket, policy, 1)
        admission = { allowed: false, policy, remaining: 0, waitMs: lease.waitMs }
      } else {
        next.stock -= cost
        admission = { allowed: true, policy, remaining: this.#remaining(next), waitMs: 0 }
      }
      this.#organizations.set(orgId, next)
    })()
    this.#organizations.set(orgId, { ...(state ?? { policy: this.#defaults, stock: 0, bucket: { tokens: 0, at: 0 }, refusedUntil: 0 }), leasing })
    try {
      await leasing
    } catch (error) {
      // The bucket could not be asked: this process's stock stays as it was, for the next request to try again.
      if (state === undefined) this.#organizations.delete(orgId)
      else this.#organizations.set(orgId, { ...state, leasing: undefined })
      throw error
    }
    return admission!
  }

  /** The stock, and the bucket as the last lease left it, refilled since. */
  #remaining(state: OrganizationState): number {
    return Math.min(state.policy.burst, state.stock + refill(state.bucket, state.policy, this.#now()).tokens)
  }
}
