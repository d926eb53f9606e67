/** GET /api/v2/triggers/{id}: the trigger as recorded, only to its own organization. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, json, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>

const get = (id: string, key = org.key) => service.app.inject({ method: 'GET', url: `/api/v2/triggers/${id}`, headers: bearer(key) })

before(async () => {
  service = await startService()
  org = await seedOrganization(service.app)
})
after(() => service.close())

test('returns the trigger as recorded, normalized, with its task', async () => {
  const created = json(
    await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: {
        campaign: 'screening',
        ids: [{ source: ' ATS ', type: 'Candidate_ID', value: '  AbC-001 ' }],
        contact: { first_name: 'Zoë', phone: '+39 06 6982 0000', language: 'pt-br' },
        context: JSON.parse('{"shift": "night", "__proto__": {"kept": true}}'),
        test_mode: 'yes',
      },
    }),
  ).data
  const response = await get(created.id)
  assert.equal(response.statusCode, 200)
  const { data, metadata } = json(response)
  assert.match(metadata.request_id, /^req_/)
  assert.deepEqual(data, {
    id: created.id,
    task_id: created.task_id,
    status: 'accepted',
    campaign: 'screening',
    channel: 'voice',
    ids: [{ source: 'ats', type: 'candidate_id', value: '  AbC-001 ' }],
    contact: { first_name: 'Zoë', phone: '+390669820000', language: 'pt-BR' },
    context: JSON.parse('{"shift": "night", "__proto__": {"kept": true}}'),
    test_mode: true,
    not_before: null,
    expires_at: null,
    created_at: created.created_at,
    task: { id: created.task_id, status: 'pending' },
  })
})

test("another organization's trigger is 404, never 403", async () => {
  const mine = json(
    await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: 'screening', contact: { phone: '+14155552671' } },
    }),
  ).data
  const other = await seedOrganization(service.app)
  const response = await get(mine.id, other.key)
  assert.equal(response.statusCode, 404)
  assert.equal(json(response).error.code, 'not_found')
})

test('an unknown or malformed id is 404', async () => {
  for (const id of ['trg_01m80rk8ebb477ctftmz1b740t', 'tsk_01m80rk8ebb477ctftmz1b740t', 'anything', "trg_'; DROP TABLE triggers"]) {
    const response = await get(encodeURIComponent(id))
    assert.equal(response.statusCode, 404, id)
    assert.equal(json(response).error.code, 'not_found')
  }
})
