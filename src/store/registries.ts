/**
 * Do-not-call registries and their numbers (migration 042). A number is kept
 * as the first 8 bytes of its keyed digest, made here with the service's
 * phone hash key, so that a registry holds no number in the clear and one
 * lookup is one probe of the primary key.
 */
import type { ConsentKind, Purpose } from '../domain/callingLaw.ts'
import type { Database, Queryable } from './database.ts'
import { phoneHash } from './phoneHashKey.ts'
import { iso } from './rows.ts'

export interface Registry {
  id: string
  /** Null: the whole service's, for every organization. */
  orgId: string | null
  name: string
  purposes: Purpose[]
  overriddenBy: ConsentKind[]
  listDate: string
  generation: number
  numbers: number
  loadedAt: string
  createdAt: string
}

interface RegistryRow {
  id: string
  org_id: string | null
  name: string
  purposes: Purpose[]
  overridden_by: ConsentKind[]
  list_date: string
  generation: string
  numbers: string
  loaded_at: Date
  created_at: Date
}

const COLUMNS = 'id, org_id, name, purposes, overridden_by, list_date::text, generation, numbers, loaded_at, created_at'

const toRegistry = (row: RegistryRow): Registry => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  purposes: row.purposes,
  overriddenBy: row.overridden_by,
  listDate: row.list_date,
  generation: Number(row.generation),
  numbers: Number(row.numbers),
  loadedAt: iso(row.loaded_at),
  createdAt: iso(row.created_at),
})

/** A number's digest as a registry keeps it: the first 8 bytes of SHA-256(key, E.164) (phoneHash), a signed 64-bit integer. */
export const registryDigestOfHash = (hash: Buffer): bigint => hash.readBigInt64BE(0)

export const registryDigest = (phoneHashKey: Buffer, e164: string): bigint => registryDigestOfHash(phoneHash(phoneHashKey, e164))

export async function listRegistries(db: Queryable, orgId?: string | null): Promise<Registry[]> {
  const rows = await db.query<RegistryRow>(
    `SELECT ${COLUMNS} FROM registries WHERE $1::text IS NULL OR org_id = $1 OR org_id IS NULL ORDER BY coalesce(org_id, ''), name`,
    [orgId ?? null],
  )
  return rows.map(toRegistry)
}

export async function findRegistryByName(db: Queryable, orgId: string | null, name: string): Promise<Registry | undefined> {
  const rows = await db.query<RegistryRow>(`SELECT ${COLUMNS} FROM registries WHERE coalesce(org_id, '') = coalesce($1, '') AND name = $2`, [orgId, name])
  return rows[0] && toRegistry(rows[0])
}

export async function findRegistry(db: Queryable, id: string): Promise<Registry | undefined> {
  const rows = await db.query<RegistryRow>(`SELECT ${COLUMNS} FROM registries WHERE id = $1`, [id])
  return rows[0] && toRegistry(rows[0])
}

/** A new generation for a load, recorded as a load in progress (registry_loads) until it is put in force or given up. */
export async function beginGenerationLoad(db: Queryable, now: number): Promise<number> {
  const rows = await db.query<{ generation: string | number }>(
    `INSERT INTO registry_loads (generation, started_at) VALUES (nextval('registry_generations'), $1) RETURNING generation`,
    [new Date(now)],
  )
  return Number(rows[0]!.generation)
}

/** The load of a generation is over: put in force (in the same transaction) or given up. */
export async function endGenerationLoad(db: Queryable, generation: number): Promise<void> {
  await db.query(`DELETE FROM registry_loads WHERE generation = $1`, [generation])
}

/** Forgets the loads begun before `startedBefore`: taken for dead, their generations no longer held (see abandonedGenerations). */
export async function forgetLoadsBegunBefore(db: Queryable, startedBefore: number): Promise<void> {
  await db.query(`DELETE FROM registry_loads WHERE started_at < $1`, [new Date(startedBefore)])
}

/**
 * The generations with numbers that no registry names and no load in
 * progress holds: those of a load whose process was killed (once forgotten),
 * or of a replaced list whose deletion was cut short. The distinct
 * generations are read by skipping from one to the next along the primary
 * key: a probe each, however many numbers each holds.
 */
export async function abandonedGenerations(db: Queryable): Promise<number[]> {
  const rows = await db.query<{ generation: string | number }>(
    `WITH RECURSIVE held AS (
       SELECT (SELECT min(generation) FROM registry_numbers) AS generation
       UNION ALL
       SELECT (SELECT min(generation) FROM registry_numbers WHERE generation > held.generation) FROM held WHERE held.generation IS NOT NULL
     )
     SELECT generation FROM held
     WHERE generation IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM registries r WHERE r.generation = held.generation)
       AND NOT EXISTS (SELECT 1 FROM registry_loads l WHERE l.generation = held.generation)`,
  )
  return rows.map((row) => Number(row.generation))
}

