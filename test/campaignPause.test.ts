/**
 * Pausing and resuming a campaign, with an injected clock and the dispatcher
 * driven round by round: a paused campaign accepts triggers but starts
 * nothing, lets what runs finish, and starts its due tasks again once
 * resumed; by the organization's own key (scope campaigns:manage, by routing
 * key), by the operator's admin API and by the CLI.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, beforeEach, describe, test } from 'node:test'
import { WAKE_CHANNEL } from '../src/services/index.ts'
import { runCli } from './support/cli.ts'
import { acceptedTrigger, bearer, createCampaign, freshDatabase, json, onPostgres, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestDatabase, type TestService } from './support/service.ts'
import { eventsOfTask } from './support/events.ts'

const HOUR = 3_600_000
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const START = Date.parse('2026-06-01T10:00:00Z')

let service: TestService
let org: Awaited<ReturnType<typeof seedOrganization>>
/** A key of `org` that may pause and resume its campaigns. */
let managerKey: string
let now = START
let routingKeys = 0

before(async () => {
  service = await startService({ now: () => now })
  org = await seedOrganization(service.app)
  managerKey = await issueKey(org.orgId, ['triggers:read', 'campaigns:manage'])
})
after(() => service.close())
beforeEach(() => {
  now = START
})

async function issueKey(orgId: string, scopes: string[]): Promise<string> {
  const response = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/api-keys`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { name: 'scheduler', scopes },
  })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data.key
}

function campaign(settings: Record<string, unknown> = {}, options: { routingKey?: string; channel?: string } = {}): Promise<any> {
  return createCampaign(service.app, org.orgId, {
    routing_key: options.routingKey ?? `pausable-${++routingKeys}`,
    channel: options.channel ?? 'voice',
    schedule: ALWAYS_OPEN,
    ...settings,
  })
}

function trigger(routingKey: string, extra: Record<string, unknown> = {}): Promise<{ id: string; task_id: string }> {
  return acceptedTrigger(service.app, org.key, { campaign: routingKey, contact: { phone: '+442079460958' }, ...extra })
}

/** POST /api/v2/campaigns/{routing_key}/{action} with `key`. */
function byKey(action: 'pause' | 'resume', routingKey: string, key: string, channel?: string) {
  const query = channel === undefined ? '' : `?channel=${channel}`
  return service.app.inject({ method: 'POST', url: `/api/v2/campaigns/${routingKey}/${action}${query}`, headers: bearer(key) })
}

/** The same with the manager's key, which must succeed: the campaigns as they now are. */
async function managed(action: 'pause' | 'resume', routingKey: string, channel?: string): Promise<any[]> {
  const response = await byKey(action, routingKey, managerKey, channel)
  assert.equal(response.statusCode, 200, response.body)
  return json(response).data
}

/** POST /admin/v1/organizations/{org_id}/campaigns/{campaign_id}/{action} with the operator token. */
function byOperator(action: 'pause' | 'resume', campaignId: string, orgId = org.orgId) {
  return service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${orgId}/campaigns/${campaignId}/${action}`,
    headers: bearer(OPERATOR_TOKEN),
  })
}

const task = (id: string) => taskOf(service.app, org.key, id)

/** Moves the clock and lets the dispatcher do everything that is due. */
async function at(instant: number) {
  now = instant
  await service.app.workers!.dispatcher.runOnce()
}

