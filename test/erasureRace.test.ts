/**
 * Erasure while the person's tasks are dispatched and settled by two
 * workers: no erasure answers 500 (a deadlock with a settlement is not the
 * client's problem), and nothing of any person erased is left. PostgreSQL
 * only: PGlite is one session, where no two transactions ever wait for each
 * other.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Database } from '../src/store/database.ts'
import { bearer, createCampaign, json, OPERATOR_TOKEN, onPostgres, startService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const PEOPLE = 200
const LANES = 20

test('200 erasures while two workers dispatch and settle the people\'s tasks: none answers 500, nothing of them is left', { skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL)' }, async () => {
  const service = await startService()
  const peer = await service.peer()
  try {
    const admin = bearer(OPERATOR_TOKEN)
    const orgId = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Clinic' } })).data.id
    const key = json(
      await service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${orgId}/api-keys`,
        headers: admin,
        payload: { name: 'scheduler', scopes: ['triggers:write', 'contacts:erase'] },
      }),
    ).data.key
    // Calls that end soon after they start, so that erasures meet them being settled.
    await createCampaign(service.app, orgId, { routing_key: 'reminder', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 5 } })
    await Promise.all([service.app.workers!.start(), peer.workers!.start()])

    const person = (n: number) => ({ id: `RACE-${n}`, firstName: `Racerwyn${n}q`, phone: `+4420794${String(60000 + n).padStart(5, '0')}` })
    const answers: number[] = []
    const lane = async (first: number) => {
      for (let n = first; n < PEOPLE; n += LANES) {
        const { id, firstName, phone } = person(n)
        const triggered = await service.app.inject({
          method: 'POST',
          url: '/api/v2/triggers',
          headers: { ...bearer(key), 'content-type': 'application/json' },
          payload: { campaign: 'reminder', ids: [{ source: 'ehr', type: 'patient', value: id }], contact: { first_name: firstName, phone } },
        })
        assert.equal(triggered.statusCode, 201, triggered.body)
        // Erased while its call is being started, made or settled.
        await new Promise((resolve) => setTimeout(resolve, n % 25))
        const erased = await service.app.inject({ method: 'POST', url: '/api/v2/contacts/erase', headers: bearer(key), payload: { id: { source: 'ehr', type: 'patient', value: id } } })
        answers.push(erased.statusCode)
      }
    }
    await Promise.all(Array.from({ length: LANES }, (_, first) => lane(first)))
    assert.deepEqual(
      answers.filter((status) => status !== 200),
      [],
    )
    assert.equal(answers.length, PEOPLE)

    // Once every call erased while it ran has been settled, nothing of anyone is left.
    for (let waited = 0; ; waited += 100) {
      const [running] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM interactions WHERE status <> 'finalized'`)
      if (running!.n === 0) break
      assert.ok(waited < 30_000, `${running!.n} calls still running`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    // Nor did a settlement meet an erasure in a circle of locks, and have to be tried again later.
    assert.deepEqual(
      service.logs.filter((line) => /"level":(40|50|60)/.test(line)),
      [],
    )
    const needles = Array.from({ length: PEOPLE }, (_, n) => [person(n).firstName, person(n).phone]).flat()
    assert.deepEqual(await tablesHoldingAny(service.db, needles), [])
  } finally {
    await service.close()
  }
})

/** Each table of the service's schema with a row that holds any of `needles` (as text, case ignored), with the needles found there. */
async function tablesHoldingAny(db: Database, needles: readonly string[]): Promise<string[]> {
  const tables = await db.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
  const patterns = needles.map((needle) => `%${needle}%`)
  const holding: string[] = []
  for (const { name } of tables) {
    const rows = await db.query<{ row: string }>(`SELECT r::text AS row FROM ${name} AS r WHERE r::text ILIKE ANY($1::text[])`, [patterns])
    for (const { row } of rows) holding.push(`${name}: ${needles.filter((needle) => row.toLowerCase().includes(needle.toLowerCase())).join(', ')}`)
  }
  return holding
}