/** Rows of COPY's text a chunk: 100,000 lines of about 30 bytes, so that no string of the load holds it all. */
const COPY_CHUNK_ROWS = 100_000

/** Copies a generation's digests (sorted, unique) in, in one COPY. */
export async function copyGenerationNumbers(db: Database, generation: number, digests: BigInt64Array): Promise<void> {
  if (digests.length === 0) return
  function* chunks() {
    for (let first = 0; first < digests.length; first += COPY_CHUNK_ROWS) {
      const lines: string[] = []
      for (let index = first; index < Math.min(first + COPY_CHUNK_ROWS, digests.length); index++) lines.push(`${generation}\t${digests[index]}\n`)
      yield lines.join('')
    }
  }
  await db.copyIn('registry_numbers (generation, digest)', chunks())
}

/**
 * Puts a loaded generation in force: the registry is created, or its numbers
 * swapped for the new generation's in this one statement. Answers the
 * registry and the generation it replaced (null when it is new).
 */
export async function putRegistry(
  tx: Queryable,
  registry: { id: string; orgId: string | null; name: string; purposes: Purpose[]; overriddenBy: ConsentKind[]; listDate: string; generation: number; numbers: number },
  now: number,
): Promise<{ registry: Registry; replaced: number | null }> {
  const before = await findRegistryByName(tx, registry.orgId, registry.name)
  const rows =
    before === undefined
      ? await tx.query<RegistryRow>(
          `INSERT INTO registries (id, org_id, name, purposes, overridden_by, list_date, generation, numbers, loaded_at, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
          [registry.id, registry.orgId, registry.name, registry.purposes, registry.overriddenBy, registry.listDate, registry.generation, registry.numbers, new Date(now)],
        )
      : await tx.query<RegistryRow>(
          `UPDATE registries SET purposes = $2, overridden_by = $3, list_date = $4, generation = $5, numbers = $6, loaded_at = $7
           WHERE id = $1 RETURNING ${COLUMNS}`,
          [before.id, registry.purposes, registry.overriddenBy, registry.listDate, registry.generation, registry.numbers, new Date(now)],
        )
  return { registry: toRegistry(rows[0]!), replaced: before?.generation ?? null }
}

export async function deleteRegistry(tx: Queryable, id: string): Promise<Registry | undefined> {
  const rows = await tx.query<RegistryRow>(`DELETE FROM registries WHERE id = $1 RETURNING ${COLUMNS}`, [id])
  return rows[0] && toRegistry(rows[0])
}

/** Numbers deleted per statement when a generation goes: about half a second's work, so that no transaction holds 10 million rows. */
export const REGISTRY_DELETE_BATCH = 50_000

/**
 * Deletes up to `limit` numbers of a generation no registry holds any more
 * (replaced by a reload, or of a load that failed); answers how many. In
 * batches: a 10-million-number generation is deleted without one
 * transaction holding every row.
 */
export async function deleteGenerationNumbers(db: Queryable, generation: number, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM registry_numbers WHERE generation = $1 AND digest IN (SELECT digest FROM registry_numbers WHERE generation = $1 ORDER BY digest LIMIT $2) RETURNING 1`,
    [generation, limit],
  )
  return rows.length
}

/**
 * Which of the numbers (digests) each registry generation lists: one
 * statement for a dispatch batch, a probe of the primary key per pair.
 * Answers, by digest (as text), the generations that list it.
 */
export async function listedIn(db: Queryable, generations: readonly number[], digests: readonly bigint[]): Promise<Map<string, number[]>> {
  const listed = new Map<string, number[]>()
  if (generations.length === 0 || digests.length === 0) return listed
  // A bigint comes as a string from pg and as a BigInt (or a number) from PGlite: keyed by its text either way.
  const rows = await db.query<{ generation: string | number | bigint; digest: string | bigint }>(
    `SELECT n.generation, n.digest FROM unnest($1::bigint[]) AS g(generation) CROSS JOIN unnest($2::bigint[]) AS d(digest)
     JOIN registry_numbers n ON n.generation = g.generation AND n.digest = d.digest`,
    [generations.map(String), [...new Set(digests.map(String))]],
  )
  for (const row of rows) listed.set(String(row.digest), [...(listed.get(String(row.digest)) ?? []), Number(row.generation)])
  return listed
}
