/**
 * The audit log: every change to an organization's setup, by the operator or
 * by one of its keys, appears once, with who, from where and when, and never
 * a secret.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const admin = bearer(OPERATOR_TOKEN)
let service: TestService
let now = Date.parse('2026-11-02T10:00:00Z')

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
})
after(() => service.close())

async function call(method: string, url: string, token: string, payload?: object, status?: number) {
  now += 1_000
  const response = await service.app.inject({ method: method as 'POST', url, headers: bearer(token), payload, remoteAddress: '203.0.113.7' })
  if (status !== undefined) assert.equal(response.statusCode, status, `${method} ${url}: ${response.body}`)
  else assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
  return response.statusCode === 204 ? undefined : json(response).data
}

test('each change to an organization appears once in the audit log, with who, from where and when, and no secret', async () => {
  const org = await call('POST', '/admin/v1/organizations', OPERATOR_TOKEN, { name: 'Clinic' })
  const orgs = `/admin/v1/organizations/${org.id}`
  await call('PATCH', orgs, OPERATOR_TOKEN, { name: 'Clinic North', rate_limit: { per_second: 50, burst: 80 }, retention_days: 90 })
  await call('DELETE', `${orgs}/rate-limit`, OPERATOR_TOKEN)
  const issued = await call('POST', `${orgs}/api-keys`, OPERATOR_TOKEN, {
    name: 'scheduler',
    scopes: ['triggers:write', 'webhooks:manage', 'suppressions:manage', 'campaigns:manage', 'contacts:erase'],
  })
  const spare = await call('POST', `${orgs}/api-keys`, OPERATOR_TOKEN, { name: 'spare' })
  await call('DELETE', `${orgs}/api-keys/${spare.id}`, OPERATOR_TOKEN)
  const campaign = await call('POST', `${orgs}/campaigns`, OPERATOR_TOKEN, { routing_key: 'reminder', channel: 'voice' })
  await call('PATCH', `${orgs}/campaigns/${campaign.id}`, OPERATOR_TOKEN, { name: 'Reminders', max_concurrent: 5 })
  await call('POST', `${orgs}/campaigns/${campaign.id}/pause`, OPERATOR_TOKEN)
  await call('POST', '/api/v2/campaigns/reminder/resume', issued.key)
  await call('POST', `${orgs}/sources`, OPERATOR_TOKEN, { name: 'ehr', id_types: ['patient'] })
  await call('PATCH', `${orgs}/sources/ehr`, OPERATOR_TOKEN, { contact: 'optional' })
  await call('DELETE', `${orgs}/sources/ehr`, OPERATOR_TOKEN)
  await call('POST', '/api/v2/suppressions', issued.key, { phone: '+44 20 7946 0001' }, 201)
  await call('DELETE', '/api/v2/suppressions/%2B442079460001', issued.key)
  const endpoint = await call('POST', '/api/v2/webhook-endpoints', issued.key, { url: 'http://127.0.0.1:9/hooks/T0001/s3cr3t-path?token=query-secret' }, 201)
  await call('PATCH', `/api/v2/webhook-endpoints/${endpoint.id}`, issued.key, { enabled: false, url: 'http://127.0.0.1:9/other/secret-too' })
  const rotated = await call('POST', `${orgs}/webhook-endpoints/${endpoint.id}/rotate-secret`, OPERATOR_TOKEN)
  await call('DELETE', `/api/v2/webhook-endpoints/${endpoint.id}`, issued.key)
  await call('POST', '/api/v2/contacts/erase', issued.key, { phone: '+44 20 7946 0002' })
  // Reads, refusals and what changes nothing are not changes.
  await call('GET', `${orgs}/campaigns`, OPERATOR_TOKEN)
  await call('POST', `${orgs}/campaigns`, OPERATOR_TOKEN, { routing_key: 'reminder', channel: 'voice' }, 409)
  await call('DELETE', `${orgs}/sources/ehr`, OPERATOR_TOKEN, undefined, 404)

  // Answered newest first; read here oldest first.
  const log = (await call('GET', `/admin/v1/audit-log?organization_id=${org.id}`, OPERATOR_TOKEN)).reverse()
  const byOperator = { actor: 'operator', address: '203.0.113.7' }
  const byKey = { actor: issued.id, address: '203.0.113.7' }
  assert.deepEqual(
    log.map((entry: { actor: string; address: string; action: string; target: string }) => ({
      actor: entry.actor,
      address: entry.address,
      action: entry.action,
      target: entry.target,
    })),
    [
      { ...byOperator, action: 'organization.created', target: org.id },
      { ...byOperator, action: 'organization.changed', target: org.id },
      { ...byOperator, action: 'organization.changed', target: org.id },
      { ...byOperator, action: 'api_key.issued', target: issued.id },
      { ...byOperator, action: 'api_key.issued', target: spare.id },
      { ...byOperator, action: 'api_key.revoked', target: spare.id },
      { ...byOperator, action: 'campaign.created', target: campaign.id },
      { ...byOperator, action: 'campaign.changed', target: campaign.id },
      { ...byOperator, action: 'campaign.paused', target: campaign.id },
      { ...byKey, action: 'campaign.resumed', target: campaign.id },
      { ...byOperator, action: 'source.created', target: 'ehr' },
      { ...byOperator, action: 'source.changed', target: 'ehr' },
      { ...byOperator, action: 'source.deleted', target: 'ehr' },
      { ...byKey, action: 'suppression.added', target: '+442079460001' },
      { ...byKey, action: 'suppression.lifted', target: '+442079460001' },
      { ...byKey, action: 'webhook_endpoint.created', target: endpoint.id },
      { ...byKey, action: 'webhook_endpoint.changed', target: endpoint.id },
      { ...byOperator, action: 'webhook_endpoint.secret_rotated', target: endpoint.id },
      { ...byKey, action: 'webhook_endpoint.deleted', target: endpoint.id },
      { ...byKey, action: 'contact.erased', target: log.at(-1).target },
    ],
  )
  assert.match(log.at(-1).target, /^sha256:[0-9a-f]{64}$/, 'an erasure by number keeps its digest')
  assert.ok(log.every((entry: { at: string }, index: number) => index === 0 || entry.at > log[index - 1].at))
  const changed = log.find((entry: { action: string }) => entry.action === 'organization.changed')
  assert.deepEqual(changed.details, { name: 'Clinic North', rate_limit: { per_second: 50, burst: 80 }, retention_days: 90 })
  assert.deepEqual(log.find((entry: { action: string }) => entry.action === 'webhook_endpoint.created').details.url, 'http://127.0.0.1:9')

  const text = JSON.stringify(log)
  for (const secret of [issued.key, spare.key, endpoint.secret, rotated.secret, 's3cr3t-path', 'query-secret', 'secret-too', OPERATOR_TOKEN]) {
    assert.ok(!text.includes(secret), `the log holds no secret (${secret.slice(0, 12)}...)`)
  }

  // Paged newest first; all organizations' entries without the filter; the operator's only.
  const page = await call('GET', `/admin/v1/audit-log?organization_id=${org.id}&limit=2&before=${log.at(-1).id}`, OPERATOR_TOKEN)
  assert.deepEqual(page.map((entry: { id: string }) => entry.id), [log.at(-2).id, log.at(-3).id])
  assert.ok((await call('GET', '/admin/v1/audit-log', OPERATOR_TOKEN)).length >= log.length)
  await call('GET', '/admin/v1/audit-log', issued.key, undefined, 403)
  await call('GET', '/admin/v1/audit-log?before=x', OPERATOR_TOKEN, undefined, 422)
})
