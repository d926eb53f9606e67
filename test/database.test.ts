/** The database port: every statement is prepared, and its parameters arrive as given, on PGlite (where they are written into the statement as literals) as on PostgreSQL. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { openDatabase } from '../src/store/database.ts'
import { freshDatabase, poolMode, type TestDatabase } from './support/service.ts'

let database: TestDatabase

before(async () => {
  database = await freshDatabase()
})
after(() => database.drop())

const TEXTS = ['plain', "it's", 'a\\b', '$$', '$p$', '$p0$ and $p$', 'ends with $p', 'ends with $', "x'); DROP TABLE tasks; --", '', 'Ünïcødé ☎']

test('a statement gets back every text it is given, quotes and dollar signs included', async () => {
  const echo = 'SELECT $1::text AS value, $2::text AS other'
  for (const text of TEXTS) {
    const rows = await database.db.query<{ value: string; other: string }>(echo, [text, `${text}$p`])
    assert.deepEqual(rows, [{ value: text, other: `${text}$p` }])
  }
  // Prepared once, it still runs inside a transaction and after one that failed.
  await assert.rejects(
    database.db.transaction(async (tx) => {
      await tx.query(echo, ['in a transaction', 'x'])
      throw new Error('rolled back')
    }),
    /rolled back/,
  )
  assert.deepEqual(await database.db.query(echo, ['after', 'it']), [{ value: 'after', other: 'it' }])
})

test('arrays, dates, bytes, numbers, booleans, nulls and JSON arrive as given', async () => {
  const texts = [...TEXTS, 'a,b', '{braces}', '"quoted"', 'NULL', null, ' spaced ']
  const at = new Date('2026-03-29T01:30:00.123Z')
  const rows = await database.db.query<{
    texts: (string | null)[]
    count: number
    at: Date
    ats: Date[]
    ints: number[]
    flag: boolean
    flags: boolean[]
    missing: string | null
    document: unknown
    bytes: Uint8Array
  }>(
    `SELECT $1::text[] AS texts, cardinality($1::text[]) AS count, $2::timestamptz AS at, $3::timestamptz[] AS ats, $4::int[] AS ints,
            $5::boolean AS flag, $6::boolean[] AS flags, $7::text AS missing, $8::jsonb AS document,
            $9::bytea AS bytes`,
    [texts, at, [at, null], [1, -2, 3], true, [false, true], null, { text: "it's $p$", list: [1, null] }, Buffer.from([0, 39, 36, 255])],
  )
  assert.deepEqual(rows, [
    {
      texts,
      count: texts.length,
      at,
      ats: [at, null],
      ints: [1, -2, 3],
      flag: true,
      flags: [false, true],
      missing: null,
      document: { text: "it's $p$", list: [1, null] },
      bytes: rows[0]!.bytes,
    },
  ])
  assert.deepEqual([...rows[0]!.bytes], [0, 39, 36, 255])
  assert.deepEqual(await database.db.query('SELECT cardinality($1::text[]) AS count', [[]]), [{ count: 0 }])
})

test("every session on PostgreSQL runs without JIT, set on the session rather than in the startup packet (which PgBouncer refuses)", { skip: process.env.DATABASE_URL === undefined ? 'needs PostgreSQL (DATABASE_URL)' : false }, async () => {
  // As many transactions at once as the pool has connections, so that every one of them is opened and asked.
  const settings = await Promise.all(
    Array.from({ length: database.db.concurrency }, () =>
      database.db.transaction(async (tx) => {
        const [row] = await tx.query<{ jit: string; options: string; pid: number }>(
          `SELECT current_setting('jit') AS jit, coalesce((SELECT setting FROM pg_settings WHERE name = 'jit' AND source = 'client'), '') AS options, pg_backend_pid() AS pid,
                  pg_sleep(0.05)::text`,
        )
        return row!
      }),
    ),
  )
  // Behind a transaction-mode pooler the pooler sets it on each server connection it makes (.ci/pgbouncer's connect_query), and
  // transactions share them.
  if (poolMode === 'session') assert.equal(new Set(settings.map((row) => row.pid)).size, database.db.concurrency)
  for (const row of settings) {
    assert.equal(row.jit, 'off')
    assert.equal(row.options, '', 'jit is not set by the startup packet')
  }
})

test('behind a transaction-mode pooler statements go unnamed and nothing is listened to on it; LISTEN goes past it when a direct URL is given', { skip: process.env.DATABASE_URL === undefined ? 'needs PostgreSQL (DATABASE_URL)' : false }, async () => {
  const { databaseUrl } = database.connection!
  const pooled = await openDatabase({ databaseUrl, poolMode: 'transaction', dataDir: 'memory://' })
  try {
    assert.equal(pooled.notifications, 'polling')
    // Run twice on one connection: a named statement would be prepared on the first run and kept by the session.
    for (let run = 0; run < 2; run++) assert.deepEqual(await pooled.query('SELECT $1::int + 1 AS n', [run]), [{ n: run + 1 }])
    const prepared = await pooled.transaction((tx) => tx.query<{ named: number }>('SELECT count(*)::int AS named FROM pg_prepared_statements'))
    assert.deepEqual(prepared, [{ named: 0 }], 'no statement is prepared by name on the session')
  } finally {
    await pooled.close()
  }

  // The direct URL is where LISTEN goes: here the server itself.
  const direct = await openDatabase({ databaseUrl, poolMode: 'transaction', databaseDirectUrl: database.connection!.databaseDirectUrl ?? databaseUrl, dataDir: 'memory://' })
  let hear: (payload: string) => void = () => {}
  const heard = new Promise<string>((resolve) => (hear = resolve))
  const unlisten = await direct.listen('pool_mode_test', (payload) => hear(payload))
  try {
    assert.equal(direct.notifications, 'listening')
    await direct.query(`SELECT pg_notify('pool_mode_test', 'hello')`)
    assert.equal(await heard, 'hello')
  } finally {
    await unlisten()
    await direct.close()
  }
})
