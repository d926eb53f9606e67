/**
 * What each embedded test database starts from: a tarball of a PGlite data
 * directory, bare or with every migration applied, made once and kept in
 * node_modules/.cache under a name that changes with everything its content
 * depends on (PGlite's version, the migrations, the code that applies them).
 * PGlite makes a new database by running initdb, 1.5 s on this machine, and
 * the migrations took 0.2 s more; loading the tarball takes 0.35 s, and a
 * suite opens 88 of them, most the first in their process.
 */
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { openDatabase } from '../../src/store/database.ts'
import { migrate } from '../../src/store/migrate.ts'
import { ROOT } from './cli.ts'

const CACHE_DIR = path.join(ROOT, 'node_modules', '.cache', 'conversation-trigger-service')
const starts = new Map<boolean, Promise<Blob>>()

/** The data directory an embedded database of this run starts as: migrated, or as initdb leaves it. */
export function embeddedStart(migrated: boolean): Promise<Blob> {
  let start = starts.get(migrated)
  if (start === undefined) {
    start = cachedOrMade(migrated)
    starts.set(migrated, start)
  }
  return start
}

async function cachedOrMade(migrated: boolean): Promise<Blob> {
  const file = path.join(CACHE_DIR, `pglite-${migrated ? 'migrated' : 'bare'}-${await contentKey()}.tar`)
  try {
    return new Blob([await readFile(file)])
  } catch {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: 'memory://' })
    try {
      if (migrated) await migrate(db)
      const tarball = await db.dumpDataDir!()
      // Written beside and renamed, so that a test process beside this one reads a whole file or none.
      await mkdir(CACHE_DIR, { recursive: true })
      const partial = `${file}.${process.pid}`
      await writeFile(partial, Buffer.from(await tarball.arrayBuffer()))
      await rename(partial, file)
      return tarball
    } finally {
      await db.close()
    }
  }
}

async function contentKey(): Promise<string> {
  const hash = createHash('sha256')
  hash.update(await readFile(path.join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json')))
  hash.update(await readFile(path.join(ROOT, 'src', 'store', 'migrate.ts')))
  const migrations = path.join(ROOT, 'src', 'store', 'migrations')
  for (const name of (await readdir(migrations)).sort()) hash.update(name).update(await readFile(path.join(migrations, name)))
  return hash.digest('hex').slice(0, 16)
}
