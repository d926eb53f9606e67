/**
 * Numbered, append-only SQL migrations (`migrations/NNN_name.sql`), each
 * applied in its own transaction. An advisory lock makes processes that start
 * together apply each migration once.
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
