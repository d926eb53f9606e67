/**
 * Loading a do-not-call registry (the operator's: the command line and the
 * admin API): its file read a line at a time, each number's digest made,
 * sorted and made unique, copied in as a new generation by bulk COPY, then
 * put in force in one statement, so that a reload replaces the list
 * atomically: every lookup sees the old numbers or the new, all of them. The
 * generation replaced is deleted afterwards, in batches. Each load and
 * deletion is recorded in the audit log.
 */
import type { Actor } from '../domain/audit.ts'
import type { ConsentKind, Purpose } from '../domain/callingLaw.ts'
import { ApiError } from '../domain/errors.ts'
import { newId } from '../domain/ids.ts'
import { type NationalPlan, registryLine } from '../domain/registryFile.ts'
import type { Database } from '../store/database.ts'
import { findOrganization } from '../store/organizations.ts'
import {
  beginGenerationLoad,
  copyGenerationNumbers,
  deleteGenerationNumbers,
  deleteRegistry,
  endGenerationLoad,
  findRegistry,
  putRegistry,
  REGISTRY_DELETE_BATCH,
  type Registry,
  registryDigest,
} from '../store/registries.ts'
import { audited } from './auditTrail.ts'
import type { CallingLaw } from './callingLaw.ts'

export interface RegistryOperations {
  db: Database
  now: () => number
  phoneHashKey: Buffer
  /** Told of each change, so that this process's next decision sees it at once. */
  law: CallingLaw
}

export interface RegistryLoad {
  /** Null: the whole service's registry, for every organization. */
  orgId: string | null
  name: string
  purposes: Purpose[]
  overriddenBy: ConsentKind[]
  /** The list's own date, YYYY-MM-DD. */
  listDate: string
  /** National numbers of the file are of this plan; without one, only E.164 lines are numbers. */
  plan?: NationalPlan
  lines: AsyncIterable<string> | Iterable<string>
}

export interface LoadReport {
  registry: Registry
  /** Lines read that were numbers, and of them the numbers kept (each once). */
  numbersRead: number
  /** Lines refused: neither a number, nor empty, nor a comment. The first few, with their line number. */
  refused: number
  refusedSamples: { line: number; text: string }[]
  /** The generation this load replaced, whose numbers were deleted; null for a new registry. */
  replacedGeneration: number | null
  seconds: number
}

const SAMPLES = 5

export async function loadRegistry(ops: RegistryOperations, actor: Actor, load: RegistryLoad): Promise<LoadReport> {
  const started = performance.now()
  if (load.orgId !== null && (await findOrganization(ops.db, load.orgId)) === undefined) throw new ApiError('not_found', `No organization ${load.orgId} exists.`)
  let digests = new BigInt64Array(1 << 16)
  let count = 0
  let refused = 0
  const refusedSamples: { line: number; text: string }[] = []
  let lineNumber = 0
  for await (const line of load.lines) {
    lineNumber++
    const read = registryLine(line, load.plan)
    if (read.kind === 'none') continue
    if (read.kind === 'refused') {
      refused++
      if (refusedSamples.length < SAMPLES) refusedSamples.push({ line: lineNumber, text: line.slice(0, 80) })
      continue
    }
    if (count === digests.length) {
      const grown = new BigInt64Array(digests.length * 2)
      grown.set(digests)
      digests = grown
    }
    digests[count++] = registryDigest(ops.phoneHashKey, read.e164)
  }
  const sorted = digests.subarray(0, count).sort()
  // Sorted: a number listed twice is two neighbours.
  let unique = 0
  for (let index = 0; index < sorted.length; index++) if (index === 0 || sorted[index] !== sorted[index - 1]) sorted[unique++] = sorted[index]!
  const generation = await beginGenerationLoad(ops.db, ops.now())
  try {
    await copyGenerationNumbers(ops.db, generation, sorted.subarray(0, unique))
  } catch (error) {
    // Should this fail too, the history sweep deletes the numbers a day on (store/registries.ts abandonedGenerations).
    await deleteGeneration(ops.db, generation)
      .then(() => endGenerationLoad(ops.db, generation))
      .catch(() => {})
    throw error
  }
  const put = await audited(ops, actor, async (tx) => {
    await endGenerationLoad(tx, generation)
    const result = await putRegistry(tx, { id: newId('registry', ops.now()), ...load, generation, numbers: unique }, ops.now())
    const details = { name: load.name, purposes: load.purposes, overridden_by: load.overriddenBy, list_date: load.listDate, numbers: unique, refused }
    return { result, audit: { orgId: load.orgId, action: 'registry.loaded', target: result.registry.id, details } }
  })
  ops.law.changed()
  if (put.replaced !== null) await deleteGeneration(ops.db, put.replaced)
  return { registry: put.registry, numbersRead: count, refused, refusedSamples, replacedGeneration: put.replaced, seconds: (performance.now() - started) / 1000 }
}

/** Removes a registry and its numbers. */
export async function removeRegistry(ops: RegistryOperations, actor: Actor, id: string): Promise<Registry> {
  const removed = await audited(ops, actor, async (tx) => {
    const registry = await deleteRegistry(tx, id)
    if (registry === undefined) throw new ApiError('not_found', `No registry ${id} exists.`)
    return { result: registry, audit: { orgId: registry.orgId, action: 'registry.deleted', target: id, details: { name: registry.name, numbers: registry.numbers } } }
  })
  ops.law.changed()
  await deleteGeneration(ops.db, removed.generation)
  return removed
}

export async function requireRegistry(ops: RegistryOperations, id: string): Promise<Registry> {
  const registry = await findRegistry(ops.db, id)
  if (registry === undefined) throw new ApiError('not_found', `No registry ${id} exists.`)
  return registry
}

async function deleteGeneration(db: Database, generation: number): Promise<void> {
  while ((await deleteGenerationNumbers(db, generation, REGISTRY_DELETE_BATCH)) > 0);
}
