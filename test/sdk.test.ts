/**
 * The TypeScript SDK (sdk/) against the running service: the app listens on
 * a port and the SDK talks HTTP to it, as a client system would. Its types
 * are generated from the service's OpenAPI document and must match it; its
 * retries, idempotency keys, pagination, errors and webhook verification are
 * checked on the wire (each request the SDK sends is recorded on its way to
 * the real fetch).
 */
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import type { OpenAPI3 } from 'openapi-typescript'
import { Webhook } from 'standardwebhooks'
import { staleSdkTypes } from '../scripts/sdkTypes.ts'
import {
  AbortedError,
  ApiError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  ConversationTriggerClient,
  ConversationTriggerError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  TimeoutError,
  ValidationError,
  WebhookVerificationError,
  verifyWebhook,
  type WebhookEvent,
} from '../sdk/src/index.ts'
import { newWebhookSecret, signatureHeader } from '../src/webhooks/signing.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, createCampaign, freePort, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const SCREENING_RESULT = { disposition: 'interested', summary: 'Still interested; free on Tuesday afternoons.', data: { interested: true } }
const CALL_MS = 200

let service: TestService
let baseUrl: string
let now = Date.now()
/** The service's clock: `now`, moved by the tests, unless a test needs real time to pass. */
let clock: () => number = () => now

before(async () => {
  service = await startService({ now: () => clock(), allowPrivateWebhookUrls: true })
  baseUrl = await service.app.listen({ port: 0, host: '127.0.0.1' })
})
after(() => service.close())
beforeEach(() => {
  // Webhook timestamps are the service's clock; receivers check them against theirs.
  now = Date.now()
  clock = () => now
})

interface Exchange {
  method: string
  url: URL
  headers: Headers
  body: string | undefined
  sentAt: number
  status?: number
  retryAfter?: string | null
}

/** The global fetch, with each request it sends and the status of each answer noted in `log`. */
function recordingFetch(log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const exchange: Exchange = {
      method: init?.method ?? 'GET',
      url: new URL(String(input)),
      headers: new Headers(init?.headers),
      body: init?.body as string | undefined,
      sentAt: performance.now(),
    }
    log.push(exchange)
    const response = await fetch(input, init)
    exchange.status = response.status
    exchange.retryAfter = response.headers.get('retry-after')
    return response
  }
}

const ALL_SCOPES = ['triggers:write', 'triggers:read', 'webhooks:manage', 'consents:manage']

/** An organization with a key that may also manage webhooks and consents (or has the scopes given), its always-open simulator campaign, and an SDK client of its key. */
async function organization(clientOptions: { maxRetries?: number } = {}, scopes = ALL_SCOPES) {
  const seeded = await seedOrganization(service.app, { scopes, schedule: ALWAYS_OPEN })
  await service.app.inject({
    method: 'PATCH',
    url: `/admin/v1/organizations/${seeded.orgId}/campaigns/${seeded.campaign.id}`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { provider_config: { duration_ms: CALL_MS, result: SCREENING_RESULT } },
  })
  const requests: Exchange[] = []
  const client = new ConversationTriggerClient({ apiKey: seeded.key, baseUrl, fetch: recordingFetch(requests), ...clientOptions })
  return { ...seeded, client, requests }
}

/** Runs every simulated call due to its end, as the dispatcher of a running service would. */
async function callsToTheEnd() {
  await service.app.workers!.dispatcher.runOnce()
  now += CALL_MS
  await service.app.workers!.dispatcher.runOnce()
}

const contact = { first_name: 'Ada', last_name: 'Lovelace', phone: '+44 (0)20 7946 0958', language: 'en-GB' }

test('the SDK types are generated from the OpenAPI document as it is now (npm run sdk:types writes them)', async () => {
  assert.deepEqual(await staleSdkTypes(service.app.swagger() as OpenAPI3), [])
})