describe('a paused campaign', () => {
  test('accepts triggers but starts nothing until it is resumed, then starts at once', async () => {
    const { routing_key } = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 200 } })
    assert.deepEqual(await managed('pause', routing_key), [
      { routing_key, channel: 'voice', paused: true, paused_at: '2026-06-01T10:00:00.000Z' },
    ])
    const created = await trigger(routing_key)
    for (const instant of [now, now + 1_000, now + HOUR]) await at(instant)
    const waiting = await task(created.task_id)
    assert.equal(waiting.status, 'pending')
    assert.equal(waiting.attempts, 0)
    assert.deepEqual(waiting.interactions, [])
    assert.equal(waiting.campaign_paused, true)

    now += 1_000
    const again = await managed('pause', routing_key)
    assert.equal(again[0].paused_at, '2026-06-01T10:00:00.000Z', 'pausing again keeps the time it was paused at')

    assert.deepEqual(await managed('resume', routing_key), [{ routing_key, channel: 'voice', paused: false, paused_at: null }])
    assert.equal((await task(created.task_id)).campaign_paused, false)
    await at(now)
    const started = await task(created.task_id)
    assert.equal(started.status, 'in_progress')
    assert.equal(started.interactions.length, 1)
    await at(now + 200)
    assert.equal((await task(created.task_id)).outcome, 'reached')
  })

  test('lets a running interaction finish and report; its retry waits for the resume', async () => {
    const created = await campaign({
      provider_config: { outcomes: ['no_answer', 'completed'], duration_ms: 200 },
      attempts: { retry_delays_s: { no_answer: 60 } },
    })
    const { task_id } = await trigger(created.routing_key)
    await at(now)
    assert.equal((await task(task_id)).status, 'in_progress')

    const paused = await byOperator('pause', created.id)
    assert.equal(paused.statusCode, 200, paused.body)
    await at(now + 200)
    const retrying = await task(task_id)
    assert.equal(retrying.status, 'pending')
    assert.equal(retrying.interactions[0].status, 'finalized')
    assert.equal(retrying.interactions[0].outcome, 'no_answer')
    assert.equal(retrying.next_attempt_at, '2026-06-01T10:01:00.200Z', 'the retry is scheduled as usual')
    assert.equal(retrying.campaign_paused, true)
    const reported = await eventsOfTask(service.db, task_id)
    assert.deepEqual(reported.map((event) => event.type), ['interaction.finalized'])

    await at(now + HOUR)
    assert.equal((await task(task_id)).interactions.length, 1, 'the retry does not start while paused')
    assert.equal((await byOperator('resume', created.id)).statusCode, 200)
    await at(now)
    const second = await task(task_id)
    assert.equal(second.status, 'in_progress')
    assert.equal(second.interactions.length, 2)
  })

  test("expires a waiting task at its expires_at, paused as its campaign is, with its task.completed", async () => {
    const { routing_key } = await campaign()
    await managed('pause', routing_key)
    const created = await trigger(routing_key, { expires_at: new Date(now + HOUR).toISOString() })
    await at(now)
    await at(now + HOUR - 1)
    assert.equal((await task(created.task_id)).status, 'pending')
    // Looked at every 10 s: expired within that of its time.
    await at(now + HOUR + 10_000)
    const expired = await task(created.task_id)
    assert.equal(expired.outcome, 'expired')
    assert.equal(expired.interactions.length, 0)
    assert.equal(expired.campaign_paused, false, 'a completed task waits for nothing')
    const events = await eventsOfTask(service.db, created.task_id)
    assert.deepEqual(
      events.map((event) => [event.type, event.data.outcome]),
      [['task.completed', 'expired']],
    )
    await managed('resume', routing_key)
  })

  test('leaves the other campaigns alone', async () => {
    const paused = await campaign()
    const running = await campaign({ provider_config: { outcomes: ['completed'], duration_ms: 200 } })
    await managed('pause', paused.routing_key)
    const waiting = await trigger(paused.routing_key)
    const served = await trigger(running.routing_key)
    await at(now)
    assert.equal((await task(waiting.task_id)).interactions.length, 0)
    assert.equal((await task(served.task_id)).campaign_paused, false)
    assert.equal((await task(served.task_id)).status, 'in_progress')
    await managed('resume', paused.routing_key)
  })

  test('resuming wakes the dispatcher of this process, but only when something was paused', async () => {
    const { routing_key } = await campaign()
    const dispatcher = service.app.workers!.dispatcher
    let wakes = 0
    dispatcher.wake = () => void wakes++
    try {
      await managed('resume', routing_key)
      assert.equal(wakes, 0, 'a campaign that runs has nothing new due')
      await managed('pause', routing_key)
      await managed('resume', routing_key)
      assert.equal(wakes, 1)
    } finally {
      delete (dispatcher as { wake?: unknown }).wake
    }
  })
})

