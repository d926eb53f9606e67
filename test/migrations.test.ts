/** Migrations that change what existing rows mean, applied over rows written before them. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { deliveriesOf } from '../src/store/deliveries.ts'
import { findEvent, listTaskEvents } from '../src/store/events.ts'
import { lastFailures } from '../src/store/endpointHealth.ts'
import { findTask, listTasks } from '../src/store/tasks.ts'
import { findTrigger } from '../src/store/triggers.ts'
import { databaseBeforeMigration } from './support/service.ts'

/** Rows every migration test starts from: organization org_1 and its campaign cmp_1, created at `at` (an SQL literal). */
const ORGANIZATION_WITH_CAMPAIGN = (channel: 'voice' | 'whatsapp', at: string) => `
      INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Acme', ${at});
      INSERT INTO campaigns (id, org_id, routing_key, channel, name, schedule, attempts, created_at, updated_at) VALUES
        ('cmp_1', 'org_1', 'screening', '${channel}', 'Screening', '{"timezone": "contact", "windows": []}',
         '{"max": 3, "retry_delays_s": {}, "expire_after_s": 604800}', ${at}, ${at});`

test('011: tasks recorded with one zone or none keep the zone they were scheduled in, and say what told it', async () => {
  const database = await databaseBeforeMigration(11)
  try {
    const { db } = database
    const at = "'2026-06-01T10:00:00Z'"
    const campaign = (id: string, schedule: object) =>
      `('${id}', 'org_1', '${id}', 'voice', '${id}', '${JSON.stringify(schedule)}', '{"max": 3, "retry_delays_s": {}, "expire_after_s": 604800}', ${at}, ${at})`
    const windows = [{ days: ['mon'], start: '09:00', end: '20:00' }]
    await db.exec(`
      INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Acme', ${at});
      INSERT INTO campaigns (id, org_id, routing_key, channel, name, schedule, attempts, created_at, updated_at) VALUES
        ${campaign('cmp_fallback', { timezone: 'contact', fallback_timezone: 'Europe/Moscow', windows })},
        ${campaign('cmp_own_zone', { timezone: 'Asia/Tokyo', windows })};
      INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at) VALUES
        ('trg_sent', 'org_1', 'key_1', 'cmp_fallback', 'r', '[]', '{"phone": "+34612345811", "timezone": "Atlantic/Canary"}', '{}', false, ${at}),
        ('trg_on_file', 'org_1', 'key_1', 'cmp_fallback', 'r', '[]', '{"phone": "+34612345811"}', '{}', false, ${at}),
        ('trg_phone', 'org_1', 'key_1', 'cmp_fallback', 'r', '[]', '{"phone": "+442079460958"}', '{}', false, ${at}),
        ('trg_fallback', 'org_1', 'key_1', 'cmp_fallback', 'r', '[]', '{"phone": "+79123456789"}', '{}', false, ${at}),
        ('trg_none', 'org_1', 'key_1', 'cmp_own_zone', 'r', '[]', '{"phone": "+80012345678"}', '{}', false, ${at});
      INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, due_at, created_at, updated_at, expires_at, contact, timezone) VALUES
        ('tsk_sent', 'org_1', 'trg_sent', 'cmp_fallback', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+34612345811", "timezone": "Atlantic/Canary"}', 'Atlantic/Canary'),
        ('tsk_on_file', 'org_1', 'trg_on_file', 'cmp_fallback', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+34612345811", "timezone": "Europe/Madrid"}', 'Europe/Madrid'),
        ('tsk_phone', 'org_1', 'trg_phone', 'cmp_fallback', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+442079460958"}', 'Europe/London'),
        ('tsk_fallback', 'org_1', 'trg_fallback', 'cmp_fallback', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+79123456789"}', NULL),
        ('tsk_none', 'org_1', 'trg_none', 'cmp_own_zone', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+80012345678"}', NULL);
    `)
    await database.upgrade()
    const rows = await db.query<{ id: string; timezones: string[]; timezone_source: string | null }>(
      'SELECT id, timezones, timezone_source FROM tasks ORDER BY id',
    )
    assert.deepEqual(rows, [
      { id: 'tsk_fallback', timezones: ['Europe/Moscow'], timezone_source: 'fallback' },
      { id: 'tsk_none', timezones: [], timezone_source: null },
      { id: 'tsk_on_file', timezones: ['Europe/Madrid'], timezone_source: 'on_file' },
      { id: 'tsk_phone', timezones: ['Europe/London'], timezone_source: 'phone' },
      { id: 'tsk_sent', timezones: ['Atlantic/Canary'], timezone_source: 'sent' },
    ])
    const columns = await db.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'timezone' AND table_schema = current_schema()`,
    )
    assert.deepEqual(columns, [])
  } finally {
    await database.drop()
  }
})

test('019: a trigger recorded before names its task, and an event written before lists its deliveries', async () => {
  const database = await databaseBeforeMigration(19)
  try {
    const { db } = database
    const at = "'2026-06-01T10:00:00Z'"
    await db.exec(`
      ${ORGANIZATION_WITH_CAMPAIGN('voice', at)}
      INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at) VALUES
        ('trg_1', 'org_1', 'key_1', 'cmp_1', 'r1', '[]', '{"phone": "+442079460958"}', '{}', false, ${at}),
        ('trg_2', 'org_1', 'key_1', 'cmp_1', 'r2', '[]', '{"phone": "+442079460959"}', '{}', false, ${at});
      INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, due_at, created_at, updated_at, expires_at, contact, timezones, timezone_source, outcome) VALUES
        ('tsk_1', 'org_1', 'trg_1', 'cmp_1', 'pending', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+442079460958"}', '{Europe/London}', 'phone', NULL),
        ('tsk_2', 'org_1', 'trg_2', 'cmp_1', 'completed', '{}', false, ${at}, ${at}, ${at}, ${at}, '{"phone": "+442079460959"}', '{Europe/London}', 'phone', 'reached');
      INSERT INTO events (id, org_id, type, payload, created_at) VALUES
        ('evt_1', 'org_1', 'task.completed', '{}', ${at}),
        ('evt_2', 'org_1', 'task.completed', '{}', ${at});
      INSERT INTO deliveries (event_id, endpoint_id, org_id, status, due_at, created_at) VALUES
        ('evt_1', 'whe_1', 'org_1', 'pending', ${at}, ${at}),
        ('evt_2', 'whe_1', 'org_1', 'pending', ${at}, ${at}),
        ('evt_1', 'whe_2', 'org_1', 'pending', ${at}, ${at});
    `)
    await database.upgrade()
    const tasks = await Promise.all(['trg_1', 'trg_2'].map(async (id) => (await findTrigger(db, 'org_1', id))?.task))
    assert.deepEqual(tasks, [
      { id: 'tsk_1', status: 'pending' },
      { id: 'tsk_2', status: 'completed' },
    ])
    const endpoints = async (eventId: string) => (await deliveriesOf(db, eventId)).map((delivery) => delivery.endpointId)
    assert.deepEqual(await endpoints('evt_1'), ['whe_1', 'whe_2'])
    assert.deepEqual(await endpoints('evt_2'), ['whe_1'])
  } finally {
    await database.drop()
  }
})

test('023: a task recorded before names its interactions, outbound and inbound, and its page lists them in order', async () => {
  const database = await databaseBeforeMigration(23)
  try {
    const { db } = database
    const at = (minute: number) => `'2026-06-01T10:${String(minute).padStart(2, '0')}:00Z'`
    await db.exec(`
      ${ORGANIZATION_WITH_CAMPAIGN('whatsapp', at(0))}
      INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at, task_id) VALUES
        ('trg_1', 'org_1', 'key_1', 'cmp_1', 'r1', '[]', '{"phone": "+442079460958"}', '{}', false, ${at(0)}, 'tsk_1'),
        ('trg_2', 'org_1', 'key_1', 'cmp_1', 'r2', '[]', '{"phone": "+442079460959"}', '{}', false, ${at(0)}, 'tsk_2');
      INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, due_at, created_at, updated_at, expires_at, contact, timezones, timezone_source, outcome, attempts) VALUES
        ('tsk_1', 'org_1', 'trg_1', 'cmp_1', 'completed', '{}', false, ${at(0)}, ${at(0)}, ${at(0)}, ${at(59)}, '{"phone": "+442079460958"}', '{Europe/London}', 'phone', 'reached', 2),
        ('tsk_2', 'org_1', 'trg_2', 'cmp_1', 'pending', '{}', false, ${at(0)}, ${at(0)}, ${at(0)}, ${at(59)}, '{"phone": "+442079460959"}', '{Europe/London}', 'phone', NULL, 0);
      INSERT INTO interactions (id, org_id, task_id, campaign_id, channel, provider, provider_config, direction, attempt, status, to_phone, test_mode, outcome, started_at, ended_at) VALUES
        ('int_b', 'org_1', 'tsk_1', 'cmp_1', 'whatsapp', 'simulator', '{}', 'outbound', 2, 'finalized', '+442079460958', false, 'completed', ${at(20)}, ${at(21)}),
        ('int_a', 'org_1', 'tsk_1', 'cmp_1', 'whatsapp', 'simulator', '{}', 'outbound', 1, 'finalized', '+442079460958', false, 'no_answer', ${at(10)}, ${at(11)}),
        ('int_c', 'org_1', 'tsk_1', 'cmp_1', 'whatsapp', 'simulator', '{}', 'inbound', NULL, 'finalized', '+442079460958', false, 'replied', ${at(30)}, ${at(30)}),
        ('int_z', 'org_1', NULL, 'cmp_1', 'whatsapp', 'simulator', '{}', 'inbound', NULL, 'finalized', '+442079460999', false, 'replied', ${at(40)}, ${at(40)});
    `)
    await database.upgrade()
    const named = await db.query<{ id: string; interaction_ids: string[] }>('SELECT id, interaction_ids FROM tasks ORDER BY id')
    assert.deepEqual(named, [
      { id: 'tsk_1', interaction_ids: ['int_a', 'int_b', 'int_c'] },
      { id: 'tsk_2', interaction_ids: [] },
    ])
    const task = await findTask(db, 'org_1', 'tsk_1')
    assert.deepEqual(
      task!.interactions.map((interaction) => [interaction.id, interaction.attempt]),
      [
        ['int_a', 1],
        ['int_b', 2],
        ['int_c', null],
      ],
    )
  } finally {
    await database.drop()
  }
})

test('024: a trigger recorded before is found by the number its task reaches, the contact on file when it sent none', async () => {
  const database = await databaseBeforeMigration(24)
  try {
    const { db } = database
    const at = (minute: number) => `'2026-06-01T10:${String(minute).padStart(2, '0')}:00Z'`
    await db.exec(`
      ${ORGANIZATION_WITH_CAMPAIGN('voice', at(0))}
      INSERT INTO triggers (id, org_id, api_key_id, campaign_id, request_id, ids, contact, context, test_mode, created_at, task_id) VALUES
        ('trg_1', 'org_1', 'key_1', 'cmp_1', 'r1', '[]', '{"phone": "+442079460958"}', '{}', false, ${at(1)}, 'tsk_1'),
        ('trg_2', 'org_1', 'key_1', 'cmp_1', 'r2', '[{"source": "crm", "type": "lead", "value": "L-1"}]', NULL, '{}', false, ${at(2)}, 'tsk_2'),
        ('trg_3', 'org_1', 'key_1', 'cmp_1', 'r3', '[]', '{"phone": "+34912345678"}', '{}', false, ${at(3)}, 'tsk_3');
      INSERT INTO tasks (id, org_id, trigger_id, campaign_id, status, context, test_mode, due_at, created_at, updated_at, expires_at, contact, timezones, timezone_source, outcome, attempts) VALUES
        ('tsk_1', 'org_1', 'trg_1', 'cmp_1', 'pending', '{}', false, ${at(1)}, ${at(1)}, ${at(1)}, ${at(59)}, '{"phone": "+442079460958"}', '{Europe/London}', 'phone', NULL, 0),
        ('tsk_2', 'org_1', 'trg_2', 'cmp_1', 'pending', '{}', false, ${at(2)}, ${at(2)}, ${at(2)}, ${at(59)}, '{"phone": "+442079460958"}', '{Europe/London}', 'phone', NULL, 0),
        ('tsk_3', 'org_1', 'trg_3', 'cmp_1', 'pending', '{}', false, ${at(3)}, ${at(3)}, ${at(3)}, ${at(59)}, '{"phone": "+34912345678"}', '{Europe/Madrid}', 'phone', NULL, 0);
    `)
    await database.upgrade()
    const found = async (phone: string) => (await listTasks(db, 'org_1', { phone }, 10)).map((task) => task.id)
    assert.deepEqual(await found('+442079460958'), ['tsk_2', 'tsk_1'])
    assert.deepEqual(await found('+34912345678'), ['tsk_3'])
  } finally {
    await database.drop()
  }
})

test("025: the failed attempts logged before are their endpoints' last failures; a settling attempt logged before 017 is one only if it gave up", async () => {
  const database = await databaseBeforeMigration(25)
  try {
    const { db } = database
    const at = (second: number) => `timestamptz '2026-06-01T10:00:${String(second).padStart(2, '0')}Z'`
    // whe_1: pending after a 503. whe_2, settled before 017 (its last attempt logged, nothing on the row):
    // succeeded at its second attempt after a 500; gave up after a 502.
    await db.exec(`
      INSERT INTO events (id, org_id, type, payload, created_at) VALUES ('evt_1', 'org_1', 'task.completed', '{}', ${at(0)});
      INSERT INTO deliveries (event_id, endpoint_id, org_id, status, attempts, due_at, created_at, completed_at) VALUES
        ('evt_1', 'whe_1', 'org_1', 'pending', 1, ${at(5)}, ${at(0)}, NULL),
        ('evt_1', 'whe_2', 'org_1', 'succeeded', 2, ${at(5)}, ${at(0)}, ${at(5)}),
        ('evt_1', 'whe_2', 'org_1', 'failed', 1, ${at(9)}, ${at(0)}, ${at(9)});
      INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
      SELECT id, 1, ${at(1)}, 503, 12, NULL FROM deliveries WHERE endpoint_id = 'whe_1' UNION ALL
      SELECT id, 1, ${at(2)}, 500, 13, NULL FROM deliveries WHERE status = 'succeeded' UNION ALL
      SELECT id, 2, ${at(5)}, 200, 14, NULL FROM deliveries WHERE status = 'succeeded' UNION ALL
      SELECT id, 1, ${at(9)}, 502, 15, NULL FROM deliveries WHERE status = 'failed';
      UPDATE events SET delivery_ids = ARRAY(SELECT id FROM deliveries ORDER BY id);
    `)
    await database.upgrade()
    const failures = async (endpointId: string) =>
      (await lastFailures(db, endpointId, 10)).map(({ attempt, statusCode, final }) => ({ attempt, statusCode, final }))
    assert.deepEqual(await lastFailures(db, 'whe_1', 10), [
      { eventId: 'evt_1', eventType: 'task.completed', attempt: 1, at: '2026-06-01T10:00:01.000Z', statusCode: 503, latencyMs: 12, error: null, final: false },
    ])
    assert.deepEqual(await failures('whe_2'), [
      { attempt: 1, statusCode: 502, final: true },
      { attempt: 1, statusCode: 500, final: false },
    ])
    // Each attempt is still listed once on its delivery.
    assert.deepEqual(
      (await deliveriesOf(db, 'evt_1')).map((delivery) => delivery.attempts.map((attempt) => attempt.statusCode)),
      [[503], [500, 200], [502]],
    )
    await db.exec(`INSERT INTO events (id, org_id, type, body, created_at) VALUES ('evt_2', 'org_1', 'webhook.test', decode('00', 'hex'), ${at(10)})`)
    await assert.rejects(db.exec(`INSERT INTO events (id, org_id, type, body, created_at) VALUES ('evt_3', 'org_1', 'other', decode('00', 'hex'), ${at(10)})`))
    assert.deepEqual(await lastFailures(db, 'whe_3', 10), [])
  } finally {
    await database.drop()
  }
})

test('034: campaigns may name the voice agent platforms as their provider, and no other', async () => {
  const database = await databaseBeforeMigration(34)
  try {
    const { db } = database
    const at = "'2026-06-01T10:00:00Z'"
    await db.exec(ORGANIZATION_WITH_CAMPAIGN('voice', at))
    const setProvider = (provider: string) => db.exec(`UPDATE campaigns SET provider = '${provider}' WHERE id = 'cmp_1'`)
    await assert.rejects(setProvider('vapi'))
    await database.upgrade()
    for (const provider of ['vapi', 'retell', 'elevenlabs', 'twilio']) {
      await setProvider(provider)
      assert.deepEqual(await db.query('SELECT provider FROM campaigns'), [{ provider }])
    }
    await assert.rejects(setProvider('other'))
  } finally {
    await database.drop()
  }
})

test('035: an event written before is read as it was written, found by the task or the interaction it names', async () => {
  const database = await databaseBeforeMigration(35)
  try {
    const { db } = database
    const at = "'2026-06-01T10:00:00Z'"
    const completed = {
      id: 'evt_1',
      type: 'task.completed',
      timestamp: '2026-06-01T10:00:00.000Z',
      data: { task_id: 'tsk_1', trigger_id: 'trg_1', outcome: 'reached', ids: [{ source: 'ats', type: 'candidate_id', value: 'C-1' }], result: null },
    }
    const reply = {
      id: 'evt_2',
      type: 'interaction.finalized',
      timestamp: '2026-06-01T10:00:00.000Z',
      data: { interaction_id: 'int_9', task_id: null, direction: 'inbound', outcome: 'replied', result: { summary: 'Wrote «ça marche»' } },
    }
    await db.query(`INSERT INTO events (id, org_id, type, payload, created_at) VALUES ('evt_1', 'org_1', 'task.completed', $1, ${at}), ('evt_2', 'org_1', 'interaction.finalized', $2, ${at})`, [
      JSON.stringify(completed),
      JSON.stringify(reply),
    ])
    await database.upgrade()
    assert.deepEqual(await listTaskEvents(db, 'org_1', 'tsk_1'), [completed])
    assert.deepEqual(await findEvent(db, 'org_1', 'evt_2'), reply)
    const named = await db.query<{ id: string; task_id: string | null; interaction_id: string | null }>('SELECT id, task_id, interaction_id FROM events ORDER BY id')
    assert.deepEqual(named, [
      { id: 'evt_1', task_id: 'tsk_1', interaction_id: null },
      { id: 'evt_2', task_id: null, interaction_id: 'int_9' },
    ])
  } finally {
    await database.drop()
  }
})
