/** Campaign settings on the admin API: defaults, 422s in pydantic's shape, and PATCH. */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
let routingKeys = 0

before(async () => {
  service = await startService()
  org = await seedOrganization(service.app)
})
after(() => service.close())

const create = (body: Record<string, unknown>, headers = bearer(OPERATOR_TOKEN)) =>
  service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/campaigns`,
    headers,
    payload: { routing_key: `settings-${++routingKeys}`, channel: 'voice', ...body },
  })

const patch = (id: string, body: unknown, headers = bearer(OPERATOR_TOKEN)) =>
  service.app.inject({ method: 'PATCH', url: `/admin/v1/organizations/${org.orgId}/campaigns/${id}`, headers, payload: body as object })

const locs = (response: Awaited<ReturnType<typeof create>>) => json(response).detail.map((entry: any) => [entry.type, entry.loc.join('.')])

const TWILIO = { account_sid: `AC${'a'.repeat(32)}`, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' }

test('a campaign created with no settings gets the documented defaults', async () => {
  const response = await create({})
  assert.equal(response.statusCode, 201)
  const { data } = json(response)
  assert.deepEqual(data.schedule, {
    timezone: 'contact',
    windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '20:00' }],
  })
  assert.deepEqual(data.attempts, {
    max: 3,
    retry_delays_s: { no_answer: 7200, busy: 900, voicemail: 14400, failed: 1800 },
    expire_after_s: 604800,
  })
  assert.equal(data.provider, 'simulator')
  assert.deepEqual(data.provider_config, {})
  assert.equal(data.max_concurrent, null)
  assert.equal(data.updated_at, data.created_at)
})

test('settings are kept as sent, attempts completed with defaults', async () => {
  const schedule = {
    timezone: 'Europe/Berlin',
    fallback_timezone: 'Europe/London',
    windows: [{ days: ['sat'], start: '10:00', end: '24:00' }],
    blackout_dates: ['2026-12-25'],
    starts_at: '2026-12-01T00:00:00Z',
    ends_at: '2027-01-31T00:00:00+01:00',
  }
  const response = await create({ schedule, attempts: { max: 5, retry_delays_s: { busy: 60 } }, provider: 'twilio', provider_config: TWILIO, max_concurrent: 10 })
  assert.equal(response.statusCode, 201, response.body)
  const { data } = json(response)
  assert.deepEqual(data.schedule, schedule)
  assert.deepEqual(data.attempts, { max: 5, retry_delays_s: { no_answer: 7200, busy: 60, voicemail: 14400, failed: 1800 }, expire_after_s: 604800 })
  assert.deepEqual(data.provider_config, TWILIO)
  assert.equal(data.max_concurrent, 10)
})

test('structural problems: every one at once, in pydantic v2 types', async () => {
  const response = await create({
    schedule: { timezone: 'contact', windows: [{ days: ['mon', 'funday'], start: 9, end: '20:00', extra: true }], color: 'red' },
    attempts: { max: 0, retry_delays_s: { no_answer: 1.5, ringing: 3 }, expire_after_s: 'a week' },
    provider: 'vonage',
    max_concurrent: 'many',
  })
  assert.equal(response.statusCode, 422)
  assert.deepEqual(locs(response), [
    ['literal_error', 'body.schedule.windows.0.days.1'],
    ['string_type', 'body.schedule.windows.0.start'],
    ['extra_forbidden', 'body.schedule.windows.0.extra'],
    ['extra_forbidden', 'body.schedule.color'],
    ['greater_than_equal', 'body.attempts.max'],
    ['int_from_float', 'body.attempts.retry_delays_s.no_answer'],
    ['extra_forbidden', 'body.attempts.retry_delays_s.ringing'],
    ['int_parsing', 'body.attempts.expire_after_s'],
    ['literal_error', 'body.provider'],
    ['int_parsing', 'body.max_concurrent'],
  ])
  const [first] = json(response).detail
  assert.equal(first.msg, "Input should be 'mon', 'tue', 'wed', 'thu', 'fri', 'sat' or 'sun'")
})

test("every problem of a schedule at once (an unknown zone and day, 25:00, an end before its start), with the body's others", async () => {
  const response = await create({
    schedule: {
      timezone: 'Mars/Olympus',
      windows: [
        { days: ['mon', 'funday'], start: '25:00', end: '20:00' },
        { days: ['tue', 'caturday'], start: '18:00', end: '09:00' },
        { days: [], start: '10:00', end: '11:00' },
      ],
      blackout_dates: ['2026-02-30'],
      starts_at: 'tomorrow',
    },
    max_concurrent: 'many',
  })
  assert.equal(response.statusCode, 422)
  const detail = json(response).detail
  assert.deepEqual(
    detail.map((entry: any) => [entry.type, entry.loc.join('.')]),
    [
      ['value_error', 'body.schedule.timezone'],
      ['literal_error', 'body.schedule.windows.0.days.1'],
      ['value_error', 'body.schedule.windows.0.start'],
      ['literal_error', 'body.schedule.windows.1.days.1'],
      ['value_error', 'body.schedule.windows.1.end'],
      ['value_error', 'body.schedule.windows.2.days'],
      ['value_error', 'body.schedule.blackout_dates.0'],
      ['value_error', 'body.schedule.starts_at'],
      ['int_parsing', 'body.max_concurrent'],
    ],
  )
  assert.equal(detail[0].msg, 'Value error, timezone must be "contact" or an IANA time zone such as Europe/Berlin')
  assert.equal(detail[2].msg, 'Value error, start must be a time from 00:00 to 23:59')
  assert.equal(detail[2].input, '25:00')
  assert.equal(detail[4].msg, 'Value error, end must be after start')
  assert.equal(detail[4].input, '09:00')
  assert.equal(detail[5].msg, 'Value error, days must name at least one day')

  const relations = await create({
    schedule: { timezone: 'Bad/Zone', windows: [], starts_at: '2026-06-02T00:00:00Z', ends_at: '2026-06-01T00:00:00Z' },
  })
  assert.deepEqual(locs(relations), [
    ['value_error', 'body.schedule.timezone'],
    ['value_error', 'body.schedule.windows'],
    ['value_error', 'body.schedule.ends_at'],
  ])
})

test('meaningful problems: a provider that does not serve the channel, its config (checked once the rest of the body is valid)', async () => {
  const response = await create({
    provider: 'twilio',
    provider_config: { account_sid: 'AC123', answer_url: 'http://insecure.example.com' },
  })
  assert.equal(response.statusCode, 422)
  assert.deepEqual(locs(response), [
    ['value_error', 'body.provider_config.account_sid'],
    ['missing', 'body.provider_config.from'],
    ['value_error', 'body.provider_config.answer_url'],
  ])

  const wrongChannel = await create({ channel: 'whatsapp', provider: 'twilio', provider_config: TWILIO })
  assert.equal(wrongChannel.statusCode, 422)
  assert.deepEqual(json(wrongChannel).detail[0].loc, ['body', 'provider'])
  assert.equal(json(wrongChannel).detail[0].msg, 'Value error, provider twilio does not serve the whatsapp channel')
})

test('the simulator checks its outcomes against the channel', async () => {
  const response = await create({ channel: 'whatsapp', provider_config: { outcomes: ['replied', 'busy'], duration_ms: -1 } })
  assert.equal(response.statusCode, 422)
  assert.deepEqual(locs(response), [
    ['literal_error', 'body.provider_config.outcomes.1'],
    ['greater_than_equal', 'body.provider_config.duration_ms'],
  ])
  assert.equal(json(response).detail[0].msg, "Input should be 'replied', 'read', 'delivered', 'undelivered' or 'failed'")
})

test('PATCH replaces the fields sent and keeps the others; null max_concurrent removes the limit', async () => {
  const created = json(await create({ max_concurrent: 3, context: { company: 'Acme' } })).data
  const changed = await patch(created.id, { schedule: { timezone: 'UTC', windows: [{ days: ['mon'], start: '08:00', end: '09:00' }] }, max_concurrent: null })
  assert.equal(changed.statusCode, 200, changed.body)
  const { data } = json(changed)
  assert.equal(data.routing_key, created.routing_key)
  assert.deepEqual(data.context, { company: 'Acme' })
  assert.equal(data.schedule.timezone, 'UTC')
  assert.equal(data.max_concurrent, null)
  assert.deepEqual(data.attempts, created.attempts)

  // A new provider starts from an empty provider_config, which must then be valid for it.
  const incomplete = await patch(created.id, { provider: 'twilio' })
  assert.equal(incomplete.statusCode, 422)
  assert.deepEqual(json(incomplete).detail.map((entry: any) => entry.loc.join('.')), [
    'body.provider_config.account_sid',
    'body.provider_config.from',
    'body.provider_config.answer_url',
  ])
  const switched = await patch(created.id, { provider: 'twilio', provider_config: TWILIO })
  assert.equal(switched.statusCode, 200)
  const listed = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data
  assert.equal(listed.find((campaign: any) => campaign.id === created.id).provider, 'twilio')
})

test('PATCH: an unknown campaign is 404, an organization key is 403, routing key and channel are not changeable', async () => {
  assert.equal((await patch('cmp_01jd3y5v8m6m1r9cz8xk4j2h7q', { name: 'x' })).statusCode, 404)
  const created = json(await create({})).data
  assert.equal((await patch(created.id, { name: 'x' }, bearer(org.key))).statusCode, 403)
  // Unknown fields are ignored, as everywhere on the API.
  const ignored = await patch(created.id, { routing_key: 'renamed', channel: 'whatsapp' })
  assert.equal(ignored.statusCode, 200)
  assert.equal(json(ignored).data.routing_key, created.routing_key)
  assert.equal(json(ignored).data.channel, 'voice')
})
