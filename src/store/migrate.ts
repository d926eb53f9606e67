/**
 * Numbered, append-only SQL migrations (`migrations/NNN_name.sql`), each
 * applied in its own transaction. A transaction's advisory lock (which a
 * transaction-mode pooler allows) makes processes that start together apply
 * each migration once: one applies it, the others wait for it and find it
 * done.
 */
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import type { Database } from './database.ts'

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url))
/** Arbitrary constant shared by every process of this service. */
const MIGRATION_LOCK_KEY = 7_361_902

export interface Migration {
  version: number
  name: string
  sql: string
}

export async function loadMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort()
  const migrations = await Promise.all(
    files.map(async (file) => {
      const match = /^(\d{3})_([a-z0-9_]+)\.sql$/.exec(file)
      if (!match) throw new Error(`migration file ${file} is not named NNN_name.sql`)
      return { version: Number(match[1]), name: match[2]!, sql: await readFile(MIGRATIONS_DIR + file, 'utf8') }
    }),
  )
  migrations.forEach((migration, index) => {
    if (index > 0 && migrations[index - 1]!.version === migration.version) {
      throw new Error(`two migrations have version ${migration.version}`)
    }
  })
  return migrations
}

/** Applies every migration not yet applied; returns the versions it applied. */
export async function migrate(db: Database): Promise<number[]> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
  })
  const applied: number[] = []
  for (const migration of await loadMigrations()) {
    const didApply = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
      const done = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version])
      if (done.length > 0) return false
      await tx.exec(migration.sql)
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name])
      return true
    })
    if (didApply) applied.push(migration.version)
  }
  return applied
}

/** The migrations this code has that the database has not applied, in order (every one on a database never migrated). */
export async function pendingMigrations(db: Database): Promise<Migration[]> {
  const [table] = await db.query<{ found: string | null }>(`SELECT to_regclass('schema_migrations')::text AS found`)
  const applied = new Set(
    table?.found == null ? [] : (await db.query<{ version: number }>('SELECT version FROM schema_migrations')).map((row) => row.version),
  )
  return (await loadMigrations()).filter((migration) => !applied.has(migration.version))
}

/** A process started with MIGRATE_ON_START=false on a database without every migration it needs. */
export class SchemaBehind extends Error {
  constructor(pending: readonly Migration[]) {
    const names = pending.map((migration) => `${String(migration.version).padStart(3, '0')}_${migration.name}`)
    super(
      `the database lacks ${pending.length === 1 ? 'migration' : `${pending.length} migrations`} this version needs (${names.join(', ')}): ` +
        'run `cli migrate` first, the release step, or start with MIGRATE_ON_START=true',
    )
    this.name = 'SchemaBehind'
  }
}

/** Migrates, or with `migrateOnStart` false only checks that an earlier step did (throws SchemaBehind). */
export async function prepareSchema(db: Database, migrateOnStart: boolean): Promise<void> {
  if (migrateOnStart) {
    await migrate(db)
    return
  }
  const pending = await pendingMigrations(db)
  if (pending.length > 0) throw new SchemaBehind(pending)
}
