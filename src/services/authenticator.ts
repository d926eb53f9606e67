/**
 * Who is calling: the operator, an organization (through one of its API
 * keys), the scraper (Prometheus, with the metrics token, which reads
 * /metrics and nothing else), or nobody we know.
 *
 * Keys are looked up once and then kept in memory, so the trigger path does
 * not read the database to authenticate. A key revoked by another process is
 * still in this cache; that is why a principal found here is provisional until
 * {@link Authenticator.confirm} or the trigger commit (which records a trigger
 * only for an unrevoked key) has checked it against the database.
 */
import { ApiError } from '../domain/errors.ts'
import type { Scope } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { findLiveApiKeyByPrefix, isApiKeyLive } from '../store/apiKeys.ts'
import { apiKeyPrefix, hashSecret, sameHash } from './credentials.ts'

export type Principal =
  | { kind: 'operator' }
  | { kind: 'scraper' }
  | { kind: 'organization'; keyId: string; orgId: string; scopes: readonly Scope[] }

export type OrganizationPrincipal = Extract<Principal, { kind: 'organization' }>

/** The answer to a request whose credential is missing, unknown or revoked. */
export const unauthorized = () => new ApiError('unauthorized', 'Send a valid API key as "Authorization: Bearer <API_KEY>".')

interface CachedKey {
  keyId: string
  orgId: string
  scopes: readonly Scope[]
  hash: Buffer
}

const MAX_CACHED_KEYS = 10_000

export class Authenticator {
  readonly #db: Database
  readonly #operatorTokenHash: Buffer
  readonly #metricsTokenHash: Buffer | undefined
  /** Keys by prefix, oldest first. */
  readonly #keys = new Map<string, CachedKey>()

  /** Without a metrics token, only the operator token reads /metrics. */
  constructor(db: Database, tokens: { operatorToken: string; metricsToken?: string | undefined }) {
    this.#db = db
    this.#operatorTokenHash = hashSecret(tokens.operatorToken)
    this.#metricsTokenHash = tokens.metricsToken === undefined ? undefined : hashSecret(tokens.metricsToken)
  }

  /** The principal behind an `Authorization` header, or undefined when it names none. */
  async identify(authorization: string | undefined): Promise<Principal | undefined> {
    const token = bearerToken(authorization)
    if (token === undefined) return undefined
    const presentedHash = hashSecret(token)
    if (sameHash(presentedHash, this.#operatorTokenHash)) return { kind: 'operator' }
    if (this.#metricsTokenHash !== undefined && sameHash(presentedHash, this.#metricsTokenHash)) return { kind: 'scraper' }
    const prefix = apiKeyPrefix(token)
    if (prefix === undefined) return undefined
    const key = this.#keys.get(prefix) ?? (await this.#load(prefix))
    if (key === undefined || !sameHash(presentedHash, key.hash)) return undefined
    return { kind: 'organization', keyId: key.keyId, orgId: key.orgId, scopes: key.scopes }
  }

  /** Whether the principal's key is still unrevoked, asked of the database. */
  async confirm(principal: Principal): Promise<boolean> {
    if (principal.kind !== 'organization') return true
    const live = await isApiKeyLive(this.#db, principal.keyId)
    if (!live) this.forget(principal.keyId)
    return live
  }

  /** Drops a key from the cache, as soon as this process learns it is revoked. */
  forget(keyId: string): void {
    for (const [prefix, key] of this.#keys) {
      if (key.keyId === keyId) this.#keys.delete(prefix)
    }
  }

  async #load(prefix: string): Promise<CachedKey | undefined> {
    const found = await findLiveApiKeyByPrefix(this.#db, prefix)
    if (found === undefined) return undefined
    const key = { keyId: found.key.id, orgId: found.key.orgId, scopes: found.key.scopes, hash: found.keyHash }
    if (this.#keys.size >= MAX_CACHED_KEYS) this.#keys.delete(this.#keys.keys().next().value!)
    this.#keys.set(prefix, key)
    return key
  }
}

function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined
  const match = /^Bearer +(\S+) *$/i.exec(authorization)
  return match?.[1]
}
