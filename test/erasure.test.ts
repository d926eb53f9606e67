/**
 * Erasure on request: a person's name, number, email and context leave every
 * table; their tasks stay, counted, with their outcomes and the client's ids;
 * a suppression of their number keeps working from a digest. (What retention
 * deletes: test/history.test.ts.)
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { matchesPhoneHashKey } from '../src/store/phoneHashKey.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, freshDatabase, json, OPERATOR_TOKEN, startService, tablesHolding, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const DAY_MS = 86_400_000
const admin = bearer(OPERATOR_TOKEN)

let service: TestService
let receiver: Receiver
let orgId: string
let key: string
let keyId: string
/** A conversation app's key. */
let resultKey: string
let now = Date.parse('2026-11-02T10:00:00Z')

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
  receiver = await startReceiver()
  orgId = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Clinic' } })).data.id
  const issued = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/api-keys`,
      headers: admin,
      payload: { name: 'scheduler', scopes: ['triggers:write', 'triggers:read', 'suppressions:manage', 'contacts:erase'] },
    }),
  ).data
  key = issued.key
  keyId = issued.id
  resultKey = json(
    await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: admin, payload: { name: 'voice app', scopes: ['conversations:write'] } }),
  ).data.key
  const campaign = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/campaigns`,
    headers: admin,
    payload: { routing_key: 'reminder', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 1000 } },
  })
  assert.equal(campaign.statusCode, 201, campaign.body)
  await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: receiver.url } })
})
after(async () => {
  await service.close()
  await receiver.close()
})

interface Person {
  id: string
  firstName: string
  lastName: string
  email: string
  phone: string
  /** The number as E.164, and its national digits. */
  e164: string
  digits: string
}

async function trigger(person: Person, options: { id?: string; notBefore?: string; context?: object } = {}) {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: {
      campaign: 'reminder',
      ids: [{ source: 'EHR', type: 'Patient', value: options.id ?? person.id }],
      contact: { first_name: person.firstName, last_name: person.lastName, phone: person.phone, email: person.email },
      context: options.context ?? { note: `allergy-${person.id}` },
      ...(options.notBefore === undefined ? {} : { not_before: options.notBefore }),
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data as { id: string; task_id: string }
}

/** Runs the workers until the calls started have ended and every webhook is sent. */
async function runPipeline() {
  for (let round = 0; round < 3; round++) {
    await service.app.workers!.dispatcher.runOnce()
    now += 2_000
    await service.app.workers!.dispatcher.runOnce()
    await service.app.workers!.deliverer.runOnce()
  }
}

const task = async (id: string) => json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(key) })).data

const erase = (payload: object, token = key, prefix = '/api/v2') =>
  service.app.inject({ method: 'POST', url: `${prefix}/contacts/erase`, headers: bearer(token), payload })