describe('the quick start', () => {
  test('a trigger is created with an Idempotency-Key and the request id passed through, and its task followed to completion', async () => {
    const { client, requests, routingKey } = await organization()
    const accepted = await client.createTrigger(
      { campaign: routingKey, ids: [{ source: 'ATS', type: 'Candidate_ID', value: 'AbC-001' }], contact, context: { job_title: 'Analyst' } },
      { requestId: 'ats-42' },
    )
    assert.equal(accepted.status, 'accepted')
    assert.match(accepted.task_id, /^tsk_/)
    const [sent] = requests
    assert.equal(sent!.headers.get('x-request-id'), 'ats-42')
    assert.match(sent!.headers.get('idempotency-key')!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(sent!.headers.get('authorization')?.startsWith('Bearer ctk_'), true)

    assert.equal((await client.getTask(accepted.task_id)).status, 'pending')
    await callsToTheEnd()
    const task = await client.getTask(accepted.task_id)
    assert.equal(task.status, 'completed')
    assert.equal(task.outcome, 'reached')
    assert.deepEqual(task.ids, [{ source: 'ats', type: 'candidate_id', value: 'AbC-001' }])
    assert.equal(task.contact?.phone, '+442079460958')
    const interaction = await client.getInteraction(task.interactions[0]!.id)
    assert.equal(interaction.result?.summary, SCREENING_RESULT.summary)
    const trigger = await client.getTrigger(accepted.id)
    assert.equal(trigger.task.id, accepted.task_id)
  })

  test('a caller\'s own Idempotency-Key replays the first answer instead of recording a second trigger', async () => {
    const { client, routingKey } = await organization()
    const first = await client.createTrigger({ campaign: routingKey, contact }, { idempotencyKey: 'application-77-screening' })
    const again = await client.createTrigger({ campaign: routingKey, contact }, { idempotencyKey: 'application-77-screening' })
    assert.deepEqual(again, first)
  })

  test('a batch: each trigger accepted or refused on its own, each given an idempotency_key, so that sending it again records nothing', async () => {
    const { client, requests, routingKey } = await organization()
    const triggers = [
      { campaign: routingKey, contact: { ...contact, first_name: 'Ana' } },
      { campaign: routingKey, contact: { phone: '020 7946 0959' } },
      { campaign: routingKey, contact: { phone: '+44 20 7946 0960' }, idempotency_key: 'application-78' },
    ]
    const results = await client.createTriggerBatch(triggers)
    assert.deepEqual(results.map((result) => result.status), [201, 422, 201])
    assert.deepEqual(results[1]!.detail?.[0]?.loc, ['body', 'contact', 'phone'])
    const sentKeys = JSON.parse(requests[0]!.body!).triggers.map((trigger: { idempotency_key: string }) => trigger.idempotency_key)
    assert.equal(sentKeys[2], 'application-78')
    assert.equal(new Set(sentKeys).size, 3)
    const replayed = await client.createTriggerBatch([triggers[2]!])
    assert.equal(replayed[0]!.replayed, true)
    assert.equal(replayed[0]!.data?.id, results[2]!.data?.id)
  })
})

describe('lists', () => {
  test('the tasks iterator pages through every task, newest first, a request a page; listTasks gives one page and its cursor', async () => {
    const { client, requests, routingKey } = await organization()
    const created = await client.createTriggerBatch(Array.from({ length: 5 }, (_, n) => ({ campaign: routingKey, contact: { phone: `+44 20 7946 09${60 + n}` } })))
    const taskIds = created.map((result) => result.data!.task_id)
    requests.length = 0
    const listed: string[] = []
    for await (const task of client.tasks({ limit: 2, campaign: routingKey })) listed.push(task.id)
    assert.deepEqual(listed, [...taskIds].reverse())
    assert.deepEqual(
      requests.map((request) => request.url.searchParams.get('before')),
      [null, taskIds[3], taskIds[1]],
    )
    const page = await client.listTasks({ limit: 3 })
    assert.equal(page.data.length, 3)
    assert.equal(page.nextCursor, taskIds[2])
    const last = await client.listTasks({ limit: 3, before: page.nextCursor })
    assert.equal(last.data.length, 2)
    assert.equal(last.nextCursor, undefined)
  })

  test('the events iterator reads every event oldest first, page after page; cancelling by ids answers the tasks cancelled', async () => {
    const { client, routingKey } = await organization()
    const ids = [{ source: 'greenhouse', type: 'candidate', value: 'C-77' }]
    const reached = await client.createTrigger({ campaign: routingKey, contact })
    await callsToTheEnd()
    const withdrawn = await client.createTrigger({ campaign: routingKey, contact, ids, not_before: new Date(now + 86_400_000).toISOString() })
    const cancelled = await client.cancelTasksByIds({ ids })
    assert.deepEqual(cancelled.map((task) => [task.id, task.outcome]), [[withdrawn.task_id, 'cancelled']])
    await assert.rejects(client.cancelTask(withdrawn.task_id), (error: ApiError) => error instanceof ConflictError && error.status === 409 && error.code === 'conflict')

    const events: string[] = []
    for await (const event of client.events({ limit: 1 })) events.push(`${event.type} ${String(event.data.task_id)}`)
    assert.deepEqual(events, [`interaction.finalized ${reached.task_id}`, `task.completed ${reached.task_id}`, `task.completed ${withdrawn.task_id}`])
    const onlyCompleted = await client.listEvents({ type: 'task.completed' })
    assert.equal(onlyCompleted.data.length, 2)
    assert.equal(onlyCompleted.nextCursor, undefined)
  })
})

describe('consent', () => {
  /** Given on the web form a day before the service's clock: a capture ahead of it is refused. */
  const onTheForm = () => ({ phone: contact.phone, source: 'web_form', captured_at: new Date(now - 86_400_000).toISOString() }) as const

  test('consents: recorded one by one and in a batch (all or none), listed by number newest first page after page, read, revoked by id and for the number', async () => {
    const { client, requests } = await organization()
    const written = await client.recordConsent({ ...onTheForm(), channel: 'voice', purpose: 'marketing', kind: 'express_written', evidence: 'form 88 at https://example.com/f/88' })
    assert.match(written.id, /^cns_/)
    assert.equal(written.phone, '+442079460958')
    assert.equal(written.status, 'active')
    assert.equal(written.evidence, 'form 88 at https://example.com/f/88')

    const refused: ApiError = await client
      .recordConsents([{ ...onTheForm(), channel: 'whatsapp', purpose: 'marketing', kind: 'whatsapp_opt_in' }, { ...onTheForm(), channel: 'voice', purpose: 'marketing', kind: 'whatsapp_opt_in' }])
      .then(() => assert.fail('recorded'), (caught) => caught)
    assert.ok(refused instanceof ValidationError)
    assert.equal(refused.status, 422)
    assert.deepEqual(refused.detail.map((issue) => issue.loc.join('.')), ['body.consents.1.kind'])
    const batch = await client.recordConsents([
      { ...onTheForm(), channel: 'whatsapp', purpose: 'marketing', kind: 'whatsapp_opt_in' },
      { ...onTheForm(), channel: 'voice', purpose: 'informational', kind: 'express' },
    ])
    assert.equal(batch.recorded, 2)
    const [optIn, express] = batch.consents
    assert.deepEqual([optIn!.kind, express!.kind], ['whatsapp_opt_in', 'express'], 'in request order')

    requests.length = 0
    const page = await client.listConsents({ phone: contact.phone, limit: 2 })
    assert.deepEqual(page.data.map((consent) => consent.id), [express!.id, optIn!.id])
    assert.equal(page.nextCursor, optIn!.id)
    const last = await client.listConsents({ phone: contact.phone, limit: 2, before: page.nextCursor })
    assert.deepEqual(last.data, [written], 'nothing refused was recorded')
    assert.equal(last.nextCursor, undefined)
    assert.deepEqual(requests.map((request) => request.url.searchParams.get('before')), [null, optIn!.id])
    assert.deepEqual(await client.getConsent(written.id), written)

    const revoked = await client.revokeConsent(written.id)
    assert.equal(revoked.status, 'revoked')
    assert.equal(revoked.revoked_by, 'api')
    assert.equal((await client.revokeConsent(written.id)).revoked_at, revoked.revoked_at, 'a second revocation keeps the first')
    assert.deepEqual(await client.revokeConsentsOfNumber({ phone: contact.phone, channel: 'whatsapp' }), { revoked: [optIn!.id] })
    assert.deepEqual(await client.revokeConsentsOfNumber({ phone: contact.phone }), { revoked: [express!.id] })
    assert.equal((await client.getConsent(express!.id)).status, 'revoked')
    await assert.rejects(client.getConsent('cns_01m8bn735m0q4qzt5yfbd0g3cn'), (error: ApiError) => error instanceof NotFoundError && error.code === 'not_found')
  })

  test('the dry run: a marketing call without consent is blocked for consent_missing, as the dispatcher then decides; allowed once express written consent is on file', async () => {
    const { client, orgId } = await organization()
    await createCampaign(service.app, orgId, { routing_key: 'offers', channel: 'voice', schedule: ALWAYS_OPEN, compliance: { purpose: 'marketing' } })
    const ask = { phone: contact.phone, channel: 'voice', campaign: 'offers' } as const
    const blocked = await client.checkContactability(ask)
    assert.equal(blocked.decision, 'blocked')
    assert.deepEqual(blocked.reasons.map((reason) => `${reason.code}:${reason.rule}`), ['consent_missing:campaign.consent'])
    assert.deepEqual(blocked.profiles, ['gb@2026-12-04'])
    // The dispatcher, at the same instant, decides what the dry run said.
    const accepted = await client.createTrigger({ campaign: 'offers', contact })
    await service.app.workers!.dispatcher.runOnce()
    const task = await client.getTask(accepted.task_id)
    assert.equal(task.outcome, 'not_permitted')
    assert.deepEqual(task.decision, blocked)
    assert.deepEqual(task.interactions, [])

    const consent = await client.recordConsent({ ...onTheForm(), channel: 'voice', purpose: 'marketing', kind: 'express_written' })
    const allowed = await client.checkContactability(ask)
    assert.equal(allowed.decision, 'allowed')
    assert.equal(allowed.not_before, null)
    assert.deepEqual(allowed.reasons.map((reason) => `${reason.code}:${reason.rule}:${reason.consent_id}`), [`consent_on_file:campaign.consent:${consent.id}`])
    // By purpose, without the campaign: an informational call needs no consent in Great Britain.
    const informational = await client.checkContactability({ phone: contact.phone, channel: 'voice', purpose: 'informational', at: new Date(now + 3_600_000).toISOString() })
    assert.deepEqual([informational.decision, informational.reasons, informational.at], ['allowed', [], new Date(now + 3_600_000).toISOString()])
  })
})

describe('errors and retries', () => {
  test('a 429 is waited out as its Retry-After says and sent again with the same Idempotency-Key; with no retries left it is a RateLimitError', async () => {
    const { client, requests, routingKey, orgId, key } = await organization({ maxRetries: 3 })
    const limited = await service.app.inject({
      method: 'PATCH',
      url: `/admin/v1/organizations/${orgId}`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { rate_limit: { per_second: 1, burst: 1 } },
    })
    assert.equal(limited.statusCode, 200, limited.body)
    // The allowance refills as real time passes, the time the SDK waits.
    clock = Date.now
    const impatient = new ConversationTriggerClient({ apiKey: key, baseUrl, maxRetries: 0 })
    const refusedAt = Date.now()
    const refused = await drainAllowance(impatient)
    assert.ok(refused instanceof RateLimitError)
    assert.equal(refused.status, 429)
    assert.equal(refused.code, 'rate_limited')
    assert.ok(refused.retryAfterSeconds !== undefined && refused.retryAfterSeconds >= 1)
    assert.ok(refused.retryAt !== undefined && refused.retryAt.getTime() >= refusedAt + refused.retryAfterSeconds * 1000, 'retryAt: now and Retry-After')
    assert.match(refused.requestId!, /^req_/)

    requests.length = 0
    const accepted = await client.createTrigger({ campaign: routingKey, contact })
    assert.match(accepted.id, /^trg_/)
    assert.ok(requests.length >= 2, 'refused at least once')
    assert.deepEqual(requests.map((request) => request.status), [...Array(requests.length - 1).fill(429), 201])
    assert.equal(new Set(requests.map((request) => request.headers.get('idempotency-key'))).size, 1)
    for (let n = 1; n < requests.length; n++) {
      const waitedMs = requests[n]!.sentAt - requests[n - 1]!.sentAt
      assert.ok(waitedMs >= Number(requests[n - 1]!.retryAfter) * 1000 - 5, `waited ${waitedMs} ms after Retry-After: ${requests[n - 1]!.retryAfter}`)
    }
  })

  test('a 422 is a ValidationError with every problem in detail, as the body lists them, sent once', async () => {
    const { client, requests, routingKey } = await organization()
    const error: ValidationError = await client.createTrigger({ campaign: routingKey, contact: { phone: '020 7946 0958' }, channel: 'fax' as 'voice' }).then(
      () => assert.fail('accepted'),
      (caught) => caught,
    )
    assert.ok(error instanceof ValidationError && error instanceof ApiError && error instanceof ConversationTriggerError)
    assert.equal(error.status, 422)
    assert.equal(error.code, 'validation_error')
    assert.deepEqual(error.detail.map((issue) => issue.loc), [['body', 'contact', 'phone'], ['body', 'channel']])
    assert.deepEqual(error.detail, (error.body as { detail: unknown }).detail)
    assert.deepEqual(error.details, error.detail)
    assert.match(error.requestId!, /^req_/)
    assert.equal(requests.length, 1)
  })

  test('a 404, a 403 and a 401 are each their own class, with their code, request id and body, and are not retried', async () => {
    const { client, requests, key } = await organization()
    await assert.rejects(client.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn', { requestId: 'lookup-7' }), (error: ApiError) => {
      assert.ok(error instanceof NotFoundError)
      assert.equal(error.status, 404)
      assert.equal(error.code, 'not_found')
      assert.equal(error.requestId, 'lookup-7')
      assert.equal((error.body as { error: { code: string } }).error.code, 'not_found')
      return true
    })
    assert.equal(requests.length, 1)
    const { client: readOnly } = await organization({}, ['triggers:read'])
    await assert.rejects(readOnly.listWebhookEndpoints(), (error: ApiError) => error instanceof PermissionError && error.status === 403 && error.code === 'forbidden')
    const revoked = new ConversationTriggerClient({ apiKey: `${key}x`, baseUrl })
    await assert.rejects(
      revoked.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn'),
      (error: ApiError) => error instanceof AuthenticationError && error.status === 401 && error.code === 'unauthorized' && /^req_/.test(error.requestId!),
    )
  })

  test('a 5xx is a ServerError: a 503 is sent again after its Retry-After, a 500 is not', async () => {
    const failing = await startReceiver()
    try {
      const attempts: Exchange[] = []
      const client = new ConversationTriggerClient({ apiKey: 'ctk_unused_key', baseUrl: failing.url, fetch: recordingFetch(attempts), maxRetries: 1 })
      failing.answer({ status: 503, headers: { 'retry-after': '0' } }, { status: 503, headers: { 'retry-after': '0' } })
      await assert.rejects(client.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn'), (error: ApiError) => {
        assert.ok(error instanceof ServerError)
        assert.deepEqual([error.status, error.code, error.retryAfterSeconds], [503, 'http_503', 0])
        return true
      })
      assert.equal(attempts.length, 2)
      attempts.length = 0
      failing.answer({ status: 500 })
      await assert.rejects(client.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn'), (error: ApiError) => error instanceof ServerError && error.status === 500)
      assert.equal(attempts.length, 1)

      // The wait before a retry ends with the caller's abort too.
      failing.answer({ status: 503, headers: { 'retry-after': '30' } })
      const startedAt = performance.now()
      await assert.rejects(client.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn', { signal: AbortSignal.timeout(200) }), AbortedError)
      assert.ok(performance.now() - startedAt < 5_000, 'not waited out')
    } finally {
      await failing.close()
    }
  })

  test('a connection that fails is tried again when the request is safe to repeat, and is a ConnectionError once the retries are spent', async () => {
    const attempts: Exchange[] = []
    const client = new ConversationTriggerClient({ apiKey: 'ctk_unused_key', baseUrl: `http://127.0.0.1:${await freePort()}`, fetch: recordingFetch(attempts), maxRetries: 1 })
    await assert.rejects(client.createTrigger({ campaign: 'screening', contact }, { requestId: 'ats-43' }), (error: ConnectionError) => {
      assert.ok(error instanceof ConnectionError && !(error instanceof TimeoutError))
      assert.equal(error.requestId, 'ats-43')
      assert.ok(error.cause instanceof Error)
      return true
    })
    assert.equal(attempts.length, 2)
    assert.equal(attempts[0]!.headers.get('idempotency-key'), attempts[1]!.headers.get('idempotency-key'))
    // Cancelling again after a lost answer could report a conflict for a cancel that was done.
    attempts.length = 0
    await assert.rejects(client.cancelTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn'), ConnectionError)
    assert.equal(attempts.length, 1)
  })

  test('a try that gets no answer within timeoutMs is abandoned and tried again, then a TimeoutError; a caller\'s abort ends the call at once, an AbortedError', async () => {
    const silent = await startReceiver()
    try {
      silent.answerAll('hang')
      const attempts: Exchange[] = []
      const client = new ConversationTriggerClient({ apiKey: 'ctk_unused_key', baseUrl: silent.url, fetch: recordingFetch(attempts), timeoutMs: 100, maxRetries: 1 })
      await assert.rejects(
        client.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn'),
        (error: TimeoutError) => error instanceof TimeoutError && error instanceof ConnectionError && /no answer within 100 ms/.test(error.message),
      )
      assert.equal(attempts.length, 2)

      attempts.length = 0
      const patient = new ConversationTriggerClient({ apiKey: 'ctk_unused_key', baseUrl: silent.url, fetch: recordingFetch(attempts) })
      const caller = new AbortController()
      const call = patient.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn', { signal: caller.signal })
      const reason = new Error('the caller gave up')
      setImmediate(() => caller.abort(reason))
      await assert.rejects(call, (error: AbortedError) => error instanceof AbortedError && error.cause === reason && /the caller gave up/.test(error.message))
      assert.equal(attempts.length, 1)

      // Aborted before it is sent: nothing goes out.
      attempts.length = 0
      await assert.rejects(patient.getTask('tsk_01m8bn735m0q4qzt5yfbd0g3cn', { signal: AbortSignal.abort() }), (error: AbortedError) => {
        assert.ok(error instanceof AbortedError && error instanceof ConversationTriggerError)
        assert.equal((error.cause as DOMException).name, 'AbortError')
        return true
      })
      assert.ok(attempts.every((attempt) => attempt.status === undefined), 'no answer read')
    } finally {
      await silent.close()
    }
  })
})

describe('webhooks', () => {
  let receiver: Receiver
  beforeEach(async () => {
    receiver = await startReceiver()
  })
  afterEach(() => receiver.close())

  test('a webhook the service sent is verified into a typed event, as standardwebhooks verifies it; tampered, unsigned or stale, it is refused', async () => {
    const { client, routingKey } = await organization()
    const endpoint = await client.createWebhookEndpoint({ url: receiver.url })
    assert.match(endpoint.secret, /^whsec_/)
    const accepted = await client.createTrigger({ campaign: routingKey, contact, ids: [{ source: 'ATS', type: 'Candidate_ID', value: 'AbC-001' }] })
    await callsToTheEnd()
    await service.app.workers!.deliverer.runOnce()
    await receiver.waitFor(2)

    const verified: WebhookEvent[] = receiver.received.map((request) => verifyWebhook(request.body, request.headers, endpoint.secret, { now }))
    const reference = new Webhook(endpoint.secret)
    for (const [n, request] of receiver.received.entries()) assert.deepEqual(verified[n], reference.verify(request.body, request.headers as Record<string, string>))
    const completed = verified.find((event) => event.type === 'task.completed')
    assert.ok(completed?.type === 'task.completed')
    // Narrowed by its type: the task.completed data, typed.
    assert.equal(completed.data.task_id, accepted.task_id)
    assert.equal(completed.data.outcome, 'reached')
    assert.deepEqual(completed.data.ids, [{ source: 'ats', type: 'candidate_id', value: 'AbC-001' }])
    assert.equal(completed.data.result?.disposition, 'interested')

    const [delivered] = receiver.received
    const { body, headers } = delivered!
    const refused = (rawBody: string, given: Record<string, unknown>, at = now) =>
      assert.throws(() => verifyWebhook(rawBody, given as Record<string, string>, endpoint.secret, { now: at }), WebhookVerificationError)
    refused(body.replace(accepted.task_id, 'tsk_01m8bn735m0q4qzt5yfbd0g3cn'), headers)
    refused(body, { ...headers, 'webhook-signature': undefined })
    refused(body, { ...headers, 'webhook-id': 'evt_another' })
    assert.throws(() => verifyWebhook(body, headers, newWebhookSecret(), { now }), WebhookVerificationError)
    const sentAt = Number(headers['webhook-timestamp']) * 1000
    assert.ok(verifyWebhook(body, headers, endpoint.secret, { now: sentAt + 300_000 }))
    refused(body, headers, sentAt + 301_000)
    refused(body, headers, sentAt - 301_000)
    assert.ok(verifyWebhook(body, headers, endpoint.secret, { now: sentAt + 3_600_000, toleranceSeconds: 3_600 }))
    // The raw bytes, and fetch's Headers, serve as well.
    assert.ok(verifyWebhook(Buffer.from(body), new Headers(headers as Record<string, string>), endpoint.secret, { now }))

    const detail = await client.getEvent(completed.id)
    assert.deepEqual(detail.deliveries.map((delivery) => [delivery.endpoint_id, delivery.status]), [[endpoint.id, 'succeeded']])
    assert.deepEqual(await client.redeliverEvent(completed.id), { endpoints: [endpoint.id] })
  })

  test('during a rotation either signature verifies; a body signed by the service\'s signing verifies as standardwebhooks verifies it', () => {
    const previous = newWebhookSecret()
    const current = newWebhookSecret()
    const body = JSON.stringify({ id: 'evt_1', type: 'webhook.test', timestamp: new Date(now).toISOString(), data: { endpoint_id: 'whe_1', message: 'hello' } })
    const timestamp = Math.floor(now / 1000)
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([current, previous], 'evt_1', timestamp, body) }
    for (const secret of [previous, current]) {
      const event = verifyWebhook(body, headers, secret, { now })
      assert.deepEqual(event, new Webhook(secret).verify(body, headers))
      assert.ok(event.type === 'webhook.test' && event.data.endpoint_id === 'whe_1')
    }
  })

  test('webhook endpoints: registered, listed, changed, tested, their secret rotated, deleted', async () => {
    const { client } = await organization()
    const created = await client.createWebhookEndpoint({ url: receiver.url, events: ['task.completed'] })
    assert.deepEqual((await client.listWebhookEndpoints()).map((endpoint) => endpoint.id), [created.id])
    assert.equal((await client.getWebhookEndpoint(created.id)).url, receiver.url)
    assert.equal((await client.updateWebhookEndpoint(created.id, { max_in_flight: 2 })).max_in_flight, 2)
    const testEvent = await client.sendTestWebhook(created.id)
    assert.equal(testEvent.type, 'webhook.test')
    const rotated = await client.rotateWebhookSecret(created.id)
    assert.notEqual(rotated.secret, created.secret)
    assert.equal((await client.getWebhookEndpointHealth(created.id)).attempts, 0)
    const since = new Date(now - 3_600_000).toISOString()
    const recovery = await client.recoverWebhookEndpoint(created.id, { since })
    assert.deepEqual([recovery.queued, recovery.since, recovery.until, recovery.next], [0, since, new Date(now).toISOString(), null])
    await client.deleteWebhookEndpoint(created.id)
    await assert.rejects(client.getWebhookEndpoint(created.id), (error: ApiError) => error.status === 404)
  })
})

const UNKNOWN_ID = 'xyz_01m8bn735m0q4qzt5yfbd0g3cn'

/**
 * A call of the client's method for each operation of the client API, by
 * operationId: an operation the document adds without one here fails the
 * test below, as does a call that sends another operation's request.
 */
const CLIENT_CALLS: Record<string, (client: ConversationTriggerClient, routingKey: string) => Promise<unknown>> = {
  getCallingKey: (client) => client.describeApiKey(),
  createTrigger: (client, campaign) => client.createTrigger({ campaign, contact }),
  createTriggerBatch: (client, campaign) => client.createTriggerBatch([{ campaign, contact }]),
  getTrigger: (client) => client.getTrigger(UNKNOWN_ID),
  getTask: (client) => client.getTask(UNKNOWN_ID),
  listTasks: (client) => client.listTasks(),
  cancelTask: (client) => client.cancelTask(UNKNOWN_ID),
  cancelTasksByIds: (client) => client.cancelTasksByIds({ ids: [{ source: 'ats', type: 'candidate', value: 'none' }] }),
  getInteraction: (client) => client.getInteraction(UNKNOWN_ID),
  reportInteractionResult: (client) => client.reportInteractionResult(UNKNOWN_ID, { summary: 'Nothing.' }),
  sendInteractionMessage: (client) => client.sendInteractionMessage(UNKNOWN_ID, { text: 'Hello' }),
  pauseCampaign: (client, routingKey) => client.pauseCampaign(routingKey),
  resumeCampaign: (client, routingKey) => client.resumeCampaign(routingKey),
  createWebhookEndpoint: (client) => client.createWebhookEndpoint({ url: 'https://example.com/hooks' }),
  listWebhookEndpoints: (client) => client.listWebhookEndpoints(),
  getWebhookEndpoint: (client) => client.getWebhookEndpoint(UNKNOWN_ID),
  updateWebhookEndpoint: (client) => client.updateWebhookEndpoint(UNKNOWN_ID, { enabled: true }),
  deleteWebhookEndpoint: (client) => client.deleteWebhookEndpoint(UNKNOWN_ID),
  rotateWebhookEndpointSecret: (client) => client.rotateWebhookSecret(UNKNOWN_ID),
  getWebhookEndpointHealth: (client) => client.getWebhookEndpointHealth(UNKNOWN_ID),
  testWebhookEndpoint: (client) => client.sendTestWebhook(UNKNOWN_ID),
  recoverWebhookEndpoint: (client) => client.recoverWebhookEndpoint(UNKNOWN_ID, { since: new Date(now - 60_000).toISOString() }),
  listEvents: (client) => client.listEvents(),
  getEvent: (client) => client.getEvent(UNKNOWN_ID),
  listTaskEvents: (client) => client.listTaskEvents(UNKNOWN_ID),
  redeliverEvent: (client) => client.redeliverEvent(UNKNOWN_ID),
  reportListenForward: (client) => client.reportListenForward(UNKNOWN_ID, { at: new Date(now).toISOString(), status_code: 200, latency_ms: 12 }),
  createSuppression: (client) => client.addSuppression(contact.phone),
  listSuppressions: (client) => client.listSuppressions(),
  getSuppression: (client) => client.getSuppression(contact.phone),
  deleteSuppression: (client) => client.removeSuppression(contact.phone),
  createConsent: (client) =>
    client.recordConsent({ phone: contact.phone, channel: 'voice', purpose: 'marketing', kind: 'express', source: 'web_form', captured_at: new Date(now - 60_000).toISOString() }),
  listConsents: (client) => client.listConsents({ phone: contact.phone }),
  createConsentBatch: (client) => client.recordConsents([]),
  getConsent: (client) => client.getConsent(UNKNOWN_ID),
  revokeConsent: (client) => client.revokeConsent(UNKNOWN_ID),
  revokeConsentsOfNumber: (client) => client.revokeConsentsOfNumber({ phone: contact.phone }),
  checkContactability: (client) => client.checkContactability({ phone: contact.phone, channel: 'voice' }),
  eraseContact: (client) => client.eraseContact({ phone: '+44 20 7946 0999' }),
  listDailyCounts: (client) => client.dailyCounts({ from: '2026-12-01', to: '2026-12-02' }),
  getReachStatistics: (client) => client.reachStatistics({ from: '2026-12-01', to: '2026-12-02' }),
}

test('every operation of the client API (sdk/openapi.json) has a client method, which sends that operation\'s method and path', async () => {
  const document = JSON.parse(await readFile(new URL('../sdk/openapi.json', import.meta.url), 'utf8')) as OpenAPI3
  const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item as Record<string, { operationId?: string }>).map(([method, operation]) => ({ method: method.toUpperCase(), path, operationId: operation.operationId! })),
  )
  assert.ok(operations.length >= 39, 'the document read has the client API')
  assert.deepEqual(Object.keys(CLIENT_CALLS).sort(), operations.map((operation) => operation.operationId).sort(), 'a call for each operation, none for an operation gone')
  const { client, requests, routingKey } = await organization({ maxRetries: 0 })
  for (const operation of operations) {
    requests.length = 0
    // Only the request matters: an error answer (404 for an unknown id...) is still the operation's.
    await CLIENT_CALLS[operation.operationId]!(client, routingKey).catch((error: unknown) => assert.ok(error instanceof ApiError, `${operation.operationId}: ${String(error)}`))
    const pathPattern = new RegExp(`^${operation.path.replace(/\{[^}]+\}/g, '[^/]+')}$`)
    assert.deepEqual(
      requests.map((request) => [request.method, pathPattern.test(request.url.pathname)]),
      [[operation.method, true]],
      `${operation.operationId} sends ${operation.method} ${operation.path}, once: ${requests.map((request) => `${request.method} ${request.url.pathname}`).join(', ')}`,
    )
  }
})

/** Spends what is left of the organization's allowance, until a request is refused: that refusal. */
async function drainAllowance(client: ConversationTriggerClient): Promise<ApiError> {
  for (;;) {
    const error = await client.describeApiKey().then(() => undefined, (caught: unknown) => caught)
    if (error !== undefined) {
      assert.ok(error instanceof ApiError)
      return error
    }
  }
}
