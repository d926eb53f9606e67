/**
 * /openapi.json (the client API) and /admin/openapi.json (the operator's) are
 * generated from the schemas the routes validate with; /docs and /admin/docs
 * render them; health endpoints answer.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { TriggerRequestSchema } from '../src/http/routes/triggers.ts'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

let service: TestService

before(async () => {
  service = await startService()
})
after(() => service.close())

async function documentAt(url: string) {
  const response = await service.app.inject({ method: 'GET', url })
  assert.equal(response.statusCode, 200)
  return json(response)
}

/** The schema a `$ref` names in the document's components, or the schema itself. */
const resolved = (document: any, schema: any) => (schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop()])

test('an OpenAPI 3.1 document of the client API', async () => {
  const document = await documentAt('/openapi.json')
  assert.equal(document.openapi, '3.1.0')
  assert.deepEqual(document.servers, [{ url: '/' }])
  for (const path of [
    '/api/v2/triggers',
    '/api/v2/triggers/{id}',
    '/api/v2/tasks/{id}',
    '/api/v2/tasks',
    '/api/v2/tasks/{id}/cancel',
    '/api/v2/tasks/cancel',
    '/api/v2/triggers/batch',
    '/api/v2/webhook-endpoints',
    '/api/v2/events',
    '/api/v2/events/{id}/redeliver',
    '/api/v2/interactions/{id}',
    '/api/v2/interactions/{id}/result',
  ]) {
    assert.ok(document.paths[path], path)
  }
  // The operator's routes are in the admin document; the providers' callbacks in neither.
  for (const path of Object.keys(document.paths)) assert.ok(path.startsWith('/api/v2/'), path)
  const create = document.paths['/api/v2/triggers'].post
  assert.equal(create.operationId, 'createTrigger')
  const requestSchema = resolved(document, create.requestBody.content['application/json'].schema)
  assert.deepEqual(Object.keys(requestSchema.properties), Object.keys(TriggerRequestSchema.properties))
  // contact may be left out when an id names a person on file.
  assert.deepEqual(requestSchema.required, ['campaign'])
  assert.equal(requestSchema.properties.ids.maxItems, 20)
  assert.deepEqual(Object.keys(create.responses).sort(), ['201', '400', '401', '403', '409', '413', '422', '429', '500', '503'])
  assert.deepEqual(
    create.parameters.map((parameter: any) => parameter.$ref),
    ['#/components/parameters/X-Request-ID', '#/components/parameters/Idempotency-Key', '#/components/parameters/traceparent'],
  )
  assert.equal(document.components.parameters.traceparent.in, 'header')
  assert.equal(document.components.parameters.traceparent.required, undefined, 'optional')
  assert.deepEqual(Object.keys(create.responses['201'].headers), ['X-Request-ID', 'RateLimit-Policy', 'RateLimit', 'Idempotent-Replayed'])
  assert.ok(create.responses['429'].headers['Retry-After'])
  // Every client route may meet the rate limit.
  assert.ok(document.paths['/api/v2/tasks/{id}'].get.responses['429'])
  // The task outcomes clients may meet, opted_out among them.
  const task = document.paths['/api/v2/tasks/{id}'].get.responses['200'].content['application/json'].schema
  const outcome = resolved(document, task.properties.data).properties.outcome
  assert.ok(JSON.stringify(outcome).includes('opted_out'))
  assert.deepEqual(create.security, [{ apiKey: [] }])
  // A batch documents its triggers as the single endpoint's body, each with its own idempotency_key.
  const batch = document.paths['/api/v2/triggers/batch'].post
  const items = resolved(document, batch.requestBody.content['application/json'].schema).properties.triggers
  assert.equal(items.maxItems, 1000)
  assert.deepEqual(Object.keys(resolved(document, items.items).properties), [...Object.keys(TriggerRequestSchema.properties), 'idempotency_key'])
  assert.deepEqual(Object.keys(batch.responses).sort(), ['200', '400', '401', '403', '413', '422', '429', '500', '503'])
  for (const field of ['not_before', 'expires_at']) assert.equal(requestSchema.properties[field].format, 'date-time', field)
  assert.deepEqual(Object.keys(document.components.securitySchemes), ['apiKey'])
  // A conversation's result is one named schema, in the interaction's answer and in each event that carries it.
  const result = document.paths['/api/v2/interactions/{id}/result'].post
  assert.deepEqual(Object.keys(result.responses).sort(), ['200', '400', '401', '403', '404', '409', '413', '422', '429', '500', '503'])
  assert.deepEqual(
    Object.keys(resolved(document, result.requestBody.content['application/json'].schema).properties),
    ['disposition', 'summary', 'data', 'transcript', 'transcript_url', 'recording_url', 'callback_at', 'opt_out'],
  )
  assert.ok(JSON.stringify(document.components.schemas.InteractionContext).includes('#/components/schemas/ConversationResult'))
  for (const name of ['ConversationResult', 'TaskCompletedData', 'InteractionFinalizedData', 'InteractionResultAddedData']) assert.ok(document.components.schemas[name], name)
  for (const name of ['TaskCompletedData', 'InteractionFinalizedData', 'InteractionResultAddedData']) {
    assert.ok(JSON.stringify(document.components.schemas[name].properties.result).includes('#/components/schemas/ConversationResult'), name)
  }
})