describe('pausing by routing key, with the organization key', () => {
  test('needs the scope campaigns:manage: 403 without it, 401 without a key, and the operator token is not accepted', async () => {
    const { routing_key } = await campaign()
    for (const action of ['pause', 'resume'] as const) {
      const refused = await byKey(action, routing_key, org.key)
      assert.equal(refused.statusCode, 403, refused.body)
      assert.equal(json(refused).error.code, 'forbidden')
      assert.match(json(refused).error.message, /campaigns:manage/)
      assert.equal((await byKey(action, routing_key, OPERATOR_TOKEN)).statusCode, 403)
      const anonymous = await service.app.inject({ method: 'POST', url: `/api/v2/campaigns/${routing_key}/${action}` })
      assert.equal(anonymous.statusCode, 401)
      assert.equal((await byKey(action, routing_key, managerKey)).statusCode, 200)
    }
  })

  test('campaigns:manage is not a default scope', async () => {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/api-keys`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { name: 'defaults' },
    })
    assert.deepEqual(json(response).data.scopes, ['triggers:write', 'triggers:read'])
  })

  test("another organization's routing key, an unknown one, and one with no campaign on the channel are 404", async () => {
    const other = await seedOrganization(service.app, { routingKey: 'theirs' })
    const voiceOnly = await campaign()
    for (const action of ['pause', 'resume'] as const) {
      for (const [routingKey, channel] of [['theirs', undefined], ['nothing-here', undefined], [voiceOnly.routing_key, 'whatsapp']] as const) {
        const response = await byKey(action, routingKey, managerKey, channel)
        assert.equal(response.statusCode, 404, `${action} ${routingKey}: ${response.body}`)
        assert.deepEqual(Object.keys(json(response)), ['error', 'metadata'])
        assert.equal(json(response).error.code, 'not_found')
      }
    }
    const listed = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${other.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })
    assert.equal(json(listed).data[0].paused_at, null, "the other organization's campaign runs on")
  })

  test('an unknown channel is a 422', async () => {
    const { routing_key } = await campaign()
    const response = await byKey('pause', routing_key, managerKey, 'fax')
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(json(response).detail[0].loc, ['query', 'channel'])
  })

  test('without channel every campaign of the routing key; with it only that one; never their settings', async () => {
    const routingKey = `both-${++routingKeys}`
    await campaign({ provider_config: { outcomes: ['completed'] } }, { routingKey, channel: 'voice' })
    await campaign({}, { routingKey, channel: 'whatsapp' })

    const whatsapp = await managed('pause', routingKey, 'whatsapp')
    assert.deepEqual(whatsapp, [{ routing_key: routingKey, channel: 'whatsapp', paused: true, paused_at: '2026-06-01T10:00:00.000Z' }])
    now += 60_000
    assert.deepEqual(await managed('pause', routingKey), [
      { routing_key: routingKey, channel: 'voice', paused: true, paused_at: '2026-06-01T10:01:00.000Z' },
      { routing_key: routingKey, channel: 'whatsapp', paused: true, paused_at: '2026-06-01T10:00:00.000Z' },
    ])
    assert.deepEqual(await managed('resume', routingKey, 'voice'), [{ routing_key: routingKey, channel: 'voice', paused: false, paused_at: null }])
    const listed = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${org.orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) }))
    const states = listed.data.filter((each: any) => each.routing_key === routingKey).map((each: any) => [each.channel, each.paused_at])
    assert.deepEqual(states.sort(), [
      ['voice', null],
      ['whatsapp', '2026-06-01T10:00:00.000Z'],
    ])
    assert.deepEqual(
      (await managed('resume', routingKey)).map((each) => each.paused),
      [false, false],
    )
  })
})

describe('pausing by the operator', () => {
  test('pause and resume one campaign by id, answered as the admin API shows campaigns', async () => {
    const created = await campaign()
    assert.equal(created.paused_at, null)
    const paused = await byOperator('pause', created.id)
    assert.equal(paused.statusCode, 200, paused.body)
    assert.deepEqual(json(paused).data, { ...created, paused_at: '2026-06-01T10:00:00.000Z' })
    now += 1_000
    assert.equal(json(await byOperator('pause', created.id)).data.paused_at, '2026-06-01T10:00:00.000Z')
    const resumed = await byOperator('resume', created.id)
    assert.equal(resumed.statusCode, 200, resumed.body)
    assert.deepEqual(json(resumed).data, created)
    assert.deepEqual(json(await byOperator('resume', created.id)).data, created, 'resuming a running campaign changes nothing')
  })

  test('an unknown campaign or organization is 404; an organization key is 403', async () => {
    const created = await campaign()
    for (const action of ['pause', 'resume'] as const) {
      for (const [campaignId, orgId, message] of [
        ['cmp_01m80rk84mcej1ykcdc4sfn76m', org.orgId, /has no campaign/],
        ['nonsense', org.orgId, /has no campaign/],
        [created.id, 'org_01m80rk84mcej1ykcdc4sfn76m', /No organization/],
      ] as const) {
        const response = await byOperator(action, campaignId, orgId)
        assert.equal(response.statusCode, 404, response.body)
        assert.equal(json(response).error.code, 'not_found')
        assert.match(json(response).error.message, message)
      }
      const refused = await service.app.inject({
        method: 'POST',
        url: `/admin/v1/organizations/${org.orgId}/campaigns/${created.id}/${action}`,
        headers: bearer(managerKey),
      })
      assert.equal(refused.statusCode, 403)
    }
    const other = await seedOrganization(service.app, { routingKey: 'someone-elses' })
    const mismatched = await byOperator('pause', created.id, other.orgId)
    assert.equal(mismatched.statusCode, 404, "a campaign is found only under its own organization")
  })

  test('documented in the OpenAPI documents', async () => {
    const document = json(await service.app.inject({ method: 'GET', url: '/openapi.json' }))
    const adminDocument = json(await service.app.inject({ method: 'GET', url: '/admin/openapi.json' }))
    for (const action of ['pause', 'resume']) {
      const client = document.paths[`/api/v2/campaigns/{routing_key}/${action}`].post
      assert.deepEqual(client.tags, ['campaigns'])
      assert.deepEqual(client.security, [{ apiKey: [] }])
      assert.ok(client.summary && client.description)
      assert.deepEqual(Object.keys(client.responses).sort(), ['200', '400', '401', '403', '404', '413', '422', '429', '500', '503'])
      const admin = adminDocument.paths[`/admin/v1/organizations/{org_id}/campaigns/{campaign_id}/${action}`].post
      assert.deepEqual(admin.security, [{ operatorToken: [] }])
      assert.ok(admin.summary && admin.description)
    }
    assert.equal(document.components.schemas.Task.properties.campaign_paused.type, 'boolean')
    const keyBody = adminDocument.paths['/admin/v1/organizations/{org_id}/api-keys'].post.requestBody.content['application/json'].schema
    assert.ok(JSON.stringify(keyBody).includes('campaigns:manage'))
  })
})

describe('other processes hear of a resume', { skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL)' }, () => {
  test('an API-only process sends the wake-up with the commit that resumes, and only then', async () => {
    const api = await startService({ workers: false, now: () => now })
    const heard: string[] = []
    const unlisten = await api.db.listen(WAKE_CHANNEL, (payload) => heard.push(payload))
    try {
      const seeded = await seedOrganization(api.app, { routingKey: 'notified' })
      const operator = bearer(OPERATOR_TOKEN)
      const url = (action: string) => `/admin/v1/organizations/${seeded.orgId}/campaigns/${seeded.campaign.id}/${action}`
      assert.equal((await api.app.inject({ method: 'POST', url: url('resume'), headers: operator })).statusCode, 200)
      assert.equal((await api.app.inject({ method: 'POST', url: url('pause'), headers: operator })).statusCode, 200)
      assert.equal((await api.app.inject({ method: 'POST', url: url('resume'), headers: operator })).statusCode, 200)
      for (let waited = 0; heard.length === 0 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
      // Notifications arrive in commit order: had the first resume sent one, it would be here first.
      assert.equal(heard.length, 1)
      assert.match(heard[0]!, /^tasks /)
    } finally {
      await unlisten()
      await api.close()
    }
  })
})

describe('the CLI', () => {
  let dataDir: string
  let database: TestDatabase | undefined

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'campaign-pause-'))
    if (onPostgres) database = await freshDatabase()
  })
  after(async () => {
    await database?.drop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const cli = (args: string[]) => runCli(args, { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'info', ...database?.environment })

  async function succeeds(args: string[]): Promise<any> {
    const result = await cli(args)
    assert.equal(result.code, 0, result.stderr)
    return JSON.parse(result.stdout)
  }

  test('campaign pause and campaign resume, by id, answered as the admin API shows campaigns', async () => {
    const created = await succeeds(['org', 'create', '--name', 'Acme'])
    const made = await succeeds(['campaign', 'create', '--org', created.id, '--routing-key', 'screening', '--channel', 'voice'])
    assert.equal(made.paused_at, null)
    const heard: string[] = []
    const unlisten = await database?.db.listen(WAKE_CHANNEL, (payload) => heard.push(payload))
    try {
      const paused = await succeeds(['campaign', 'pause', '--org', created.id, '--campaign', made.id])
      assert.match(paused.paused_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.deepEqual({ ...paused, paused_at: null }, made)
      assert.equal((await succeeds(['campaign', 'pause', '--org', created.id, '--campaign', made.id])).paused_at, paused.paused_at)
      assert.deepEqual(await succeeds(['campaign', 'resume', '--org', created.id, '--campaign', made.id]), made)
      if (database !== undefined) {
        // The worker processes on this database hear of it, though the CLI has no workers of its own.
        for (let waited = 0; heard.length === 0 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.equal(heard.length, 1)
        assert.match(heard[0]!, /^tasks /)
      }
    } finally {
      await unlisten?.()
    }

    const unknown = await cli(['campaign', 'pause', '--org', created.id, '--campaign', 'cmp_01m80rk84mcej1ykcdc4sfn76m'])
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /has no campaign cmp_01m80rk84mcej1ykcdc4sfn76m/)
    const missing = await cli(['campaign', 'resume', '--org', created.id])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /--campaign is required/)
    assert.match((await cli(['--help'])).stdout, /campaign pause --org ORG_ID --campaign CAMPAIGN_ID/)
  })
})
