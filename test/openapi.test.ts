/** /openapi.json is generated from the schemas the routes validate with; /docs renders it; health endpoints answer. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { TriggerRequestSchema } from '../src/http/routes/triggers.ts'
import { json, startService, type TestService } from './support/service.ts'

let service: TestService

before(async () => {
  service = await startService()
})
after(() => service.close())

test('an OpenAPI 3.1 document of the client and admin APIs', async () => {
  const response = await service.app.inject({ method: 'GET', url: '/openapi.json' })
  assert.equal(response.statusCode, 200)
  const document = json(response)
  assert.equal(document.openapi, '3.1.0')
  for (const path of [
    '/api/v2/triggers',
    '/api/v2/triggers/{id}',
    '/admin/v1/organizations',
    '/admin/v1/organizations/{org_id}/api-keys',
    '/admin/v1/organizations/{org_id}/api-keys/{key_id}',
    '/admin/v1/organizations/{org_id}/campaigns',
    '/admin/v1/organizations/{org_id}/campaigns/{campaign_id}',
    '/api/v2/tasks/{id}',
    '/api/v2/tasks',
    '/api/v2/tasks/{id}/cancel',
    '/api/v2/tasks/cancel',
    '/api/v2/triggers/batch',
    '/api/v2/webhook-endpoints',
    '/api/v2/events',
    '/api/v2/events/{id}/redeliver',
    '/admin/v1/organizations/{org_id}/webhook-endpoints/{id}/rotate-secret',
    '/providers/twilio/calls/{interaction_id}/status',
    '/providers/twilio/calls/{interaction_id}/answer',
    '/api/v2/interactions/{id}',
    '/api/v2/interactions/{id}/result',
    '/providers/whatsapp/webhook',
    '/metrics',
  ]) {
    assert.ok(document.paths[path], path)
  }
  const create = document.paths['/api/v2/triggers'].post
  const requestSchema = create.requestBody.content['application/json'].schema
  assert.deepEqual(Object.keys(requestSchema.properties), Object.keys(TriggerRequestSchema.properties))
  // contact may be left out when an id names a person on file.
  assert.deepEqual(requestSchema.required, ['campaign'])
  assert.equal(requestSchema.properties.ids.maxItems, 20)
  assert.deepEqual(Object.keys(create.responses).sort(), ['201', '401', '403', '409', '422', '429'])
  // Every client route may meet the rate limit; the admin API has none.
  assert.ok(document.paths['/api/v2/tasks/{id}'].get.responses['429'])
  assert.equal(document.paths['/admin/v1/organizations'].post.responses['429'], undefined)
  // The task outcomes clients may meet, opted_out among them.
  const task = document.paths['/api/v2/tasks/{id}'].get.responses['200'].content['application/json'].schema
  const outcome = task.properties.data.properties.outcome
  assert.ok(JSON.stringify(outcome).includes('opted_out'))
  assert.deepEqual(create.security, [{ apiKey: [] }])
  // A batch documents its triggers as the single endpoint's body, each with its own idempotency_key.
  const batch = document.paths['/api/v2/triggers/batch'].post
  const items = batch.requestBody.content['application/json'].schema.properties.triggers
  assert.equal(items.maxItems, 1000)
  assert.deepEqual(Object.keys(items.items.properties), [...Object.keys(TriggerRequestSchema.properties), 'idempotency_key'])
  assert.deepEqual(Object.keys(batch.responses).sort(), ['200', '401', '403', '422', '429'])
  for (const field of ['not_before', 'expires_at']) assert.equal(requestSchema.properties[field].format, 'date-time', field)
  assert.ok(document.components.securitySchemes.apiKey)
  // A conversation's result is one named schema, in the interaction's answer and in each event that carries it.
  const result = document.paths['/api/v2/interactions/{id}/result'].post
  assert.deepEqual(Object.keys(result.responses).sort(), ['200', '401', '403', '404', '409', '422', '429'])
  assert.deepEqual(
    Object.keys(result.requestBody.content['application/json'].schema.properties),
    ['disposition', 'summary', 'data', 'transcript', 'transcript_url', 'recording_url', 'callback_at', 'opt_out'],
  )
  assert.ok(JSON.stringify(result.responses['200']).includes('#/components/schemas/ConversationResult'))
  for (const name of ['ConversationResult', 'TaskCompletedData', 'InteractionFinalizedData', 'InteractionResultAddedData']) assert.ok(document.components.schemas[name], name)
  for (const name of ['TaskCompletedData', 'InteractionFinalizedData', 'InteractionResultAddedData']) {
    assert.ok(JSON.stringify(document.components.schemas[name].properties.result).includes('#/components/schemas/ConversationResult'), name)
  }
})

test('a readable reference at /docs', async () => {
  const response = await service.app.inject({ method: 'GET', url: '/docs/' })
  assert.equal(response.statusCode, 200)
  assert.match(response.headers['content-type'] as string, /text\/html/)
  assert.match(response.body, /swagger/i)
})

test('/healthz and /readyz', async () => {
  assert.deepEqual(json(await service.app.inject({ method: 'GET', url: '/healthz' })), { status: 'ok' })
  assert.deepEqual(json(await service.app.inject({ method: 'GET', url: '/readyz' })), { status: 'ready', notifications: service.db.notifications })
})

test('an unknown route is 404 in the error shape', async () => {
  const response = await service.app.inject({ method: 'GET', url: '/api/v2/nothing-here' })
  assert.equal(response.statusCode, 404)
  assert.equal(json(response).error.code, 'not_found')
})