test('every operation has an id of its own, a tag the document describes, and the request id header', async () => {
  for (const url of ['/openapi.json', '/admin/openapi.json']) {
    const document = await documentAt(url)
    const tags = new Set(document.tags.map((tag: { name: string }) => tag.name))
    const ids = new Set<string>()
    for (const [path, operations] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const where = `${url} ${method} ${path}`
        assert.match(operation.operationId, /^[a-z][A-Za-z]+$/, where)
        assert.ok(!ids.has(operation.operationId), where)
        ids.add(operation.operationId)
        assert.ok(operation.tags.length > 0 && operation.tags.every((tag: string) => tags.has(tag)), where)
        assert.ok(operation.parameters.some((parameter: any) => parameter.$ref === '#/components/parameters/X-Request-ID'), where)
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          assert.ok(response.$ref !== undefined || response.headers['X-Request-ID'], `${where} ${status}`)
        }
      }
    }
  }
})

test('the named resources a code generator makes types of', async () => {
  const document = await documentAt('/openapi.json')
  const schemas = document.components.schemas
  for (const name of ['TriggerRequest', 'TriggerAccepted', 'Trigger', 'Task', 'Interaction', 'InteractionContext', 'WebhookEndpoint', 'Event', 'ErrorResponse', 'ValidationErrorResponse']) {
    assert.ok(schemas[name], name)
  }
  assert.equal(document.paths['/api/v2/tasks/{id}'].get.responses['200'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/Task')
})

test('the webhooks a client receives, each event type with its payload and the Standard Webhooks headers', async () => {
  const document = await documentAt('/openapi.json')
  assert.deepEqual(Object.keys(document.webhooks), ['task.completed', 'interaction.finalized', 'interaction.result_added', 'interaction.message_received', 'webhook.test'])
  for (const [type, webhook] of Object.entries<any>(document.webhooks)) {
    const event = resolved(document, webhook.post.requestBody.content['application/json'].schema)
    assert.deepEqual(event.properties.type.enum, [type])
    assert.ok(resolved(document, event.properties.data).properties, type)
    assert.deepEqual(
      webhook.post.parameters.map((parameter: any) => parameter.$ref),
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((header) => `#/components/parameters/${header}`),
    )
  }
})

test("an OpenAPI 3.1 document of the operator's API, apart", async () => {
  const document = await documentAt('/admin/openapi.json')
  assert.equal(document.openapi, '3.1.0')
  for (const path of [
    '/admin/v1/organizations',
    '/admin/v1/organizations/{org_id}/api-keys',
    '/admin/v1/organizations/{org_id}/api-keys/{key_id}',
    '/admin/v1/organizations/{org_id}/campaigns',
    '/admin/v1/organizations/{org_id}/campaigns/{campaign_id}',
    '/admin/v1/organizations/{org_id}/webhook-endpoints/{id}/rotate-secret',
    '/metrics',
    '/healthz',
  ]) {
    assert.ok(document.paths[path], path)
  }
  for (const path of Object.keys(document.paths)) assert.ok(!path.startsWith('/api/v2/') && !path.startsWith('/providers/'), path)
  // The twin of a client route has an id of its own.
  assert.equal(document.paths['/admin/v1/organizations/{org_id}/events'].get.operationId, 'adminListEvents')
  // The operator may name an organization that does not exist: 404, which the client's twin never answers.
  for (const path of ['/admin/v1/organizations/{org_id}/events', '/admin/v1/organizations/{org_id}/webhook-endpoints']) {
    const response = await service.app.inject({ method: 'GET', url: path.replace('{org_id}', 'org_00000000000000000000000000'), headers: bearer(OPERATOR_TOKEN) })
    assert.equal(response.statusCode, 404, path)
    assert.ok(document.paths[path].get.responses['404'], path)
  }
  // The admin API has no rate limit.
  assert.equal(document.paths['/admin/v1/organizations'].post.responses['429'], undefined)
  assert.deepEqual(Object.keys(document.components.securitySchemes), ['operatorToken', 'metricsToken'])
  // /metrics takes either token, and no other operation the metrics token.
  assert.deepEqual(document.paths['/metrics'].get.security, [{ metricsToken: [] }, { operatorToken: [] }])
  for (const [path, operations] of Object.entries<Record<string, { security?: unknown[] }>>(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (path !== '/metrics') assert.ok(!JSON.stringify(operation.security ?? []).includes('metricsToken'), `${method} ${path}`)
    }
  }
  assert.equal(document.webhooks, undefined)
})

test('a readable reference of each document, at /docs and /admin/docs', async () => {
  for (const [prefix, title] of [
    ['/docs', 'Conversation Trigger Service'],
    ['/admin/docs', 'Conversation Trigger Service: admin API'],
  ]) {
    const page = await service.app.inject({ method: 'GET', url: `${prefix}/` })
    assert.equal(page.statusCode, 200)
    assert.match(page.headers['content-type'] as string, /text\/html/)
    assert.match(page.body, /swagger/i)
    // The page reads its document from ./json.
    assert.equal(json(await service.app.inject({ method: 'GET', url: `${prefix}/json` })).info.title, title)
  }
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
