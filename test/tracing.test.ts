/**
 * Traces: one trigger's story, from its request to its webhooks, is one
 * trace, the client's when its request carried a `traceparent`; the group
 * commit and the dispatch batch that served it are spans of their own,
 * linked to it; and no span says anything personal. Spans are collected by
 * the SDK's in-memory exporter from a real service: the simulator places the
 * call, a local receiver gets the webhooks.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace'
import { type StartedTracing, startTracing, tracesExporter } from '../src/tracing.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, createCampaign, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
/** What the trigger says of the person: none of it may appear in a span. */
const PERSONAL = { phone: '+442079460958', firstName: 'Ana', lastName: 'Quintanilla', context: 'prefers-mornings-7431', externalId: 'CAND-55821' }

const exporter = new InMemorySpanExporter()
let tracing: StartedTracing
let service: TestService
let receiver: Receiver
let key: string
let now = Date.parse('2026-06-01T10:00:00Z')

before(async () => {
  // Before the app is built: its request spans are installed only while traces are on.
  tracing = (await startTracing(new SimpleSpanProcessor({ exporter })))!
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
  receiver = await startReceiver()
  const admin = bearer(OPERATOR_TOKEN)
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Traced' } })).data
  key = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/api-keys`,
      headers: admin,
      payload: { name: 'ats', scopes: ['triggers:write', 'webhooks:manage'] },
    }),
  ).data.key
  await createCampaign(service.app, org.id, { routing_key: 'screening', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 0 } })
  const endpoint = await service.app.inject({
    method: 'POST',
    url: '/api/v2/webhook-endpoints',
    headers: bearer(key),
    payload: { url: `${receiver.url}?token=receiver-secret`, events: ['task.completed', 'interaction.finalized'] },
  })
  assert.equal(endpoint.statusCode, 201, endpoint.body)
})
after(async () => {
  await service.close()
  await receiver.close()
  await tracing.shutdown()
})

/** Posts a trigger (with these headers) and runs the workers until both its webhooks are delivered; the spans of its trace and the batch spans. */
async function triggerToWebhooks(headers: Record<string, string>): Promise<{ triggerId: string; spans: ReadableSpan[] }> {
  exporter.reset()
  const delivered = receiver.received.length
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json', ...headers },
    payload: {
      campaign: 'screening',
      ids: [{ source: 'ats', type: 'candidate', value: PERSONAL.externalId }],
      contact: { phone: PERSONAL.phone, first_name: PERSONAL.firstName, last_name: PERSONAL.lastName },
      context: { note: PERSONAL.context },
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  const triggerId = json(response).data.id as string
  const deadline = Date.now() + 10_000
  while (exporter.getFinishedSpans().filter((span) => span.name === 'webhook delivery').length < 2) {
    assert.ok(Date.now() < deadline, `both webhooks delivered in time: ${receiver.received.length - delivered} received, spans ${exporter.getFinishedSpans().map((s) => s.name)}, logs ${service.logs.slice(-5).join('\n')}`)
    now += 1_000
    await service.app.workers!.dispatcher.runOnce()
    await service.app.workers!.deliverer.runOnce()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  assert.equal(receiver.received.length, delivered + 2)
  return { triggerId, spans: exporter.getFinishedSpans() }
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name)

describe('a trigger with a traceparent', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const clientSpanId = '00f067aa0ba902b7'
  let spans: ReadableSpan[]
  let triggerId: string

  before(async () => {
    ;({ triggerId, spans } = await triggerToWebhooks({ traceparent: `00-${traceId}-${clientSpanId}-01` }))
  })

  test("is one trace, the client's, from the request to both webhook deliveries", () => {
    const [request] = named(spans, 'POST /api/v2/triggers')
    assert.ok(request, 'the request has a span')
    assert.equal(request.spanContext().traceId, traceId)
    assert.equal(request.parentSpanContext?.spanId, clientSpanId, "the request's span is the client's span's child")
    assert.equal(request.attributes['http.response.status_code'], 201)

    const [call] = named(spans, 'provider call')
    assert.ok(call, 'the provider call has a span')
    assert.equal(call.spanContext().traceId, traceId)
    assert.equal(call.parentSpanContext?.spanId, request.spanContext().spanId)
    assert.equal(call.attributes['cts.trigger_id'], triggerId)
    assert.equal(call.attributes['cts.start'], 'started')

    const deliveries = named(spans, 'webhook delivery')
    assert.equal(deliveries.length, 2)
    for (const delivery of deliveries) {
      assert.equal(delivery.spanContext().traceId, traceId)
      assert.equal(delivery.parentSpanContext?.spanId, request.spanContext().spanId)
      assert.equal(delivery.attributes['http.response.status_code'], 200)
    }
  })

  test('the group commit and the dispatch batch are spans of their own, linked to the request', () => {
    const request = named(spans, 'POST /api/v2/triggers')[0]!.spanContext()
    for (const name of ['group commit', 'dispatch batch']) {
      const batches = named(spans, name).filter((span) => span.links.some((link) => link.context.spanId === request.spanId))
      assert.equal(batches.length, 1, `one ${name} links to the request`)
      const [batch] = batches
      assert.notEqual(batch!.spanContext().traceId, traceId, `a ${name} serves many triggers: a trace of its own`)
      assert.equal(batch!.links.find((link) => link.context.spanId === request.spanId)!.context.traceId, traceId)
    }
    const batch = named(spans, 'dispatch batch')[0]!
    assert.ok(named(spans, 'provider call')[0]!.links.some((link) => link.context.spanId === batch.spanContext().spanId), 'the provider call links to its batch')
  })

  test("no span holds the person's number, name, context, external id, or the endpoint's URL", () => {
    const said = JSON.stringify(spans.map((span) => [span.name, span.attributes, span.links.map((link) => link.attributes), span.events]))
    for (const value of [...Object.values(PERSONAL), PERSONAL.phone.slice(1), 'receiver-secret', receiver.url]) {
      assert.ok(!said.includes(value), `no span says ${value}`)
    }
  })
})

test('a trigger without a traceparent starts a trace of its own, which its webhooks join', async () => {
  const { spans } = await triggerToWebhooks({})
  const request = named(spans, 'POST /api/v2/triggers')[0]!
  assert.equal(request.parentSpanContext, undefined, 'the request span is the root')
  const traceId = request.spanContext().traceId
  for (const span of [...named(spans, 'provider call'), ...named(spans, 'webhook delivery')]) assert.equal(span.spanContext().traceId, traceId)
})

test('which environment turns traces on, and with which exporter', () => {
  const cases: [Record<string, string>, string | undefined][] = [
    [{}, undefined],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, 'otlp'],
    [{ OTEL_TRACES_EXPORTER: 'console' }, 'console'],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, undefined],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, 'otlp'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, 'otlp'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, undefined],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, undefined],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'false' }, 'otlp'],
  ]
  for (const [env, expected] of cases) assert.equal(tracesExporter(env), expected, JSON.stringify(env))
  assert.throws(() => tracesExporter({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER must be one of otlp, console, none/)
})
