/**
 * Pacing per sender: the slot arithmetic (table tests), and the dispatcher
 * keeping a WhatsApp number's pace across two worker instances on one
 * database, with an injected clock and the WhatsApp Cloud fake.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { createChannels } from '../src/channels/index.ts'
import { PACE_AHEAD_MS, type SenderSlots, takeSlot } from '../src/domain/pacing.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from './fakes/whatsappCloud.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const T0 = Date.parse('2026-06-01T10:00:00Z')
const NEVER = { nextSlotAt: 0, heldUntil: 0 }
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

describe('a sender\'s slots', () => {
  test('a start takes max(now, next slot) and moves it on by one interval; further than a little ahead, or into the next second, it waits', () => {
    const cases: [string, SenderSlots, number, number, ReturnType<typeof takeSlot>][] = [
      ['an idle sender starts at once', NEVER, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: 0 } }],
      ['a slot a little ahead is taken now', { nextSlotAt: T0 + 100, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 112.5, heldUntil: 0 } }],
      ['up to PACE_AHEAD_MS ahead', { nextSlotAt: T0 + PACE_AHEAD_MS, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + PACE_AHEAD_MS + 12.5, heldUntil: 0 } }],
      ['beyond it, it waits for its slot', { nextSlotAt: T0 + 255, heldUntil: 0 }, 80, T0, { start: false, until: T0 + 255, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 255 } }],
      ['never into the next second', { nextSlotAt: T0 + 1000, heldUntil: 0 }, 80, T0 + 900, { start: false, until: T0 + 1000, slots: { nextSlotAt: T0 + 1000, heldUntil: T0 + 1000 } }],
      ['a slot in the past is now', { nextSlotAt: T0 - 5000, heldUntil: 0 }, 1, T0, { start: true, slots: { nextSlotAt: T0 + 1000, heldUntil: 0 } }],
      ['one a second: the next waits a second', { nextSlotAt: T0 + 1000, heldUntil: 0 }, 1, T0, { start: false, until: T0 + 1000, slots: { nextSlotAt: T0 + 1000, heldUntil: T0 + 1000 } }],
      ['one told to wait comes back after the last one told', { nextSlotAt: T0 + 255, heldUntil: T0 + 2000 }, 80, T0, { start: false, until: T0 + 2012.5, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 2012.5 } }],
      ['those told before and gone are forgotten', { nextSlotAt: T0 + 255, heldUntil: T0 - 60_000 }, 80, T0, { start: false, until: T0 + 255, slots: { nextSlotAt: T0 + 255, heldUntil: T0 + 255 } }],
      ['a free slot is taken even while others wait', { nextSlotAt: T0, heldUntil: T0 + 5000 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: T0 + 5000 } }],
      ['a next slot no start could have set (a clock that went back) counts as now', { nextSlotAt: T0 + 60_000, heldUntil: 0 }, 80, T0, { start: true, slots: { nextSlotAt: T0 + 12.5, heldUntil: 0 } }],
    ]
    for (const [name, slots, perSecond, now, expected] of cases) assert.deepEqual(takeSlot(slots, perSecond, now), expected, name)
  })

  test('whatever the clock, no second of it sees more starts than the pace', () => {
    for (const perSecond of [0.5, 1, 3, 80, 1000]) {
      let slots: SenderSlots = NEVER
      const perWindow = new Map<number, number>()
      // A dispatcher looking every 7 ms for 20 s, starting all it may each time.
      for (let now = T0 + 3; now < T0 + 20_000; now += 7) {
        for (;;) {
          const decision = takeSlot(slots, perSecond, now)
          if (!decision.start) break
          slots = decision.slots
          const window = Math.floor(now / 1000)
          perWindow.set(window, (perWindow.get(window) ?? 0) + 1)
        }
      }
      const most = Math.max(...perWindow.values())
      assert.ok(most <= Math.max(1, perSecond), `${perSecond}/s: ${most} in one second`)
      const total = [...perWindow.values()].reduce((a, b) => a + b, 0)
      // A look in one second cannot take the slots at its very end: a few a second are lost at most.
      assert.ok(total >= Math.floor(perSecond * 20 * 0.99) - 1, `${perSecond}/s: only ${total} in 20 s`)
    }
  })
})

describe('a WhatsApp number at 80 messages a second, two workers on one database', () => {
  const PHONE_NUMBER_ID = '106540352242922'
  const SECRETS: Record<string, string> = {
    WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token-for-tests',
    WHATSAPP_APP_SECRET: 'whatsapp-app-secret-for-tests',
  }
  const TASKS = 1000
  // On a second of its own: the windows counted are the clock's seconds.
  let now = Date.parse('2026-06-01T08:00:00Z')
  let service: TestService
  let whatsapp: FakeWhatsAppCloud
  let org: Awaited<ReturnType<typeof seedOrganization>>
  let peer: FastifyInstance

  before(async () => {
    whatsapp = await startFakeWhatsAppCloud({
      accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
      appSecret: SECRETS.WHATSAPP_APP_SECRET!,
      phoneNumberIds: [PHONE_NUMBER_ID],
      templates: { reminder: { languages: ['en'], bodyParameters: 0 } },
      throughput: { perSecond: 80, now: () => now },
    })
    const channels = createChannels({ publicBaseUrl: 'http://service.test', twilioApiBaseUrl: 'http://127.0.0.1:9', whatsappApiBaseUrl: whatsapp.url }, (name) => SECRETS[name])
    service = await startService({ now: () => now, channels })
    peer = await service.peer()
    org = await seedOrganization(service.app)
  })
  after(async () => {
    await service.close()
    await whatsapp.close()
  })

  test('1,000 tasks due at once start at no more than 80 in any second, none refused, no attempt spent waiting; a task held says so', async () => {
    const created = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { routing_key: 'reminders', channel: 'whatsapp', schedule: ALWAYS_OPEN, provider: 'whatsapp_cloud', provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: 'reminder' } } },
    })
    assert.equal(created.statusCode, 201, created.body)
    assert.deepEqual(json(created).data.pacing, {}, "the provider's pace")
    const triggers = Array.from({ length: TASKS }, (_, n) => ({
      campaign: 'reminders',
      ids: [{ source: 'clinic', type: 'appointment', value: `a-${n}` }],
      // Ofcom's drama range: +44 20 7946 0000 to 0999.
      contact: { phone: `+44 20 7946 ${String(n).padStart(4, '0')}` },
    }))
    const accepted = await service.app.inject({ method: 'POST', url: '/api/v2/triggers/batch', headers: bearer(org.key), payload: { triggers } })
    assert.equal(accepted.statusCode, 200, accepted.body.slice(0, 500))
    const taskIds: string[] = json(accepted).data.map((result: { data: { task_id: string } }) => result.data.task_id)
    assert.equal(taskIds.length, TASKS)
    const t0 = now

    const round = () => Promise.all([service.app.workers!.dispatcher.runOnce(), peer.workers!.dispatcher.runOnce()])
    // A dispatcher's round ends at a short batch, and of two racing for the same due tasks one's batch comes short
    // (the rows the other locked are skipped after the batch's limit): 235 held after one round, once. Their loops
    // go on at once; here, rounds until nothing is due at this instant.
    const dueNow = async () => (await service.db.query(`SELECT 1 FROM tasks WHERE status = 'pending' AND due_at <= $1 LIMIT 1`, [new Date(now)])).length > 0
    do await round()
    while (await dueNow())
    const held = await service.db.query<{ id: string }>(`SELECT id FROM tasks WHERE status = 'pending' AND held_by = 'sender' ORDER BY due_at`)
    assert.ok(held.length >= TASKS - 80, `${held.length} held`)
    for (const { id } of [held[0]!, held.at(-1)!]) {
      const task = await taskOf(service.app, org.key, id)
      assert.equal(task.attempts, 0)
      assert.deepEqual(task.waiting, { for: 'sender', until: task.next_attempt_at })
      assert.ok(Date.parse(task.next_attempt_at) > now)
    }
    // The dispatchers look every 40 ms of the clock until every message is sent.
    while (whatsapp.sent.length < TASKS && now < t0 + 60_000) {
      now += 40
      await round()
    }

    assert.equal(whatsapp.sent.length, TASKS, 'every message sent')
    assert.equal(whatsapp.requests.length, TASKS, 'none refused by Meta for its throughput')
    const perSecond = await service.db.query<{ second: number; starts: number }>(
      `SELECT floor(extract(epoch FROM started_at))::int AS second, count(*)::int AS starts FROM interactions GROUP BY 1 ORDER BY 1`,
    )
    assert.ok(Math.max(...perSecond.map((row) => row.starts)) <= 80, JSON.stringify(perSecond))
    // At the pace, not slower: 1,000 at 80 a second take 13 seconds of the clock.
    assert.ok(perSecond.length <= 14, `${perSecond.length} seconds`)
    const workers = await service.db.query<{ workers: number }>('SELECT count(DISTINCT started_by)::int AS workers FROM interactions')
    assert.equal(workers[0]!.workers, 2, 'both workers started messages')
    const spent = await service.db.query<{ attempts: number; held: number }>(
      `SELECT max(attempts)::int AS attempts, count(held_by)::int AS held FROM tasks WHERE id = ANY($1::text[])`,
      [taskIds],
    )
    assert.deepEqual(spent[0], { attempts: 1, held: 0 }, 'one attempt each; none still marked held')
    const story = await taskOf(service.app, org.key, held[0]!.id)
    assert.equal(story.waiting, undefined, 'a task started no longer waits')
  })
})

describe("a campaign's pacing", () => {
  let service: TestService
  let org: Awaited<ReturnType<typeof seedOrganization>>
  before(async () => {
    service = await startService()
    org = await seedOrganization(service.app)
  })
  after(() => service.close())

  const send = (method: 'POST' | 'PATCH', url: string, payload: object) =>
    service.app.inject({ method, url: `/admin/v1/organizations/${org.orgId}/campaigns${url}`, headers: bearer(OPERATOR_TOKEN), payload })

  test('is a whole number of starts a second from 1 to 1,000,000, each problem a 422 on its field; {} returns to the provider\'s', async () => {
    for (const [pacing, loc] of [
      [{ per_second: 0 }, 'pacing.per_second'],
      [{ per_second: 2.5 }, 'pacing.per_second'],
      [{ per_second: 1_000_001 }, 'pacing.per_second'],
      [{ per_second: 'fast' }, 'pacing.per_second'],
      [{ per_minute: 80 }, 'pacing.per_minute'],
    ] as const) {
      const refused = await send('POST', '', { routing_key: 'paced', channel: 'voice', pacing })
      assert.equal(refused.statusCode, 422, JSON.stringify(pacing))
      assert.deepEqual(json(refused).detail.map((entry: { loc: string[] }) => entry.loc.slice(1).join('.')), [loc], JSON.stringify(pacing))
    }
    const created = await send('POST', '', { routing_key: 'paced', channel: 'voice', pacing: { per_second: 5 } })
    assert.equal(created.statusCode, 201, created.body)
    assert.deepEqual(json(created).data.pacing, { per_second: 5 })
    const id = json(created).data.id
    const untouched = await send('PATCH', `/${id}`, { name: 'Paced' })
    assert.deepEqual(json(untouched).data.pacing, { per_second: 5 }, 'a change of something else keeps it')
    const reset = await send('PATCH', `/${id}`, { pacing: {} })
    assert.equal(reset.statusCode, 200, reset.body)
    assert.deepEqual(json(reset).data.pacing, {})
  })
})
