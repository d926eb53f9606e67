/**
 * The contact directory and test mode: a trigger with `contact` creates or
 * updates the person its ids name; one without reaches a person on file
 * through an id of a source whose contact is optional; ids that name two
 * people are refused; a test dials the tester and leaves the person on file
 * as they were. Calls go to a local Twilio, so that the number dialled is
 * read off the wire.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { bearer, json, OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'fedcba9876543210'.repeat(2)}`
const AUTH_TOKEN = 'contacts-test-twilio-token'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const admin = bearer(OPERATOR_TOKEN)

const LONDON = '+442079460958'
const MADRID = '+34912345678'
const TESTER = '+447911123456'

let service: TestService
let twilio: FakeTwilio
let orgs = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: AUTH_TOKEN } })
  const channels = createChannels(
    { publicBaseUrl: 'http://service.test', twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: 'http://127.0.0.1:9' },
    (name) => (name === 'TWILIO_AUTH_TOKEN' ? AUTH_TOKEN : undefined),
  )
  service = await startService({ channels })
})
after(async () => {
  await service.close()
  await twilio.close()
})

/** An organization whose ATS ids need a contact and whose CRM ids may stand for one, with a Twilio campaign. */
async function organization() {
  const org = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: `Org ${++orgs}` } })).data
  const key = json(await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.id}/api-keys`, headers: admin, payload: { name: 'ats' } }))
    .data.key as string
  const campaign = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.id}/campaigns`,
    headers: admin,
    payload: {
      routing_key: 'screening',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider: 'twilio',
      provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
      // The clock stands still here: at its provider's pace, a second start in one instant could wait for its sender (test/pacing.test.ts).
      pacing: { per_second: 1_000_000 },
    },
  })
  assert.equal(campaign.statusCode, 201, campaign.body)
  for (const source of [
    { name: 'ats', id_types: ['candidate'], contact: 'required' },
    { name: 'crm', id_types: ['lead'], contact: 'optional' },
  ]) {
    const created = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${org.id}/sources`, headers: admin, payload: source })
    assert.equal(created.statusCode, 201, created.body)
  }
  const post = (payload: object) =>
    service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: { campaign: 'screening', ...payload },
    })
  const get = async (url: string) => {
    const response = await service.app.inject({ method: 'GET', url, headers: bearer(key) })
    assert.equal(response.statusCode, 200, response.body)
    return json(response).data
  }
  /** Posts a trigger that must be accepted, and returns its task. */
  const accepted = async (payload: object) => {
    const response = await post(payload)
    assert.equal(response.statusCode, 201, response.body)
    return get(`/api/v2/tasks/${json(response).data.task_id}`)
  }
  return { orgId: org.id as string, post, get, accepted }
}

type Organization = Awaited<ReturnType<typeof organization>>

const lead = (value: string) => ({ source: 'CRM', type: 'Lead', value })
const candidate = (value: string) => ({ source: 'ats', type: 'candidate', value })

/**
 * The number Twilio was asked to call for each task, after one round of the
 * dispatcher. A call names its interaction (in its status callback URL), and
 * the task lists its interactions.
 */
async function dialled(org: Organization, taskIds: string[]): Promise<string[]> {
  const before = twilio.requests.length
  await service.app.workers!.dispatcher.runOnce()
  const calls = twilio.requests.slice(before).filter((request) => request.method === 'POST')
  return Promise.all(
    taskIds.map(async (taskId) => {
      const [interaction] = (await org.get(`/api/v2/tasks/${taskId}`)).interactions
      const call = calls.find((request) => request.form.get('StatusCallback')?.endsWith(`/${interaction.id}/status`))
      assert.ok(call, `no call for ${taskId}`)
      return call.form.get('To')!
    }),
  )
}

describe('the contact directory', () => {
  test('a trigger without contact reaches the person on file through an optional source, as last updated', async () => {
    const org = await organization()
    const first = await org.accepted({
      ids: [candidate('C-1'), lead('L-1')],
      contact: { first_name: 'Ana', last_name: 'García', phone: '+44 20 7946 0958', language: 'es' },
    })

    const reached = await org.accepted({ ids: [lead('L-1')] })
    assert.deepEqual(reached.contact, { first_name: 'Ana', last_name: 'García', phone: LONDON, language: 'es' })
    assert.equal(reached.timezone, 'Europe/London')
    const trigger = await org.get(`/api/v2/triggers/${reached.trigger_id}`)
    assert.equal(trigger.contact, null)
    assert.deepEqual(trigger.ids, [{ source: 'crm', type: 'lead', value: 'L-1' }])

    // Fields sent replace the stored ones, fields left out stay; new ids join the same person.
    const moved = await org.accepted({ ids: [candidate('C-1'), lead('L-2')], contact: { phone: '+34 912 34 56 78', email: 'Ana@Example.COM' } })
    const updated = await org.accepted({ ids: [lead('L-2')] })
    assert.deepEqual(updated.contact, { first_name: 'Ana', last_name: 'García', phone: MADRID, email: 'Ana@example.com', language: 'es' })
    assert.equal(updated.timezone, 'Europe/Madrid')
    // A task keeps the person as they were when its trigger was accepted.
    assert.equal((await org.get(`/api/v2/tasks/${reached.id}`)).contact.phone, LONDON)

    assert.deepEqual(await dialled(org, [reached.id, updated.id]), [LONDON, MADRID])
    // Found by the number each task reached, its trigger's contact or the one on file.
    const byPhone = async (phone: string) => (await org.get(`/api/v2/tasks?phone=${encodeURIComponent(phone)}`)).map((task: any) => task.id)
    assert.deepEqual(await byPhone(LONDON), [reached.id, first.id])
    assert.deepEqual(await byPhone(MADRID), [updated.id, moved.id])

    // A task's row keeps the contact only where it is not its trigger's as sent (migration 040): the first
    // trigger's contact is whole as sent, the others are as on file, with or without fields sent merged over.
    const kept = await service.db.query<{ id: string; kept: boolean }>('SELECT id, contact IS NOT NULL AS kept FROM tasks WHERE id = ANY($1::text[])', [
      [first.id, reached.id, moved.id, updated.id],
    ])
    assert.deepEqual(Object.fromEntries(kept.map((row) => [row.id, row.kept])), { [first.id]: false, [reached.id]: true, [moved.id]: true, [updated.id]: true })
  })

  test('without contact, a trigger is refused when no id of an optional source names a person on file', async () => {
    const org = await organization()
    await org.accepted({ ids: [candidate('C-7'), lead('L-7')], contact: { phone: LONDON } })
    for (const ids of [[candidate('C-7')], [lead('L-unknown')], [candidate('C-7'), lead('L-unknown')], []]) {
      const refused = await org.post({ ids })
      assert.equal(refused.statusCode, 422, refused.body)
      const normalized = ids.map((id) => ({ ...id, source: id.source.toLowerCase(), type: id.type.toLowerCase() }))
      assert.deepEqual(json(refused).detail, [
        { type: 'missing', loc: ['body', 'contact'], msg: 'Field required', input: { campaign: 'screening', ids: normalized } },
      ])
    }
    // Among the body's other problems, the missing contact is reported in field order.
    const refused = await org.post({ ids: [{ source: 'crm', type: 'nope', value: 'L-7' }], contact: null, test_mode: 'maybe' })
    assert.deepEqual(
      json(refused).detail.map((entry: { type: string; loc: unknown[] }) => [entry.type, entry.loc]),
      [
        ['value_error', ['body', 'ids', 0, 'type']],
        ['missing', ['body', 'contact']],
        ['bool_parsing', ['body', 'test_mode']],
      ],
    )
  })

  test('ids that name two people on file are refused, with or without contact, and record nothing', async () => {
    const org = await organization()
    await org.accepted({ ids: [lead('L-1'), candidate('C-1')], contact: { first_name: 'Ana', phone: LONDON } })
    await org.accepted({ ids: [lead('L-2')], contact: { first_name: 'Bo', phone: MADRID } })
    const ids = [lead('L-1'), candidate('C-9'), lead('L-2'), candidate('C-1')]
    for (const payload of [{ ids, contact: { phone: LONDON } }, { ids }]) {
      const refused = await org.post(payload)
      assert.equal(refused.statusCode, 422, refused.body)
      const [entry, ...rest] = json(refused).detail
      assert.equal(rest.length, 0)
      assert.equal(entry.type, 'value_error')
      assert.deepEqual(entry.loc, ['body', 'ids'])
      assert.equal(
        entry.msg,
        'Value error, the ids name 2 different contacts on file: ids[0] and ids[3] name one, ids[2] another; send the ids of one person only',
      )
    }
    assert.deepEqual(await org.get('/api/v2/tasks?source=ats&type=candidate&value=C-9'), [])
    // C-9 was not linked to anyone by the refused triggers.
    const refused = await org.post({ ids: [{ source: 'crm', type: 'lead', value: 'L-3' }, candidate('C-9')] })
    assert.deepEqual(json(refused).detail[0].loc, ['body', 'contact'])
  })

  test('one person triggered many times at once is one contact on file', async () => {
    const org = await organization()
    // Enough that on PostgreSQL they fall into overlapping commits as well as into one.
    const names = ['Ana', 'Bea', 'Cai', 'Dan', 'Eli', 'Fay', 'Gus', 'Hal', 'Ida', 'Jo', 'Kai', 'Lea', 'Max', 'Ned', 'Oli', 'Pia', 'Quy', 'Ros', 'Sam', 'Tom']
    const responses = await Promise.all(
      names.map((first_name) => org.post({ ids: [lead('L-50'), candidate(`C-${first_name}`)], contact: { first_name, phone: LONDON } })),
    )
    assert.deepEqual(
      responses.map((response) => response.statusCode),
      names.map(() => 201),
    )
    const rows = await service.db.query<{ contacts: number; links: number }>(
      `SELECT count(DISTINCT contact_id)::int AS contacts, count(*)::int AS links FROM contact_ids WHERE org_id = $1`,
      [org.orgId],
    )
    assert.deepEqual(rows, [{ contacts: 1, links: names.length + 1 }])
    const reached = await org.accepted({ ids: [lead('L-50')] })
    assert.ok(names.includes(reached.contact.first_name))
  })

  test('a person triggered again with the fields on file is left as is; a changed field is merged in', async () => {
    const org = await organization()
    const onFile = async () => {
      const rows = await service.db.query<{ version: string; fields: Record<string, string>; updated_at: Date }>(
        'SELECT xmin::text AS version, fields, updated_at FROM contacts WHERE org_id = $1',
        [org.orgId],
      )
      assert.equal(rows.length, 1)
      return { ...rows[0]!, updated_at: rows[0]!.updated_at.toISOString() }
    }
    const createdAt = async (task: { trigger_id: string }) => (await org.get(`/api/v2/triggers/${task.trigger_id}`)).created_at as string
    const contact = { first_name: 'Ana', phone: LONDON, language: 'es' }

    const first = await org.accepted({ ids: [candidate('C-7')], contact })
    const created = await onFile()
    assert.equal(created.updated_at, await createdAt(first))

    await org.accepted({ ids: [candidate('C-7')], contact: { phone: LONDON, first_name: 'Ana' } })
    assert.deepEqual(await onFile(), created, 'the same fields again write no new row version')

    const changed = await org.accepted({ ids: [candidate('C-7')], contact: { phone: LONDON, first_name: 'Anna' } })
    const updated = await onFile()
    assert.notEqual(updated.version, created.version)
    assert.deepEqual(updated.fields, { ...contact, first_name: 'Anna' })
    assert.equal(updated.updated_at, await createdAt(changed))
  })

  test("a contact sent without a zone is scheduled in the person's zone on file, not in every zone of the number's country", async () => {
    const org = await organization()
    // Russia spans eleven zones.
    const phone = '+7 912 345 67 89'
    const unknown = await org.accepted({ ids: [lead('L-1')], contact: { phone } })
    assert.equal(unknown.candidate_timezones.length, 11)
    assert.equal(unknown.timezone_source, 'country')

    await org.accepted({ ids: [lead('L-1')], contact: { phone, timezone: 'Asia/Yekaterinburg' } })
    const later = await org.accepted({ ids: [candidate('C-1'), lead('L-1')], contact: { first_name: 'Olga', phone: '+7 912 345 67 90' } })
    assert.deepEqual([later.candidate_timezones, later.timezone_source, later.timezone], [['Asia/Yekaterinburg'], 'on_file', 'Asia/Yekaterinburg'])
    assert.deepEqual(later.contact, { first_name: 'Olga', phone: '+79123456790', timezone: 'Asia/Yekaterinburg' })

    // A test never reaches the person on file, so their zone is not the tester's.
    const test = await org.accepted({ ids: [lead('L-1')], contact: { phone }, test_mode: true })
    assert.equal(test.timezone_source, 'country')
    // Ids of two people are refused as such.
    await org.accepted({ ids: [lead('L-2')], contact: { phone: LONDON } })
    const two = await org.post({ ids: [lead('L-1'), lead('L-2')], contact: { phone } })
    assert.deepEqual(json(two).detail.map((entry: { loc: unknown[] }) => entry.loc), [['body', 'ids']])
  })

  test('a trigger without ids leaves the directory alone', async () => {
    const org = await organization()
    await org.accepted({ contact: { first_name: 'Ana', phone: LONDON } })
    const rows = await service.db.query<{ count: number }>('SELECT count(*)::int AS count FROM contacts WHERE org_id = $1', [org.orgId])
    assert.deepEqual(rows, [{ count: 0 }])
  })
})

describe('test mode', () => {
  test("dials the tester's phone; the person on file stays as they were; the test is marked everywhere", async () => {
    const org = await organization()
    await org.accepted({ ids: [lead('L-1')], contact: { first_name: 'Ana', phone: LONDON, language: 'es' } })

    const test = await org.accepted({ ids: [lead('L-1'), lead('L-new')], contact: { first_name: 'Tess', phone: '+44 7911 123456' }, test_mode: true })
    assert.equal(test.test_mode, true)
    assert.deepEqual(test.contact, { first_name: 'Tess', phone: TESTER })
    assert.equal((await org.get(`/api/v2/triggers/${test.trigger_id}`)).test_mode, true)

    const real = await org.accepted({ ids: [lead('L-1')] })
    assert.equal(real.test_mode, false)
    assert.deepEqual(real.contact, { first_name: 'Ana', phone: LONDON, language: 'es' })
    // The test linked no id: L-new names nobody.
    assert.deepEqual(json(await org.post({ ids: [lead('L-new')] })).detail[0].loc, ['body', 'contact'])

    assert.deepEqual(await dialled(org, [test.id, real.id]), [TESTER, LONDON])
    const [listed] = await org.get(`/api/v2/tasks?source=crm&type=lead&value=L-new`)
    assert.equal(listed.test_mode, true)
    assert.equal(listed.interactions[0].test_mode, true)
  })

  test("needs the tester's contact, even when the ids name a person on file", async () => {
    const org = await organization()
    await org.accepted({ ids: [lead('L-1')], contact: { phone: LONDON } })
    const refused = await org.post({ ids: [lead('L-1')], test_mode: true })
    assert.equal(refused.statusCode, 422)
    assert.deepEqual(json(refused).detail.map((entry: { loc: unknown[] }) => entry.loc), [['body', 'contact']])
  })
})

