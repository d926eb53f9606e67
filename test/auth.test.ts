/** Who may call what: 401 and 403 on the client and admin APIs, and revocation seen by every process. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>

const BODY = { campaign: 'screening', contact: { phone: '+14155552671' } }

function trigger(headers: Record<string, string>, app = service.app, payload: unknown = BODY) {
  return app.inject({ method: 'POST', url: '/api/v2/triggers', headers: { 'content-type': 'application/json', ...headers }, payload: payload as object })
}

function assertError(response: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string) {
  assert.equal(response.statusCode, status, response.body)
  const body = json(response as never)
  assert.deepEqual(Object.keys(body), ['error', 'metadata'])
  assert.equal(body.error.code, code)
  assert.equal(typeof body.error.message, 'string')
  assert.equal(body.metadata.request_id, response.headers['x-request-id'])
  if (status === 401) assert.equal(response.headers['www-authenticate'], 'Bearer')
}

async function issueKey(scopes?: string[]) {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/api-keys`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { name: 'integration', ...(scopes ? { scopes } : {}) },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; key: string }
}

function revoke(keyId: string, app = service.app) {
  return app.inject({ method: 'DELETE', url: `/admin/v1/organizations/${org.orgId}/api-keys/${keyId}`, headers: bearer(OPERATOR_TOKEN) })
}

before(async () => {
  service = await startService()
  org = await seedOrganization(service.app)
})
after(() => service.close())

describe('401 on the client API', () => {
  test('no header, another scheme, an unknown or malformed key', async () => {
    const unknownKey = org.key.slice(0, -4) + (org.key.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    for (const headers of [{}, { authorization: `Basic ${org.key}` }, bearer(unknownKey), bearer('not-a-key'), { authorization: 'Bearer' }]) {
      assertError(await trigger(headers), 401, 'unauthorized')
    }
  })

  test('comes before validation: a bad body with a bad key is 401, not 422', async () => {
    assertError(await trigger({}, service.app, { campaign: 5 }), 401, 'unauthorized')
  })

  test('the bearer scheme is case-insensitive', async () => {
    assert.equal((await trigger({ authorization: `bearer ${org.key}` })).statusCode, 201)
  })
})

describe('403', () => {
  test('a key without triggers:write may not trigger; without triggers:read may not look up', async () => {
    const readOnly = await issueKey(['triggers:read'])
    assertError(await trigger(bearer(readOnly.key)), 403, 'forbidden')
    const writeOnly = await issueKey(['triggers:write'])
    const created = await trigger(bearer(writeOnly.key))
    assert.equal(created.statusCode, 201)
    const id = json(created).data.id
    assertError(await service.app.inject({ method: 'GET', url: `/api/v2/triggers/${id}`, headers: bearer(writeOnly.key) }), 403, 'forbidden')
    assert.equal((await service.app.inject({ method: 'GET', url: `/api/v2/triggers/${id}`, headers: bearer(readOnly.key) })).statusCode, 200)
  })

  test('the operator token on the client API, an organization key on the admin API', async () => {
    assertError(await trigger(bearer(OPERATOR_TOKEN)), 403, 'forbidden')
    const adminWithKey = await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: bearer(org.key), payload: { name: 'x' } })
    assertError(adminWithKey, 403, 'forbidden')
    const unknown = await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: bearer('nope-nope-nope-nope-nope-nope'), payload: { name: 'x' } })
    assertError(unknown, 401, 'unauthorized')
  })
})

describe('revocation', () => {
  test('a revoked key is refused from the next request on, also by a process that has it cached', async () => {
    const key = await issueKey()
    const peer = await service.peer()
    assert.equal((await trigger(bearer(key.key), peer)).statusCode, 201, 'the peer has now cached the key')
    assert.equal((await revoke(key.id)).statusCode, 204)
    assertError(await trigger(bearer(key.key), peer), 401, 'unauthorized')
    assertError(await trigger(bearer(key.key)), 401, 'unauthorized')
    assertError(await trigger(bearer(key.key), peer, { campaign: 5 }), 401, 'unauthorized')
    const lookup = await peer.inject({ method: 'GET', url: '/api/v2/triggers/trg_01m80rk8ebb477ctftmz1b740t', headers: bearer(key.key) })
    assertError(lookup, 401, 'unauthorized')
  })

  test('a revoked key cached by a process is 401 even when its body is refused before validation', async () => {
    const key = await issueKey()
    const peer = await service.peer()
    assert.equal((await trigger(bearer(key.key), peer)).statusCode, 201)
    await revoke(key.id)
    const send = (payload: string) =>
      peer.inject({ method: 'POST', url: '/api/v2/triggers', headers: { ...bearer(key.key), 'content-type': 'application/json' }, payload })
    assertError(await send('{"campaign": '), 401, 'unauthorized')
    assertError(await send(JSON.stringify({ campaign: 'x'.repeat(2 * 1024 * 1024) })), 401, 'unauthorized')
    assertError(await send(`{"contact": ${'['.repeat(1001) + ']'.repeat(1001)}}`), 401, 'unauthorized')
  })

  test('a process that has a revoked key cached records no trigger for it', async () => {
    const key = await issueKey()
    const peer = await service.peer()
    assert.equal((await trigger(bearer(key.key), peer)).statusCode, 201)
    const before = await Promise.all(Array.from({ length: 20 }, () => trigger(bearer(key.key), peer)))
    assert.ok(before.every((response) => response.statusCode === 201))
    await revoke(key.id)
    const afterRevocation = await Promise.all(Array.from({ length: 20 }, () => trigger(bearer(key.key), peer)))
    assert.ok(afterRevocation.every((response) => response.statusCode === 401))
    const [row] = await service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM triggers WHERE api_key_id = $1', [key.id])
    assert.equal(row?.n, 21)
  })

  test('revoking is idempotent; an unknown key or organization is 404', async () => {
    const key = await issueKey()
    assert.equal((await revoke(key.id)).statusCode, 204)
    assert.equal((await revoke(key.id)).statusCode, 204)
    assertError(await revoke('key_01m80rk84mcej1ykcdc4sfn76m'), 404, 'not_found')
    const elsewhere = await service.app.inject({
      method: 'DELETE',
      url: `/admin/v1/organizations/org_01m80rk84mcej1ykcdc4sfn76m/api-keys/${key.id}`,
      headers: bearer(OPERATOR_TOKEN),
    })
    assertError(elsewhere, 404, 'not_found')
  })
})
