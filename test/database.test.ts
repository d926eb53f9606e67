/** The database port: a prepared statement takes any text, on PGlite (where it is written into the statement) as on PostgreSQL. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { freshDatabase, type TestDatabase } from './support/service.ts'

let database: TestDatabase

before(async () => {
  database = await freshDatabase()
})
after(() => database.drop())

test('a prepared statement gets back every text it is given, quotes and dollar signs included', async () => {
  const echo = { name: 'echo_text', text: 'SELECT $1::text AS value, $2::text AS other' }
  const texts = ['plain', "it's", 'a\\b', '$$', '$p$', '$p0$ and $p$', 'ends with $p', 'ends with $', "x'); DROP TABLE tasks; --", '', 'Ünïcødé ☎']
  for (const text of texts) {
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
