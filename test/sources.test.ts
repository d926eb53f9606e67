/** Sources: an organization's rules for the ids and context its triggers carry. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const admin = bearer(OPERATOR_TOKEN)
let service: TestService

before(async () => {
  service = await startService()
})
after(() => service.close())

const post = (key: string, payload: object) =>
  service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { ...bearer(key), 'content-type': 'application/json' }, payload })

async function withSources() {
  const org = await seedOrganization(service.app)
  for (const source of [
    { name: 'Greenhouse', id_types: ['Candidate', 'application'], required_context: ['job_title'] },
    { name: 'crm', id_types: ['lead'], contact: 'optional' },
  ]) {
    const created = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.orgId}/sources`, headers: admin, payload: source })
    assert.equal(created.statusCode, 201, created.body)
  }
  return org
}

test('sources are stored lowercased, listed, changed and deleted; a name is taken once', async () => {
  const org = await withSources()
  const url = `/admin/v1/organizations/${org.orgId}/sources`
  const listed = json(await service.app.inject({ method: 'GET', url, headers: admin })).data
  assert.deepEqual(
    listed.map((source: any) => [source.name, source.id_types, source.contact, source.required_context]),
    [
      ['crm', ['lead'], 'optional', []],
      ['greenhouse', ['candidate', 'application'], 'required', ['job_title']],
    ],
  )
  assert.equal((await service.app.inject({ method: 'POST', url, headers: admin, payload: { name: 'CRM', id_types: ['x'] } })).statusCode, 409)
  const changed = await service.app.inject({ method: 'PATCH', url: `${url}/crm`, headers: admin, payload: { id_types: ['lead', 'Account'] } })
  assert.deepEqual(json(changed).data.id_types, ['lead', 'account'])
  assert.equal((await service.app.inject({ method: 'DELETE', url: `${url}/CRM`, headers: admin })).statusCode, 204)
  assert.equal((await service.app.inject({ method: 'DELETE', url: `${url}/crm`, headers: admin })).statusCode, 404)
  assert.equal((await service.app.inject({ method: 'GET', url, headers: bearer(org.key) })).statusCode, 403)
})

test('an organization without sources accepts any source and type', async () => {
  const org = await seedOrganization(service.app)
  const response = await post(org.key, { campaign: 'screening', ids: [{ source: 'anything', type: 'whatever', value: '1' }], contact: { phone: '+442079460958' } })
  assert.equal(response.statusCode, 201)
})

test('unknown sources, types not allowed and missing required context keys are all refused at once, in field order', async () => {
  const org = await withSources()
  const response = await post(org.key, {
    campaign: 'screening',
    ids: [
      { source: ' GREENHOUSE ', type: 'Candidate', value: 'C-1' },
      { source: 'workday', type: 'worker', value: 'W-1' },
      { source: 'greenhouse', type: 'offer', value: 'O-1' },
    ],
    contact: { phone: '+442079460958' },
    context: { shift: 'night' },
  })
  assert.equal(response.statusCode, 422)
  const detail = json(response).detail
  assert.deepEqual(
    detail.map((entry: any) => [entry.type, entry.loc]),
    [
      ['value_error', ['body', 'ids', 1, 'source']],
      ['value_error', ['body', 'ids', 2, 'type']],
      ['missing', ['body', 'context', 'job_title']],
    ],
  )
  assert.equal(detail[0].msg, "Value error, source 'workday' is not one of this organization's sources: 'crm', 'greenhouse'")
  assert.equal(detail[1].msg, "Value error, source 'greenhouse' allows the id types 'candidate', 'application', not 'offer'")

  const fine = await post(org.key, {
    campaign: 'screening',
    ids: [{ source: 'Greenhouse', type: 'APPLICATION', value: 'A-1' }],
    contact: { phone: '+442079460958' },
    context: { job_title: 'Barista' },
  })
  assert.equal(fine.statusCode, 201, fine.body)
})

test("one id's own problem does not hide the others'", async () => {
  const org = await withSources()
  const response = await post(org.key, {
    campaign: 'screening',
    ids: [
      { source: 'greenhouse', type: 'candidate', value: '' },
      { source: 'workday', type: 'worker', value: 'W-1' },
    ],
    contact: { phone: '+442079460958' },
  })
  assert.deepEqual(
    json(response).detail.map((entry: any) => [entry.type, entry.loc]),
    [
      ['string_too_short', ['body', 'ids', 0, 'value']],
      ['value_error', ['body', 'ids', 1, 'source']],
      ['missing', ['body', 'context', 'job_title']],
    ],
  )
})

test("source problems come with the body's other problems", async () => {
  const org = await withSources()
  const response = await post(org.key, { campaign: 'screening', ids: [{ source: 'workday', type: 'worker', value: 'W-1' }], contact: { phone: 'nope' } })
  assert.deepEqual(
    json(response).detail.map((entry: any) => entry.loc),
    [
      ['body', 'ids', 0, 'source'],
      ['body', 'contact', 'phone'],
    ],
  )
})
