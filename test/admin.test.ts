/** The operator's admin API: organizations, API keys, campaigns. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

let service: TestService
const admin = bearer(OPERATOR_TOKEN)

function call(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  return service.app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) })
}

async function createOrg(name = 'Clinic North') {
  const response = await call('POST', '/admin/v1/organizations', { name })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as {
    id: string
    name: string
    created_at: string
    rate_limit: { per_second: number | null; burst: number | null }
    retention_days: number | null
    callback_window_days: number
  }
}

before(async () => {
  service = await startService()
})
after(() => service.close())

test('creates an organization', async () => {
  const org = await createOrg('Clinic North')
  assert.deepEqual(Object.keys(org).sort(), ['callback_window_days', 'contact_cap', 'created_at', 'id', 'name', 'rate_limit', 'retention_days'])
  assert.equal(org.callback_window_days, 14, 'a call back lands on a task completed up to two weeks before')
  assert.deepEqual(org.rate_limit, { per_second: null, burst: null }, 'the default until the operator sets one')
  assert.equal(org.retention_days, null, 'the default until the operator sets one')
  assert.match(org.id, /^org_[0-9a-z]{26}$/)
  assert.equal(org.name, 'Clinic North')
  const invalid = await call('POST', '/admin/v1/organizations', { name: '' })
  assert.equal(invalid.statusCode, 422)
  assert.equal(json(invalid).detail[0].type, 'string_too_short')
})

test('issues a key shown once, stored only as a hash', async () => {
  const org = await createOrg()
  const response = await call('POST', `/admin/v1/organizations/${org.id}/api-keys`, { name: 'scheduler' })
  assert.equal(response.statusCode, 201)
  const issued = json(response).data
  for (const field of ['id', 'key', 'prefix', 'scopes', 'created_at']) assert.ok(field in issued, field)
  assert.deepEqual(issued.scopes, ['triggers:write', 'triggers:read'])
  assert.ok(issued.key.startsWith(issued.prefix))

  const [row] = await service.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [issued.id])
  assert.ok(!Object.values(row!).some((value) => String(value).includes(issued.key.slice(issued.prefix.length))), 'no column holds the secret')

  const listed = json(await call('GET', `/admin/v1/organizations/${org.id}/api-keys`)).data
  assert.equal(listed.length, 1)
  assert.equal(listed[0].id, issued.id)
  assert.equal('key' in listed[0], false, 'a listing never shows the key')
})

test('issues a key with chosen scopes; unknown scopes are refused', async () => {
  const org = await createOrg()
  const readOnly = json(await call('POST', `/admin/v1/organizations/${org.id}/api-keys`, { name: 'bi', scopes: ['triggers:read'] })).data
  assert.deepEqual(readOnly.scopes, ['triggers:read'])
  const refused = await call('POST', `/admin/v1/organizations/${org.id}/api-keys`, { name: 'x', scopes: ['everything'] })
  assert.equal(refused.statusCode, 422)
  assert.deepEqual(json(refused).detail[0].loc, ['body', 'scopes', 0])
  assert.equal(json(refused).detail[0].type, 'literal_error')
})

test('an unknown organization is 404 for keys and campaigns', async () => {
  for (const [method, path, payload] of [
    ['POST', 'api-keys', { name: 'x' }],
    ['GET', 'api-keys', undefined],
    ['POST', 'campaigns', { routing_key: 'a', channel: 'voice' }],
    ['GET', 'campaigns', undefined],
  ] as const) {
    for (const orgId of ['org_01m80rk84mcej1ykcdc4sfn76m', 'nonsense']) {
      const response = await call(method, `/admin/v1/organizations/${orgId}/${path}`, payload)
      assert.equal(response.statusCode, 404, `${method} ${path}: ${response.body}`)
      assert.equal(json(response).error.code, 'not_found')
    }
  }
})

test('creates and lists campaigns; one routing key once per channel', async () => {
  const org = await createOrg()
  const url = `/admin/v1/organizations/${org.id}/campaigns`
  const voice = await call('POST', url, { routing_key: 'interview', channel: 'voice', name: 'Interview call', context: { company: 'North' } })
  assert.equal(voice.statusCode, 201, voice.body)
  const created = json(voice).data
  assert.match(created.id, /^cmp_/)
  assert.equal(created.routing_key, 'interview')
  assert.equal(created.channel, 'voice')
  assert.equal(created.name, 'Interview call')
  assert.deepEqual(created.context, { company: 'North' })

  assert.equal((await call('POST', url, { routing_key: 'interview', channel: 'whatsapp' })).statusCode, 201)
  const duplicate = await call('POST', url, { routing_key: 'interview', channel: 'voice' })
  assert.equal(duplicate.statusCode, 409)
  assert.equal(json(duplicate).error.code, 'conflict')

  const listed = json(await call('GET', url)).data
  assert.deepEqual(listed.map((c: { channel: string }) => c.channel).sort(), ['voice', 'whatsapp'])
  assert.equal(listed.find((c: { channel: string }) => c.channel === 'whatsapp').name, 'interview', 'the name defaults to the routing key')
})

test('campaign input is validated', async () => {
  const org = await createOrg()
  const response = await call('POST', `/admin/v1/organizations/${org.id}/campaigns`, { routing_key: 'has space', channel: 'fax', context: [] })
  assert.equal(response.statusCode, 422)
  assert.deepEqual(
    json(response).detail.map((entry: { type: string; loc: string[] }) => [entry.type, entry.loc.join('.')]),
    [
      ['string_pattern_mismatch', 'body.routing_key'],
      ['literal_error', 'body.channel'],
      ['dict_type', 'body.context'],
    ],
  )
})

test('the admin API needs the operator token', async () => {
  const response = await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', payload: { name: 'x' } })
  assert.equal(response.statusCode, 401)
  assert.equal(json(response).error.code, 'unauthorized')
})
