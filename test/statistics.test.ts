/** Planner statistics where no autovacuum keeps them: PGlite, and servers run without it. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Database } from '../src/store/database.ts'
import { analyzeGrownTables, keepsOwnStatistics } from '../src/store/statistics.ts'
import { freshDatabase, onPostgres, type TestDatabase } from './support/service.ts'

let database: TestDatabase
let db: Database
before(async () => {
  database = await freshDatabase()
  db = database.db
})
after(() => database.drop())

const analyzed = async (table: string) =>
  (await db.query<{ reltuples: number }>(`SELECT reltuples::float8 AS reltuples FROM pg_class WHERE oid = $1::regclass`, [table]))[0]!.reltuples

test('a table grown since it was last analyzed is analyzed, once, and one that has not grown is left alone', async () => {
  await analyzeGrownTables(db)
  await db.exec(`
    INSERT INTO organizations (id, name, created_at) VALUES ('org_stats', 'Stats', now());
    INSERT INTO events (id, org_id, type, body, created_at)
    SELECT 'evt_stats_' || n, 'org_stats', 'task.completed', decode('00', 'hex') || convert_to(jsonb_build_object('n', n, 'padding', repeat('x', 200))::text, 'UTF8'), now()
    FROM generate_series(1, 2000) AS n;
  `)
  assert.deepEqual(await analyzeGrownTables(db), ['events'])
  assert.equal(await analyzed('events'), 2000)
  // With a tenth of the default target: at most 11 histogram bounds, rather than 101.
  const [bounds] = await db.query<{ count: number }>(
    `SELECT cardinality(histogram_bounds::text::text[]) AS count FROM pg_stats WHERE tablename = 'events' AND attname = 'id' AND schemaname = current_schema()`,
  )
  assert.equal(bounds!.count, 11)
  assert.deepEqual(await analyzeGrownTables(db), [])
})

test('the service analyzes its tables itself on PGlite, and on a server only when its autovacuum is off', async () => {
  if (!onPostgres) {
    assert.equal(await keepsOwnStatistics(db), true)
    return
  }
  const [setting] = await db.query<{ autovacuum: string }>('SHOW autovacuum')
  assert.equal(await keepsOwnStatistics(db), setting!.autovacuum === 'off')
})
