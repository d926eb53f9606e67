/**
 * The sources of each organization, kept in memory for a few seconds so that
 * checking a trigger's ids costs no database round trip; a change made in
 * this process is seen at once, one made in another within TTL_MS.
 */
import { type ErrorDetail, valueError } from '../domain/errors.ts'
import type { Source } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { listSources } from '../store/sources.ts'
import { SharedReads } from './sharedReads.ts'

const TTL_MS = 5_000
const MAX_CACHED_ORGANIZATIONS = 10_000

export class SourceDirectory {
  readonly #db: Database
  readonly #now: () => number
  readonly #cache = new Map<string, { sources: Map<string, Source>; expiresAt: number }>()
  readonly #reads = new SharedReads<Map<string, Source>>()
  /** Bumped by forget(), so that a read begun before it cannot put back what it forgot. */
  #generation = 0

  constructor(db: Database, now: () => number) {
    this.#db = db
    this.#now = now
  }

  /** The organization's sources by name; empty when it has none (then any source is accepted). */
  async sourcesOf(orgId: string): Promise<Map<string, Source>> {
    const cached = this.#cache.get(orgId)
    if (cached !== undefined && cached.expiresAt > this.#now()) return cached.sources
    return this.#read(orgId)
  }

  #read(orgId: string): Promise<Map<string, Source>> {
    return this.#reads.read(orgId, async () => {
      const generation = this.#generation
      const sources = new Map((await listSources(this.#db, orgId)).map((source) => [source.name, source]))
      if (generation === this.#generation) {
        if (this.#cache.size >= MAX_CACHED_ORGANIZATIONS) this.#cache.delete(this.#cache.keys().next().value!)
        this.#cache.set(orgId, { sources, expiresAt: this.#now() + TTL_MS })
      }
      return sources
    })
  }

  forget(orgId: string): void {
    this.#generation++
    this.#cache.delete(orgId)
    this.#reads.forget(orgId)
  }
}

/**
 * A trigger's ids and context checked against its organization's sources:
 * every id's source must be one of them and its type one the source allows,
 * and the context must carry every key its sources require. `ids` as
 * normalized (source and type lowercased), each with its index in the body
 * and its type undefined when it cannot be read; `context` likewise.
 */
export function sourceProblems(
  sources: Map<string, Source>,
  ids: readonly { index: number; source: string; type: string | undefined }[],
  context: Record<string, unknown> | undefined,
): ErrorDetail[] {
  if (sources.size === 0) return []
  const errors: ErrorDetail[] = []
  const required = new Set<string>()
  ids.forEach(({ index, ...id }) => {
    const source = sources.get(id.source)
    if (source === undefined) {
      const known = [...sources.keys()].map((name) => `'${name}'`).join(', ')
      errors.push(valueError(['body', 'ids', index, 'source'], id.source, `source '${id.source}' is not one of this organization's sources: ${known}`))
      return
    }
    if (id.type !== undefined && !source.idTypes.includes(id.type)) {
      const allowed = source.idTypes.map((type) => `'${type}'`).join(', ')
      errors.push(valueError(['body', 'ids', index, 'type'], id.type, `source '${source.name}' allows the id types ${allowed}, not '${id.type}'`))
    }
    for (const key of source.requiredContext) required.add(key)
  })
  if (context === undefined) return errors
  for (const key of required) {
    if (!Object.hasOwn(context, key)) errors.push({ type: 'missing', loc: ['body', 'context', key], msg: 'Field required', input: context })
  }
  return errors
}
