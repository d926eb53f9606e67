/** POST /api/v2/triggers, row by row of the spec and the issue. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService
let key: string
let routingKey: string

const VALID = {
  campaign: 'screening',
  ids: [{ source: 'ATS', type: 'Candidate_ID', value: 'AbC-001' }],
  contact: { first_name: 'Ada', last_name: 'Lovelace', phone: '+44 (0)20 7946 0958', email: 'ada@example.com', language: 'en-GB' },
  context: { job_title: 'Analyst' },
}

function post(payload: unknown, headers: Record<string, string> = {}) {
  return service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(key), 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })
}

async function detail(payload: unknown, headers: Record<string, string> = {}) {
  const response = await post(payload, headers)
  assert.equal(response.statusCode, 422, response.body)
  return json(response).detail as { type: string; loc: (string | number)[]; msg: string; input: unknown; ctx?: object }[]
}

before(async () => {
  service = await startService()
  ;({ key, routingKey } = await seedOrganization(service.app, { context: { greeting: 'Hello', job_title: 'Engineer' } }))
  assert.equal(routingKey, VALID.campaign)
})
after(() => service.close())

describe('201', () => {
  test('answers the envelope once the trigger and its task are committed', async () => {
    const response = await post(VALID, { 'x-request-id': 'client-req-42' })
    assert.equal(response.statusCode, 201, response.body)
    const body = json(response)
    assert.deepEqual(Object.keys(body), ['data', 'metadata'])
    assert.deepEqual(Object.keys(body.data).sort(), ['created_at', 'id', 'status', 'task_id'])
    assert.match(body.data.id, /^trg_[0-9a-z]{26}$/)
    assert.match(body.data.task_id, /^tsk_[0-9a-z]{26}$/)
    assert.equal(body.data.status, 'accepted')
    assert.match(body.data.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.deepEqual(body.metadata, { request_id: 'client-req-42' })
    assert.equal(response.headers['x-request-id'], 'client-req-42')

    const [task] = await service.db.query<{ status: string; context: object; due_at: Date; trigger_id: string }>(
      'SELECT status, context, due_at, trigger_id FROM tasks WHERE id = $1',
      [body.data.task_id],
    )
    assert.equal(task?.trigger_id, body.data.id)
    assert.equal(task?.status, 'pending')
    assert.equal(task?.due_at.toISOString(), body.data.created_at, 'the task is due at once')
    assert.deepEqual(task?.context, { greeting: 'Hello', job_title: 'Analyst' }, "the trigger's context wins over the campaign's")
  })

  test('generates a request id when none, or an unusable one, is sent', async () => {
    for (const headers of [{}, { 'x-request-id': 'x'.repeat(201) }] as Record<string, string>[]) {
      const response = await post(VALID, headers)
      assert.equal(response.statusCode, 201)
      const requestId = json(response).metadata.request_id
      assert.match(requestId, /^req_[0-9a-z]{26}$/)
      assert.equal(response.headers['x-request-id'], requestId)
    }
    const exactly200 = 'r'.repeat(200)
    assert.equal(json(await post(VALID, { 'x-request-id': exactly200 })).metadata.request_id, exactly200)
  })

  test('ignores unknown top-level keys, as pydantic does', async () => {
    const response = await post({ ...VALID, organization_id: 'org_someone_else', priority: 'high' })
    assert.equal(response.statusCode, 201, response.body)
  })

  test('accepts the minimal body and optional fields sent as null', async () => {
    assert.equal((await post({ campaign: 'screening', contact: { phone: '+14155552671' } })).statusCode, 201)
    const withNulls = { campaign: 'screening', contact: { phone: '+14155552671', email: null }, ids: null, channel: null, context: null, test_mode: null }
    assert.equal((await post(withNulls)).statusCode, 201)
  })

  test('parses test_mode as pydantic does: booleans, 0/1 and yes/no words', async () => {
    for (const test_mode of [true, false, 1, 0, 'true', 'False', 'YES', 'off', '1', '0', 1.0]) {
      const response = await post({ ...VALID, test_mode })
      assert.equal(response.statusCode, 201, `${JSON.stringify(test_mode)}: ${response.body}`)
    }
  })

  test('accepts application/*+json and a charset parameter', async () => {
    for (const contentType of ['application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.api+json']) {
      assert.equal((await post(VALID, { 'content-type': contentType })).statusCode, 201, contentType)
    }
  })

  test('accepts exactly 20 ids', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => ({ source: 'crm', type: 'lead', value: `L-${i}` }))
    assert.equal((await post({ ...VALID, ids })).statusCode, 201)
  })
})

describe('422: the body as a whole', () => {
  test('invalid JSON: json_invalid at the character offset, with Python\'s message', async () => {
    assert.deepEqual(await detail('{"campaign": }'), [
      { type: 'json_invalid', loc: ['body', 13], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } },
    ])
    assert.deepEqual(await detail('{"campaign": "a",}'), [
      {
        type: 'json_invalid',
        loc: ['body', 16],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: 'Illegal trailing comma before end of object' },
      },
    ])
  })

  test('empty body: missing at ["body"]', async () => {
    const expected = [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]
    assert.deepEqual(await detail(''), expected)
    assert.deepEqual(await detail('null'), expected)
  })

  test('a Content-Type other than JSON: model_attributes_type with the body as text', async () => {
    const text = JSON.stringify(VALID)
    for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }]) {
      assert.deepEqual(await detail(text, headers), [
        {
          type: 'model_attributes_type',
          loc: ['body'],
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input: text,
        },
      ])
    }
  })

  test('a JSON value that is not an object: model_attributes_type', async () => {
    for (const body of [[], 'screening', 42, true]) {
      const [entry, ...rest] = await detail(JSON.stringify(body))
      assert.equal(rest.length, 0)
      assert.deepEqual(entry, {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: body,
      })
    }
  })

  test('body over 1 MiB: 413 in the error shape', async () => {
    const response = await post({ ...VALID, context: { blob: 'x'.repeat(1024 * 1024) } })
    assert.equal(response.statusCode, 413)
    assert.equal(json(response).error.code, 'payload_too_large')
  })
})

describe('422: fields', () => {
  test('missing fields: missing / Field required, with the enclosing object as input', async () => {
    assert.deepEqual(await detail({ ids: [] }), [
      { type: 'missing', loc: ['body', 'campaign'], msg: 'Field required', input: { ids: [] } },
      { type: 'missing', loc: ['body', 'contact'], msg: 'Field required', input: { ids: [] } },
    ])
    assert.deepEqual(await detail({ campaign: 'screening', ids: [{ source: 'ats' }], contact: { first_name: 'Ada' } }), [
      { type: 'missing', loc: ['body', 'ids', 0, 'type'], msg: 'Field required', input: { source: 'ats' } },
      { type: 'missing', loc: ['body', 'ids', 0, 'value'], msg: 'Field required', input: { source: 'ats' } },
      { type: 'missing', loc: ['body', 'contact', 'phone'], msg: 'Field required', input: { first_name: 'Ada' } },
    ])
  })

  test('wrong types, all collected in field order with pydantic\'s messages', async () => {
    const body = {
      test_mode: [],
      context: ['a'],
      channel: 5,
      contact: 'Ada',
      ids: [5, { source: 1, type: 'x', value: null }],
      campaign: 7,
    }
    assert.deepEqual(await detail(body), [
      { type: 'string_type', loc: ['body', 'campaign'], msg: 'Input should be a valid string', input: 7 },
      {
        type: 'model_attributes_type',
        loc: ['body', 'ids', 0],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: 5,
      },
      { type: 'string_type', loc: ['body', 'ids', 1, 'source'], msg: 'Input should be a valid string', input: 1 },
      { type: 'string_type', loc: ['body', 'ids', 1, 'value'], msg: 'Input should be a valid string', input: null },
      {
        type: 'model_attributes_type',
        loc: ['body', 'contact'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: 'Ada',
      },
      {
        type: 'literal_error',
        loc: ['body', 'channel'],
        msg: "Input should be 'voice', 'whatsapp' or 'sms'",
        input: 5,
        ctx: { expected: "'voice', 'whatsapp' or 'sms'" },
      },
      { type: 'dict_type', loc: ['body', 'context'], msg: 'Input should be a valid dictionary', input: ['a'] },
      { type: 'bool_type', loc: ['body', 'test_mode'], msg: 'Input should be a valid boolean', input: [] },
    ])
  })

  test('ids that is not a list: list_type', async () => {
    assert.deepEqual(await detail({ ...VALID, ids: { source: 'ats' } }), [
      { type: 'list_type', loc: ['body', 'ids'], msg: 'Input should be a valid list', input: { source: 'ats' } },
    ])
  })

  test('test_mode that cannot be read as a boolean: bool_parsing or bool_type', async () => {
    for (const [input, type] of [
      ['maybe', 'bool_parsing'],
      [' true', 'bool_parsing'],
      [2, 'bool_parsing'],
      [0.5, 'bool_type'],
      [{}, 'bool_type'],
    ] as const) {
      const [entry] = await detail({ ...VALID, test_mode: input })
      assert.equal(entry?.type, type, JSON.stringify(input))
      assert.deepEqual(entry?.loc, ['body', 'test_mode'])
      assert.equal(
        entry?.msg,
        type === 'bool_parsing' ? 'Input should be a valid boolean, unable to interpret input' : 'Input should be a valid boolean',
      )
    }
  })

  test('more than 20 ids: too_long, and only that', async () => {
    const ids = Array.from({ length: 21 }, (_, i) => (i === 3 ? { source: 5 } : { source: 'crm', type: 'lead', value: `L-${i}` }))
    assert.deepEqual(await detail({ ...VALID, ids }), [
      {
        type: 'too_long',
        loc: ['body', 'ids'],
        msg: 'List should have at most 20 items after validation, not 21',
        input: ids,
        ctx: { field_type: 'List', max_length: 20, actual_length: 21 },
      },
    ])
  })

  test('a bad channel: literal_error', async () => {
    assert.deepEqual(await detail({ ...VALID, channel: 'fax' }), [
      {
        type: 'literal_error',
        loc: ['body', 'channel'],
        msg: "Input should be 'voice', 'whatsapp' or 'sms'",
        input: 'fax',
        ctx: { expected: "'voice', 'whatsapp' or 'sms'" },
      },
    ])
  })

  test('strings are bounded', async () => {
    const campaign = 'c'.repeat(101)
    assert.deepEqual(await detail({ ...VALID, campaign }), [
      {
        type: 'string_too_long',
        loc: ['body', 'campaign'],
        msg: 'String should have at most 100 characters',
        input: campaign,
        ctx: { max_length: 100 },
      },
    ])
    const [valueEntry] = await detail({ ...VALID, ids: [{ source: 'ats', type: 'x', value: 'v'.repeat(501) }] })
    assert.equal(valueEntry?.type, 'string_too_long')
    assert.deepEqual(valueEntry?.loc, ['body', 'ids', 0, 'value'])
    const [contextEntry] = await detail({ ...VALID, context: { note: 'n'.repeat(10_001) } })
    assert.equal(contextEntry?.type, 'value_error')
    assert.deepEqual(contextEntry?.loc, ['body', 'context', 'note'])
  })

  test('lengths count characters as Python does: a surrogate pair is one', async () => {
    const emoji = '\u{1F600}'
    const fits = await post({ ...VALID, contact: { ...VALID.contact, first_name: emoji.repeat(200) } })
    assert.equal(fits.statusCode, 201)
    const [entry] = await detail({ ...VALID, contact: { ...VALID.contact, first_name: emoji.repeat(201) } })
    assert.equal(entry?.type, 'string_too_long')
    assert.deepEqual(entry?.loc, ['body', 'contact', 'first_name'])
    const [lone] = await detail({ ...VALID, contact: { ...VALID.contact, first_name: '\ud83d' } })
    assert.equal(lone?.type, 'value_error', 'a lone surrogate is one character, refused as unstorable')
  })

  test('an id source or type that is empty once trimmed: string_too_short', async () => {
    assert.deepEqual(await detail({ ...VALID, ids: [{ source: '   ', type: 'x', value: 'v' }] }), [
      {
        type: 'string_too_short',
        loc: ['body', 'ids', 0, 'source'],
        msg: 'String should have at least 1 character',
        input: '   ',
        ctx: { min_length: 1 },
      },
    ])
  })

  test('text PostgreSQL cannot store (NUL) is refused, not a 500', async () => {
    const [entry] = await detail({ ...VALID, context: { note: 'a\u0000b' } })
    assert.equal(entry?.type, 'value_error')
    assert.deepEqual(entry?.loc, ['body', 'context', 'note'])
    const [nameEntry] = await detail({ ...VALID, contact: { ...VALID.contact, first_name: 'A\u0000' } })
    assert.deepEqual(nameEntry?.loc, ['body', 'contact', 'first_name'])
  })

  test('context keys are bounded and storable, reported under the key as pydantic does', async () => {
    const long = 'k'.repeat(101)
    const entries = await detail({ ...VALID, context: { 'a\u0000b': 1, [long]: 2, fine: 3 } })
    assert.deepEqual(
      entries.map((entry) => [entry.type, entry.loc]),
      [
        ['value_error', ['body', 'context', 'a\u0000b', '[key]']],
        ['value_error', ['body', 'context', long, '[key]']],
      ],
    )
  })

  test('context numbers that JSON would round are refused, not silently changed', async () => {
    for (const number of ['12345678901234567890', '1e400']) {
      const entries = await detail(`{"campaign": "screening", "contact": {"phone": "+14155552671"}, "context": {"n": ${number}}}`)
      assert.deepEqual(entries.map((entry) => [entry.type, entry.loc.join('.')]), [['value_error', 'body.context.n']], number)
    }
    assert.equal((await post({ ...VALID, context: { n: 9007199254740991, f: 0.1 } })).statusCode, 201)
  })

  test('a body nested deeper than 1000 levels is 400, as Python\'s decoder gives up', async () => {
    const deep = '['.repeat(1001) + ']'.repeat(1001)
    const response = await post(`{"campaign": "screening", "contact": ${deep}}`)
    assert.equal(response.statusCode, 400)
    assert.equal(json(response).error.code, 'bad_request')
    const [entry] = await detail(`{"campaign": "screening", "contact": ${'['.repeat(900) + ']'.repeat(900)}}`)
    assert.equal(entry?.type, 'model_attributes_type')
  })

  test('context: at most 50 keys; values nested at most 16 deep', async () => {
    const wide = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]))
    const [entry] = await detail({ ...VALID, context: wide })
    assert.equal(entry?.type, 'too_long')
    assert.equal(entry?.msg, 'Dictionary should have at most 50 items after validation, not 51')
    let deep: unknown = 'bottom'
    for (let i = 0; i < 20; i++) deep = { deeper: deep }
    const [deepEntry] = await detail({ ...VALID, context: { deep } })
    assert.equal(deepEntry?.type, 'value_error')
  })

  test('a refused phone: exactly one value_error at body.contact.phone', async () => {
    for (const phone of ['020 7946 0958', '0044 20 7946 0958', '+1 555 555 5555', '+44 20 7946 0958 ext. 12', 'call me']) {
      const entries = await detail({ ...VALID, contact: { ...VALID.contact, phone } })
      assert.equal(entries.length, 1, phone)
      const [entry] = entries
      assert.equal(entry?.type, 'value_error')
      assert.deepEqual(entry?.loc, ['body', 'contact', 'phone'])
      assert.equal(entry?.input, phone)
      assert.match(entry!.msg, /^Value error, phone must include a country calling code .*and be a valid number$/)
    }
  })

  test('language must be BCP 47 and email plausible', async () => {
    const entries = await detail({ ...VALID, contact: { ...VALID.contact, language: 'en_US', email: 'ada.example.com' } })
    assert.deepEqual(
      entries.map((entry) => [entry.type, entry.loc.join('.')]),
      [
        ['value_error', 'body.contact.email'],
        ['value_error', 'body.contact.language'],
      ],
    )
    assert.equal(entries[0]?.msg, 'value is not a valid email address: An email address must have an @-sign.')
    assert.match(entries[1]!.msg, /^Value error, language must be a BCP 47 language tag/)
  })
})

describe('422: the campaign', () => {
  test('a routing key the organization does not have', async () => {
    assert.deepEqual(await detail({ ...VALID, campaign: 'no-such-campaign' }), [
      {
        type: 'value_error',
        loc: ['body', 'campaign'],
        msg: "Value error, no campaign has the routing key 'no-such-campaign'",
        input: 'no-such-campaign',
        ctx: { error: {} },
      },
    ])
  })

  test("another organization's routing key is unknown here", async () => {
    const other = await seedOrganization(service.app, { routingKey: 'their-campaign' })
    assert.equal((await post({ ...VALID, campaign: 'their-campaign' }, bearer(other.key))).statusCode, 201)
    const [entry] = await detail({ ...VALID, campaign: 'their-campaign' })
    assert.deepEqual(entry?.loc, ['body', 'campaign'])
  })

  test('is reported with every other problem of the body', async () => {
    const entries = await detail({ ...VALID, campaign: 'nope', contact: { phone: '12' }, test_mode: 'perhaps' })
    assert.deepEqual(
      entries.map((entry) => entry.loc.join('.')),
      ['body.campaign', 'body.contact.phone', 'body.test_mode'],
    )
  })

  test('a routing key on two channels needs channel; a channel it lacks is refused', async () => {
    const admin = bearer(OPERATOR_TOKEN)
    const seeded = await seedOrganization(service.app, { routingKey: 'reminder' })
    const orgId = seeded.orgId
    const created = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/campaigns`,
      headers: admin,
      payload: { routing_key: 'reminder', channel: 'whatsapp' },
    })
    assert.equal(created.statusCode, 201)
    const as = bearer(seeded.key)
    const body = { ...VALID, campaign: 'reminder' }

    const ambiguous = await post(body, as)
    assert.equal(ambiguous.statusCode, 422)
    const [entry] = json(ambiguous).detail
    assert.deepEqual(entry.loc, ['body', 'channel'])
    assert.match(entry.msg, /send channel 'voice' or 'whatsapp'/)

    assert.equal((await post({ ...body, channel: 'whatsapp' }, as)).statusCode, 201)
    assert.equal((await post({ ...body, channel: 'voice' }, as)).statusCode, 201)

    const single = await seedOrganization(service.app, { routingKey: 'voice-only' })
    const refused = await post({ ...VALID, campaign: 'voice-only', channel: 'whatsapp' }, bearer(single.key))
    assert.equal(refused.statusCode, 422)
    assert.deepEqual(json(refused).detail[0].loc, ['body', 'channel'])
  })
})
