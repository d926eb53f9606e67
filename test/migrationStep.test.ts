/**
 * Migrations as a release step: `cli migrate` applies what is missing and says
 * so; a process started with MIGRATE_ON_START=false on a database behind it
 * refuses with one line and starts once the step has run; and processes
 * started together on a new PostgreSQL database all start, one applying each
 * migration while the others wait for it.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { loadMigrations } from '../src/store/migrate.ts'
import { cliArguments, ROOT, runCli } from './support/cli.ts'
import { freePort, freshDatabase, onPostgres, OPERATOR_TOKEN, PHONE_HASH_KEY, type TestDatabase } from './support/service.ts'


let dataDir: string
/** A database never migrated (PostgreSQL); on PGlite the empty DATA_DIR is one. */
let database: TestDatabase | undefined

before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'migration-step-'))
  if (onPostgres) database = await freshDatabase({ migrated: false })
})
after(async () => {
  await database?.drop()
  await rm(dataDir, { recursive: true, force: true })
})

function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'warn', OPERATOR_TOKEN, PHONE_HASH_KEY, ...database?.environment, ...extra }
}

const cli = (args: string[], extra: Record<string, string> = {}) => runCli(args, environment(extra))

/** `serve` on a port of its own, once /readyz answers; stopped by the returned function. */
async function served(extra: Record<string, string> = {}): Promise<() => Promise<void>> {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, cliArguments('serve'), {
    cwd: ROOT,
    env: environment({ PORT: String(port), HOST: '127.0.0.1', ...extra }),
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  // A real wait: a process starting, bounded generously.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`serve exited: ${output}`)
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.ok, () => false)
    if (ready) break
    if (attempt > 600) {
      // Not left running: it would hold this test file open after the failure.
      child.kill('SIGKILL')
      throw new Error(`serve did not start: ${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return () =>
    new Promise((resolve) => {
      child.on('close', () => resolve())
      child.kill('SIGTERM')
    })
}

test('with MIGRATE_ON_START=false a process refuses a schema behind it with one line; `cli migrate` is the step, and says what it did', async () => {
  const migrations = await loadMigrations()
  const refused = await cli(['serve'], { MIGRATE_ON_START: 'false' })
  assert.equal(refused.code, 1)
  assert.match(
    refused.stderr,
    new RegExp(`^the database lacks ${migrations.length} migrations this version needs \\(001_initial, .*\\): run \`cli migrate\` first, the release step, or start with MIGRATE_ON_START=true\\n$`),
  )

  const step = await cli(['migrate'])
  assert.equal(step.code, 0, step.stderr)
  assert.equal(step.stdout, `applied migrations ${migrations.map((migration) => migration.version).join(', ')}\n`)
  const again = await cli(['migrate'])
  assert.equal(again.stdout, 'the schema is up to date\n')

  const stop = await served({ MIGRATE_ON_START: 'false' })
  await stop()
})

test('two processes started at once on a new database both start: one applies each migration, the other waits for it', { skip: onPostgres ? false : 'needs PostgreSQL: the embedded database takes one process' }, async () => {
  const fresh = await freshDatabase({ migrated: false })
  const previous = database
  database = fresh
  try {
    const stops = await Promise.all([served(), served()])
    await Promise.all(stops.map((stop) => stop()))
    const versions = await fresh.db.query<{ version: number; times: number }>('SELECT version, count(*)::int AS times FROM schema_migrations GROUP BY version ORDER BY version')
    assert.deepEqual(versions, (await loadMigrations()).map((migration) => ({ version: migration.version, times: 1 })))
  } finally {
    database = previous
    await fresh.drop()
  }
})