describe('erasing a person on request', () => {
  const zoe: Person = {
    id: 'P-7731',
    firstName: 'Zoltanne',
    lastName: 'Quillfeather',
    email: 'zoltanne.q@mailbox.example',
    phone: '+44 20 7946 0817',
    e164: '+442079460817',
    digits: '2079460817',
  }
  const other: Person = {
    id: 'P-1002',
    firstName: 'Barnaby',
    lastName: 'Oakenshaw',
    email: 'barnaby@mailbox.example',
    phone: '+44 20 7946 0818',
    e164: '+442079460818',
    digits: '2079460818',
  }

  test('by id: open tasks cancelled, no table holds the name, number or email, the ids and counts stay, the suppression holds', async () => {
    const completed = await trigger(zoe)
    // The same person under another of the client's ids, reached by the number.
    const sameNumber = await trigger(zoe, { id: 'P-7731-old' })
    await runPipeline()
    assert.equal((await task(completed.task_id)).outcome, 'reached')
    const open = await trigger(zoe, { notBefore: new Date(now + 3 * DAY_MS).toISOString() })
    const bystander = await trigger(other)
    await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: zoe.phone } })
    for (const needle of [zoe.e164, zoe.firstName, zoe.email]) assert.ok((await tablesHolding(service.db, needle)).length > 0, needle)
    const webhooksBefore = receiver.received.length

    const response = await erase({ id: { source: 'ehr', type: 'patient', value: zoe.id } })
    assert.equal(response.statusCode, 200, response.body)
    const report = json(response).data
    assert.deepEqual({ ...report, erased_at: undefined }, { tasks: 3, cancelled: 1, contacts: 2, interactions: 2, suppressions: 1, consents: 0, erased_at: undefined })
    assert.equal(report.erased_at, new Date(now).toISOString())

    for (const needle of [zoe.e164, zoe.digits, zoe.firstName, zoe.lastName, zoe.email, `allergy-${zoe.id}`]) {
      assert.deepEqual(await tablesHolding(service.db, needle), [], `no table holds ${needle}`)
    }
    assert.ok((await tablesHolding(service.db, other.e164)).includes('triggers'), 'another person is left as they were')
    assert.equal((await task(bystander.task_id)).contact.first_name, other.firstName)

    // The tasks stay, with their outcomes, the list counts them, and the cancelled one is reported by its ids.
    const erased = await task(completed.task_id)
    assert.equal(erased.outcome, 'reached')
    assert.equal(erased.contact, null)
    assert.equal((await task(open.task_id)).outcome, 'cancelled')
    assert.equal((await task(sameNumber.task_id)).status, 'completed')
    const listed = json(await service.app.inject({ method: 'GET', url: '/api/v2/tasks?source=ehr&type=patient&value=P-7731', headers: bearer(key) })).data
    assert.deepEqual(listed.map((each: { id: string }) => each.id).sort(), [completed.task_id, open.task_id].sort())
    await service.app.workers!.deliverer.runOnce()
    const sent = receiver.received.map((request) => JSON.parse(request.body))
    const cancelled = sent.slice(webhooksBefore).find((event) => event.data.task_id === open.task_id)
    assert.equal(cancelled.data.outcome, 'cancelled')
    assert.deepEqual(cancelled.data.ids, [{ source: 'ehr', type: 'patient', value: zoe.id }])
    const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${completed.task_id}/events`, headers: bearer(key) }))
    assert.ok(
      JSON.stringify(events).includes(zoe.id),
      'the events already sent keep the client ids',
    )

    // Still suppressed, by digest: the number sent again never dials.
    const suppressed = json(await service.app.inject({ method: 'GET', url: '/api/v2/suppressions/%2B442079460817', headers: bearer(key) })).data
    assert.match(suppressed.phone, /^sha256:[0-9a-f]{64}$/)
    const pagedPast = await service.app.inject({ method: 'GET', url: `/api/v2/suppressions?after=${suppressed.phone}`, headers: bearer(key) })
    assert.equal(pagedPast.statusCode, 200, 'a page that ends on a digest is paged past')
    const addedAgain = await service.app.inject({ method: 'POST', url: '/api/v2/suppressions', headers: bearer(key), payload: { phone: zoe.phone } })
    assert.equal(json(addedAgain).data.phone, suppressed.phone, 'suppressed again, the number stays a digest')
    assert.deepEqual(await tablesHolding(service.db, zoe.e164), [])
    const again = await trigger(zoe, { id: 'P-7731-new' })
    await service.app.workers!.dispatcher.runOnce()
    const refused = await task(again.task_id)
    assert.equal(refused.outcome, 'opted_out')
    assert.equal(refused.interactions.length, 0)

    // Recorded, with who asked and what was found, and no number.
    const audit = json(await service.app.inject({ method: 'GET', url: `/admin/v1/audit-log?organization_id=${orgId}`, headers: admin })).data
    const entry = audit.find((each: { action: string }) => each.action === 'contact.erased')
    assert.deepEqual(
      { actor: entry.actor, target: entry.target, details: entry.details },
      { actor: keyId, target: 'ehr/patient/P-7731', details: { by: 'id', tasks: 3, cancelled: 1, contacts: 2, interactions: 2, suppressions: 1, consents: 0 } },
    )
    const suppressionEntry = audit.find((each: { action: string }) => each.action === 'suppression.added')
    assert.match(suppressionEntry.target, /^sha256:/, 'the suppression entry keeps the digest, not the number')

    // Found again by the ids their triggers keep, nothing of theirs is left to erase.
    const twice = json(await erase({ id: { source: 'ehr', type: 'patient', value: zoe.id } })).data
    assert.deepEqual({ ...twice, erased_at: undefined }, { tasks: 0, cancelled: 0, contacts: 0, interactions: 0, suppressions: 0, consents: 0, erased_at: undefined })
  })

  test('by number, by the operator; asking twice answers zeros; a trigger without a contact then finds no one on file', async () => {
    const person: Person = { ...zoe, id: 'P-2001', firstName: 'Wilhelmina', phone: '+44 20 7946 0901', e164: '+442079460901', digits: '2079460901' }
    const first = await trigger(person)
    await runPipeline()
    const response = await erase({ phone: '+44 (0)20 7946 0901' }, OPERATOR_TOKEN, `/admin/v1/organizations/${orgId}`)
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual({ ...json(response).data, erased_at: undefined }, { tasks: 1, cancelled: 0, contacts: 1, interactions: 1, suppressions: 0, consents: 0, erased_at: undefined })
    for (const needle of [person.e164, person.digits, person.firstName]) assert.deepEqual(await tablesHolding(service.db, needle), [], needle)
    assert.equal((await task(first.task_id)).outcome, 'reached')
    const twice = json(await erase({ phone: person.phone })).data
    assert.deepEqual({ ...twice, erased_at: undefined }, { tasks: 0, cancelled: 0, contacts: 0, interactions: 0, suppressions: 0, consents: 0, erased_at: undefined })

    const withoutContact = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: bearer(key),
      payload: { campaign: 'reminder', ids: [{ source: 'EHR', type: 'Patient', value: person.id }] },
    })
    assert.equal(withoutContact.statusCode, 422, 'the contact on file was erased')

    const audit = json(await service.app.inject({ method: 'GET', url: `/admin/v1/audit-log?organization_id=${orgId}&limit=2`, headers: admin })).data
    assert.equal(audit[1].actor, 'operator')
    assert.match(audit[1].target, /^sha256:[0-9a-f]{64}$/)
  })

  test("a conversation's result: its summary, data, transcript and links leave every table, events included; its disposition and the ids stay", async () => {
    const said = {
      summary: 'Grizelda-summary: prefers mornings, ankle still sore',
      data: { medication: 'Grizelda-data-ibuprofen' },
      transcript: [
        { role: 'agent', text: 'Hello, is this about your ankle?' },
        { role: 'contact', text: 'Grizelda-transcript: yes, it still hurts' },
      ],
      transcript_url: 'https://transcripts.example.com/Grizelda-transcript-url',
      recording_url: 'https://recordings.example.com/Grizelda-recording-url',
      disposition: 'rebook',
    }
    const campaign = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/campaigns`,
      headers: admin,
      payload: { routing_key: 'follow-up', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 1000 }, results: { wait_s: 600 } },
    })
    assert.equal(campaign.statusCode, 201, campaign.body)
    const person: Person = { ...zoe, id: 'P-3001', firstName: 'Grizelda', phone: '+44 20 7946 0911', e164: '+442079460911', digits: '2079460911' }
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: bearer(key),
      payload: { campaign: 'follow-up', ids: [{ source: 'EHR', type: 'Patient', value: person.id }], contact: { first_name: person.firstName, phone: person.phone } },
    })
    assert.equal(response.statusCode, 201, response.body)
    const created = json(response).data
    await runPipeline()
    // The call is over and waits for its result, which the conversation's app reports.
    const [waiting] = (await task(created.task_id)).interactions
    assert.equal(waiting.status, 'ended')
    const reported = await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${waiting.id}/result`, headers: bearer(resultKey), payload: said })
    assert.equal(reported.statusCode, 200, reported.body)
    await service.app.workers!.deliverer.runOnce()
    const needles = ['Grizelda-summary', 'Grizelda-data', 'Grizelda-transcript', 'Grizelda-recording-url']
    for (const needle of needles) assert.deepEqual(await tablesHolding(service.db, needle), ['events', 'interactions'], `${needle} before`)
    const sent = receiver.received.map((request) => JSON.parse(request.body)).filter((event) => event.data.task_id === created.task_id)
    assert.equal(sent.length, 2)
    assert.ok(sent.every((event) => event.data.result.summary === said.summary), 'the webhooks carried the result')

    assert.equal((await erase({ id: { source: 'ehr', type: 'patient', value: person.id } })).statusCode, 200)
    for (const needle of [...needles, person.e164, person.firstName]) assert.deepEqual(await tablesHolding(service.db, needle), [], `no table holds ${needle}`)
    const erased = (await task(created.task_id)).interactions[0].result
    assert.deepEqual(
      { ...erased, received_at: undefined },
      { disposition: 'rebook', summary: null, data: null, transcript: null, transcript_url: null, recording_url: null, callback_at: null, opt_out: false, received_at: undefined },
    )
    const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${created.task_id}/events`, headers: bearer(key) })).data
    assert.deepEqual(
      events.map((event: any) => [event.type, event.data.result.disposition, event.data.result.summary, event.data.ids[0].value]),
      [
        ['interaction.finalized', 'rebook', null, person.id],
        ['task.completed', 'rebook', null, person.id],
      ],
    )
    // Its person erased, an interaction takes no result any more.
    const late = await service.app.inject({
      method: 'POST',
      url: `/api/v2/interactions/${waiting.id}/result`,
      headers: bearer(resultKey),
      payload: { summary: 'Grizelda-late' },
    })
    assert.equal(late.statusCode, 409, late.body)
    assert.deepEqual(await tablesHolding(service.db, 'Grizelda-late'), [])
  })

  test('one of id and phone, valid; the scope contacts:erase', async () => {
    for (const payload of [{}, { id: { source: 'ehr', type: 'patient', value: 'x' }, phone: '+442079460001' }]) {
      const response = await erase(payload)
      assert.equal(response.statusCode, 422)
      assert.deepEqual(json(response).detail[0].loc, ['body'])
    }
    const badPhone = await erase({ phone: '020 7946 0001' })
    assert.deepEqual(json(badPhone).detail[0].loc, ['body', 'phone'])
    const withoutScope = json(await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: admin, payload: { name: 'x' } })).data.key
    assert.equal((await erase({ phone: '+442079460001' }, withoutScope)).statusCode, 403)
  })
})

test('the phone hash key: processes starting together on a new database agree on it; another key is refused', async () => {
  const database = await freshDatabase()
  try {
    const key = Buffer.from('phone-hash-key-of-this-database-0123456789')
    // On PostgreSQL each call takes a connection of the pool: they run at once.
    assert.deepEqual(await Promise.all([1, 2, 3, 4].map(() => matchesPhoneHashKey(database.db, key, now))), [true, true, true, true])
    assert.equal(await matchesPhoneHashKey(database.db, Buffer.from('another-phone-hash-key-0123456789abcdef'), now), false)
    assert.equal(await matchesPhoneHashKey(database.db, key, now), true)
  } finally {
    await database.drop()
  }
})
