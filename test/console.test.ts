/// <reference lib="dom" />
/**
 * The web console at /console, driven in Debian's Chromium by playwright-core
 * against the service listening on a port, with its workers running on the
 * simulator. Where no Chromium is installed (/usr/bin/chromium), the browser
 * tests are skipped and say so (under CI=true they fail); the headers and
 * files are checked anyway.
 * Screenshots of each page go to .test-output/console/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { createChannels } from '../src/channels/index.ts'
import { EVENT_TYPES } from '../src/domain/types.ts'
import { LocalForwarder } from '../src/webhooks/localForwarder.ts'
import { newWebhookSecret } from '../src/webhooks/signing.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { skipUnlessInstalled } from './support/cli.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { acceptedTrigger, bearer, createCampaign, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

/** Debian's Chromium; CHROMIUM_PATH names another (or, pointed at nothing, shows the tests skipped as on a machine without it). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SCREENSHOTS = path.join(import.meta.dirname, '..', '.test-output', 'console')
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
/** A first name that would run script if it were ever written as HTML. */
const HOSTILE_NAME = '<img src=x onerror=alert(1)>'

let service: TestService
let receiver: Receiver
let baseUrl: string
let key: string
let orgId: string
/** Texts go to Twilio's fake, whose signed requests reach the service at baseUrl. */
let twilio: FakeTwilio
const TWILIO_ACCOUNT = `AC${'0123456789abcdef'.repeat(2)}`
const TWILIO_TOKEN = 'twilio-auth-token-for-console-tests'

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [TWILIO_ACCOUNT]: TWILIO_TOKEN } })
  const port = await freePort()
  const channels = createChannels(
    { publicBaseUrl: `http://127.0.0.1:${port}`, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: 'http://127.0.0.1:9' },
    (name) => ({ TWILIO_AUTH_TOKEN: TWILIO_TOKEN })[name],
  )
  service = await startService({ allowPrivateWebhookUrls: true, channels })
  receiver = await startReceiver()
  baseUrl = await service.app.listen({ port, host: '127.0.0.1' })
  const seeded = await seedOrganization(service.app, {
    scopes: ['triggers:write', 'triggers:read', 'webhooks:manage', 'suppressions:manage'],
    schedule: ALWAYS_OPEN,
  })
  orgId = seeded.orgId
  key = seeded.key
  const admin = bearer(OPERATOR_TOKEN)
  const endpoint = await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/webhook-endpoints`, headers: admin, payload: { url: receiver.url } })
  assert.equal(endpoint.statusCode, 201, endpoint.body)
})

after(async () => {
  await service.app.workers?.stop()
  await service.close()
  await receiver.close()
  await twilio.close()
})

const trigger = (body: object) => acceptedTrigger(service.app, key, { campaign: 'screening', ...body })

/** Waits, polling every 50 ms, until `done` holds; fails with `what` after 10 s. */
async function waitUntil(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let waited = 0; !(await done()); waited += 50) {
    assert.ok(waited < 10_000, what)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Waits until the task list shows these contacts' names, in this order, and
 * nothing else; or, `first`, these first (the tasks of earlier tests follow).
 */
async function listed(page: Page, names: string[], { first = false } = {}): Promise<void> {
  const shown = async () => {
    const all = await page.locator('table.tasks tbody tr td:first-child a').allTextContents()
    return first ? all.slice(0, names.length) : all
  }
  await waitUntil(`the task list shows ${names.join(', ')}`, async () => JSON.stringify(await shown()) === JSON.stringify(names))
}

/** Whether a request the receiver got is the task.completed webhook of this task. */
const completionOf = (taskId: string) => (request: { body: string }) => {
  const event = JSON.parse(request.body)
  return event.type === 'task.completed' && event.data.task_id === taskId
}

async function taskState(id: string) {
  return json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${id}`, headers: bearer(key) })).data
}

describe('the console is served', () => {
  test('/console redirects to the page, whose files carry a strict policy and no inline script', async () => {
    const redirect = await service.app.inject({ method: 'GET', url: '/console' })
    assert.equal(redirect.statusCode, 302)
    assert.equal(redirect.headers.location, '/console/')
    const page = await service.app.inject({ method: 'GET', url: '/console/' })
    assert.equal(page.statusCode, 200)
    assert.match(String(page.headers['content-type']), /^text\/html/)
    const policy = String(page.headers['content-security-policy'])
    assert.match(policy, /default-src 'none'/)
    assert.match(policy, /script-src 'self'(;|$)/)
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/)
    assert.equal(page.headers['x-frame-options'], 'DENY')
    assert.equal(page.headers['x-content-type-options'], 'nosniff')
    // Every script is a file of the console's own origin.
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/)
    for (const file of ['app.js', 'api.js', 'ui.js', 'styles.css', 'pages/task.js', 'pages/event.js', 'event-types.js', 'vendor/preact-htm.js']) {
      const response = await service.app.inject({ method: 'GET', url: `/console/${file}` })
      assert.equal(response.statusCode, 200, file)
      assert.ok(response.headers['content-security-policy'], file)
    }
    const library = await service.app.inject({ method: 'GET', url: '/console/vendor/preact-htm.js' })
    assert.match(String(library.headers['content-type']), /^text\/javascript/)
    assert.doesNotMatch(library.body, /\bimport\s*[{*]/, 'the UI library imports nothing else')
  })

  test('GET /api/v2/key describes the calling key and its organization; the operator lists organizations', async () => {
    const described = await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(key) })
    assert.equal(described.statusCode, 200, described.body)
    const data = json(described).data
    assert.equal(data.name, 'ats')
    assert.deepEqual(data.scopes, ['triggers:write', 'triggers:read', 'webhooks:manage', 'suppressions:manage'])
    assert.equal(data.organization.id, orgId)
    assert.equal(data.organization.name, 'Acme Recruiting')
    assert.equal(data.key, undefined, 'never the key itself')
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(OPERATOR_TOKEN) })).statusCode, 403)
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer('ct_live_nothing') })).statusCode, 401)
    const listed = json(await service.app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: bearer(OPERATOR_TOKEN) })).data
    assert.ok(listed.some((organization: { id: string }) => organization.id === orgId))
    const one = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}`, headers: bearer(OPERATOR_TOKEN) })
    assert.equal(json(one).data.name, 'Acme Recruiting')
    assert.equal((await service.app.inject({ method: 'GET', url: '/admin/v1/organizations/org_nothing', headers: bearer(OPERATOR_TOKEN) })).statusCode, 404)
    assert.equal((await service.app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: bearer(key) })).statusCode, 403)
  })
})

describe("a task's events", () => {
  test('GET /api/v2/tasks/{id}/events lists what was sent about the task, with every delivery attempt; another organization gets 404', async () => {
    const sent = await trigger({ contact: { first_name: 'Ada', phone: '+44 20 7946 0959', timezone: 'Europe/London' }, test_mode: true })
    assert.deepEqual(json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${sent.task_id}/events`, headers: bearer(key) })).data, [])
    await service.app.workers!.dispatcher.runOnce()
    for (let round = 0; round < 50 && (await taskState(sent.task_id)).status !== 'completed'; round++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      await service.app.workers!.dispatcher.runOnce()
    }
    await service.app.workers!.deliverer.runOnce()
    const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${sent.task_id}/events`, headers: bearer(key) })).data
    assert.deepEqual(
      events.map((event: any) => event.type),
      ['interaction.finalized', 'task.completed'],
    )
    for (const event of events) {
      assert.equal(event.data.task_id, sent.task_id)
      assert.equal(event.deliveries.length, 1)
      assert.equal(event.deliveries[0].status, 'succeeded')
      assert.equal(event.deliveries[0].attempts[0].status_code, 200)
    }
    const viaAdmin = await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/tasks/${sent.task_id}/events`, headers: bearer(OPERATOR_TOKEN) })
    assert.deepEqual(json(viaAdmin).data, events)
    const other = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: bearer(OPERATOR_TOKEN), payload: { name: 'Other' } })).data
    const otherKey = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${other.id}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'x' } }),
    ).data.key
    assert.equal((await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${sent.task_id}/events`, headers: bearer(otherKey) })).statusCode, 404)
    assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/tasks/tsk_nothing/events', headers: bearer(key) })).statusCode, 404)
  })
})

describe('the console in a browser', { skip: skipUnlessInstalled(CHROMIUM, 'apt-get install chromium') }, () => {
  let browser: Browser
  let completed: { id: string; task_id: string }
  let waiting: { id: string; task_id: string }
  const dialogs: string[] = []
  /** What the browser's console logged as errors (a failed request among them), page by page. */
  const consoleErrors: string[] = []

  before(async () => {
    const { chromium } = await import('playwright-core')
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // No sandbox as root; no calls home from a machine with no way out.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    mkdirSync(SCREENSHOTS, { recursive: true })
    // A test call on the simulator, started and completed by the workers; and a task that waits a day.
    completed = await trigger({
      ids: [{ source: 'ATS', type: 'candidate_id', value: 'C-4411' }],
      contact: { first_name: HOSTILE_NAME, last_name: 'Lovelace', phone: '+44 20 7946 0958', timezone: 'Europe/London' },
      context: { job_title: 'Engineer', note: '<script>alert(2)</script>' },
      test_mode: true,
    })
    waiting = await trigger({
      ids: [{ source: 'ats', type: 'candidate_id', value: 'C-5522' }],
      contact: { first_name: 'Grace', last_name: 'Hopper', phone: '+1 212 555 0142' },
      not_before: new Date(Date.now() + 86_400_000).toISOString(),
    })
    await service.app.workers!.start()
    await waitUntil('the simulator call completes', async () => (await taskState(completed.task_id)).status === 'completed')
    await waitUntil('its task.completed reaches the receiver', () => receiver.received.some(completionOf(completed.task_id)))
  })

  after(async () => {
    await browser?.close()
  })

  async function signedIn(token: string, viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport })
    const page = await context.newPage()
    page.setDefaultTimeout(10_000)
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`)
    })
    await page.goto(`${baseUrl}/console`)
    await page.getByLabel('API key or operator token').fill(token)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('button', { name: 'Sign out' }).waitFor()
    return { context, page }
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })

  test('a key signs in, finds a task by its id, and reads its story; a hostile name is shown as text and runs nothing', async () => {
    const { context, page } = await signedIn(key)
    try {
      await page.getByText('Acme Recruiting').waitFor()
      // Every task, newest first; then those that carried one of the client's ids.
      await listed(page, ['Grace Hopper', `${HOSTILE_NAME} Lovelace`], { first: true })
      await shot(page, 'tasks')
      await page.getByLabel('Source').fill('ats')
      await page.getByLabel('Type').fill('candidate_id')
      await page.getByLabel('Value').fill('C-4411')
      await page.getByRole('button', { name: 'Show tasks' }).click()
      await listed(page, [`${HOSTILE_NAME} Lovelace`])
      await page.getByRole('link', { name: `${HOSTILE_NAME} Lovelace` }).click()
      await page.getByRole('heading', { name: 'Interactions' }).waitFor()
      await page.getByText('Attempt 1').waitFor()
      assert.equal(await page.getByRole('heading', { level: 2 }).textContent(), `${HOSTILE_NAME} Lovelace`)
      await page.getByText('<script>alert(2)</script>').waitFor()
      assert.equal(await page.locator('img').count(), 0, 'no element was made from client data')
      assert.ok(await page.getByText('completed', { exact: true }).first().isVisible())
      // What was sent about it: each event, delivered, with the receiver's answer; then sent again.
      const sentEvent = page.locator('.event', { hasText: 'task.completed' })
      await sentEvent.getByText('delivered').waitFor()
      await sentEvent.getByRole('cell', { name: '200' }).first().waitFor()
      await shot(page, 'task')
      const webhookId = (await sentEvent.locator('code').first().textContent())!
      const before = receiver.received.filter((request) => request.headers['webhook-id'] === webhookId).length
      assert.equal(before, 1)
      await sentEvent.getByRole('button', { name: 'Resend' }).click()
      await sentEvent.getByText('delivered').nth(1).waitFor()
      assert.equal(receiver.received.filter((request) => request.headers['webhook-id'] === webhookId).length, 2, 'sent again, with the same webhook-id')
      assert.deepEqual(dialogs, [], 'no script ran')
      // The key is in this tab's sessionStorage only: never in the address or a cookie.
      assert.doesNotMatch(page.url(), new RegExp(key))
      assert.deepEqual(await context.cookies(), [])
    } finally {
      await context.close()
    }
  })

  test('the task list is filtered by a phone number written any way and by status, and says so when nothing matches', async () => {
    const { context, page } = await signedIn(key)
    try {
      await listed(page, ['Grace Hopper', `${HOSTILE_NAME} Lovelace`], { first: true })
      await page.getByLabel('Phone number').fill('+1 (212) 555-0142')
      await page.getByRole('button', { name: 'Show tasks' }).click()
      await listed(page, ['Grace Hopper'])
      await page.getByLabel('Status').selectOption('completed')
      await page.getByRole('button', { name: 'Show tasks' }).click()
      await page.getByRole('heading', { name: 'No task matches' }).waitFor()
      await page.getByRole('link', { name: 'Clear' }).click()
      await listed(page, ['Grace Hopper', `${HOSTILE_NAME} Lovelace`], { first: true })
      assert.equal(await page.getByLabel('Phone number').inputValue(), '')
    } finally {
      await context.close()
    }
  })

  test('a waiting task is cancelled from its page, and reads completed, cancelled', async () => {
    const { context, page } = await signedIn(key)
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${waiting.task_id}`)
      await page.getByRole('heading', { name: 'Grace Hopper' }).waitFor()
      await page.getByRole('button', { name: 'Cancel task' }).click()
      await page.getByRole('button', { name: 'Cancel it: no further attempt' }).click()
      await page.getByText('cancelled', { exact: true }).waitFor()
      await shot(page, 'task-cancelled')
      const state = await taskState(waiting.task_id)
      assert.equal(state.status, 'completed')
      assert.equal(state.outcome, 'cancelled')
      assert.equal(await page.getByRole('button', { name: 'Cancel task' }).count(), 0)
    } finally {
      await context.close()
    }
  })

  test("an endpoint's secret is rotated, shown once, and signs the next webhook; the endpoint is disabled and enabled again", async () => {
    const { context, page } = await signedIn(key)
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click()
      const endpoint = page.getByRole('article', { name: receiver.url })
      await endpoint.getByText('enabled', { exact: true }).waitFor()
      await endpoint.getByRole('button', { name: 'Disable' }).click()
      await endpoint.getByText('disabled', { exact: true }).waitFor()
      await endpoint.getByRole('button', { name: 'Enable' }).click()
      await endpoint.getByText('enabled', { exact: true }).waitFor()
      await endpoint.getByRole('button', { name: 'Rotate secret' }).click()
      await endpoint.getByRole('button', { name: 'Rotate: the old one works 24 h more' }).click()
      const secret = (await page.locator('.shown-once .secret').textContent())!
      assert.match(secret, /^whsec_/)
      await shot(page, 'webhooks')
      const sent = await trigger({ contact: { first_name: 'Alan', phone: '+44 20 7946 0960', timezone: 'Europe/London' }, test_mode: true })
      await waitUntil('the next webhook is delivered', () => receiver.received.some(completionOf(sent.task_id)))
      const request = receiver.received.find(completionOf(sent.task_id))!
      // Signed with the new secret (and, for a day, the previous one too).
      assert.doesNotThrow(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>))
    } finally {
      await context.close()
    }
  })

  test("an endpoint's health: a test event sent from the page, answered 500, is counted and listed among the last failures with its answer", async () => {
    // An endpoint of its own, so that no other webhook takes the 500 or is counted beside the test.
    const tested = await startReceiver()
    const registered = await service.app.inject({
      method: 'POST',
      url: '/api/v2/webhook-endpoints',
      headers: bearer(key),
      payload: { url: tested.url, events: ['task.completed'] },
    })
    assert.equal(registered.statusCode, 201, registered.body)
    const { context, page } = await signedIn(key)
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click()
      const endpoint = page.getByRole('article', { name: tested.url })
      const health = endpoint.getByRole('region', { name: `Health of ${tested.url}` })
      await health.getByText('0 attempts').waitFor()
      tested.answer({ status: 500 })
      await endpoint.getByRole('button', { name: 'Send test event' }).click()
      const sent = endpoint.getByRole('status')
      await sent.getByText('its attempt is counted above').waitFor()
      const eventId = (await sent.locator('code').textContent())!
      await health.getByText('1 attempt', { exact: true }).waitFor()
      const failure = health.getByRole('row', { name: new RegExp(eventId) })
      await failure.getByRole('cell', { name: '500' }).waitFor()
      assert.match((await failure.textContent())!, /webhook\.test/)
      assert.equal(tested.received.length, 1)
      assert.equal(tested.received[0]!.headers['webhook-id'], eventId)
      await shot(page, 'webhook-health')
    } finally {
      await context.close()
      const removed = await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${json(registered).data.id}`, headers: bearer(key) })
      assert.equal(removed.statusCode, 204)
      await tested.close()
    }
  })

  test("an endpoint's failed deliveries are recovered from its page: since 24 hours ago by default, the number queued shown, each event sent again with its id", async () => {
    // An endpoint of its own, down when a task completes, and disabled meanwhile, which gives its delivery up.
    const down = await startReceiver()
    down.answerAll({ status: 500 })
    const registered = await service.app.inject({
      method: 'POST',
      url: '/api/v2/webhook-endpoints',
      headers: bearer(key),
      payload: { url: down.url, events: ['task.completed'] },
    })
    assert.equal(registered.statusCode, 201, registered.body)
    const endpointId = json(registered).data.id
    const setEnabled = async (enabled: boolean) => {
      const changed = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled } })
      assert.equal(changed.statusCode, 200, changed.body)
    }
    const { context, page } = await signedIn(key)
    try {
      const sent = await trigger({ contact: { first_name: 'Edsger', phone: '+44 20 7946 0961', timezone: 'Europe/London' }, test_mode: true })
      await waitUntil('its task.completed fails at the receiver', () => down.received.some(completionOf(sent.task_id)))
      await setEnabled(false)
      await setEnabled(true)
      down.answerAll({ status: 200 })
      const eventId = down.received.find(completionOf(sent.task_id))!.headers['webhook-id']

      await page.getByRole('link', { name: 'Webhooks' }).click()
      const recovery = page.getByRole('article', { name: down.url }).getByRole('form', { name: `Recover failed deliveries to ${down.url}` })
      const since = recovery.getByLabel('Failed since')
      const shown = Date.parse(await since.inputValue())
      assert.ok(Math.abs(shown - (Date.now() - 86_400_000)) < 120_000, `since defaults to 24 hours ago, not ${await since.inputValue()}`)
      await recovery.getByRole('button', { name: 'Recover failed deliveries' }).click()
      await recovery.getByRole('status').getByText('1 event queued to be sent again').waitFor()
      await waitUntil('the event is sent again', () => down.received.filter((request) => request.headers['webhook-id'] === eventId).length === 2)
      await shot(page, 'webhook-recovery')

      await recovery.getByRole('button', { name: 'Recover failed deliveries' }).click()
      await recovery.getByRole('status').getByText('0 events queued to be sent again').waitFor()
      assert.equal(down.received.filter((request) => request.headers['webhook-id'] === eventId).length, 2, 'not sent a third time')
    } finally {
      await context.close()
      const removed = await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key) })
      assert.equal(removed.statusCode, 204)
      await down.close()
    }
  })

  test("a delivered event's page shows its payload as sent and each attempt's request and answer: the first refused (status, a header, the body's first KiB), the second taken; sent again from there", async () => {
    // A receiver of its own that refuses the first webhook with a long error and takes the next: the deliverer tries again 5 s on.
    const got: { body: string; headers: IncomingHttpHeaders }[] = []
    const refusal = JSON.stringify({ error: 'warming up', detail: 'd'.repeat(1500) })
    const flaky = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        got.push({ body: Buffer.concat(chunks).toString('utf8'), headers: request.headers })
        if (got.length === 1) response.writeHead(500, { 'content-type': 'application/json', 'x-receiver': 'warming-up' }).end(refusal)
        else response.writeHead(200, { 'content-type': 'application/json', 'x-receiver': 'ready' }).end('{"received":true}')
      })
    })
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve))
    const registered = await service.app.inject({
      method: 'POST',
      url: '/api/v2/webhook-endpoints',
      headers: bearer(key),
      payload: { url: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/hooks`, events: ['task.completed'] },
    })
    assert.equal(registered.statusCode, 201, registered.body)
    const endpointId = json(registered).data.id
    const { context, page } = await signedIn(key)
    try {
      const sent = await trigger({ contact: { first_name: 'Barbara', last_name: 'Liskov', phone: '+44 20 7946 0962', timezone: 'Europe/London' }, test_mode: true })
      const eventId = await new Promise<string>((resolve, reject) => {
        const started = Date.now()
        const check = async () => {
          const events = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${sent.task_id}/events`, headers: bearer(key) })).data
          const completion = events.find((event: any) => event.type === 'task.completed')
          const delivery = completion?.deliveries.find((each: any) => each.endpoint_id === endpointId)
          if (delivery?.status === 'succeeded') resolve(completion.id)
          else if (Date.now() - started > 20_000) reject(new Error(`the endpoint was not delivered to: ${JSON.stringify(delivery)}`))
          else setTimeout(check, 100)
        }
        void check()
      })
      assert.equal(got.length, 2, 'refused once, then taken')

      await page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      await page.locator('.event', { hasText: 'task.completed' }).getByRole('link', { name: eventId }).click()
      await page.getByRole('heading', { name: 'task.completed', level: 2 }).waitFor()
      // The payload is the body each attempt carried.
      assert.deepEqual(JSON.parse((await page.getByLabel(`Payload of ${eventId}`).textContent())!), JSON.parse(got[0]!.body))
      assert.equal(got[1]!.body, got[0]!.body)

      const delivery = page.getByLabel(`Delivery to ${endpointId}`)
      const refused = delivery.getByRole('region', { name: 'Answer of attempt 1' })
      await refused.getByText('Status 500').waitFor()
      assert.match((await refused.getByRole('row', { name: /x-receiver/ }).textContent())!, /warming-up/)
      assert.equal(await refused.getByLabel('Answer body of attempt 1').textContent(), refusal.slice(0, 1024))
      await refused.getByText('The first 1 KiB of a longer body.').waitFor()
      const taken = delivery.getByRole('region', { name: 'Answer of attempt 2' })
      await taken.getByText('Status 200').waitFor()
      assert.match((await taken.getByRole('row', { name: /x-receiver/ }).textContent())!, /ready/)
      assert.equal(await taken.getByLabel('Answer body of attempt 2').textContent(), '{"received":true}')
      // The request as it was sent: the webhook-timestamp the receiver got, read back from the attempt's time.
      const request = delivery.getByLabel('Request headers of attempt 2')
      assert.match((await request.getByRole('row', { name: /webhook-timestamp/ }).textContent())!, new RegExp(String(got[1]!.headers['webhook-timestamp'])))
      assert.match((await request.getByRole('row', { name: /webhook-id/ }).textContent())!, new RegExp(eventId))
      // Sent and answered to the millisecond.
      const sentAt = (await delivery.getByRole('row').nth(1).locator('time').textContent())!
      assert.match(sentAt, /\d{2}:\d{2}:\d{2}[.,]\d{3}/, `to the millisecond: ${sentAt}`)
      await shot(page, 'event')

      await delivery.getByRole('button', { name: 'Send again to this endpoint' }).click()
      await waitUntil('the event is sent again to the endpoint', () => got.length === 3)
      assert.equal(got[2]!.headers['webhook-id'], eventId)
      await page.getByLabel(`Delivery to ${endpointId}`).nth(1).getByText('delivered').waitFor()
    } finally {
      await context.close()
      const removed = await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key) })
      assert.equal(removed.statusCode, 204)
      flaky.closeAllConnections()
      await new Promise((resolve) => flaky.close(resolve))
    }
  })

  test("a delivery given up is recovered from its event's page: the endpoint's failed deliveries since it are queued, and it is sent again", async () => {
    const down = await startReceiver()
    down.answerAll({ status: 500 })
    const registered = await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: bearer(key), payload: { url: down.url, events: ['task.completed'] } })
    assert.equal(registered.statusCode, 201, registered.body)
    const endpointId = json(registered).data.id
    const setEnabled = async (enabled: boolean) => {
      const changed = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { enabled } })
      assert.equal(changed.statusCode, 200, changed.body)
    }
    const { context, page } = await signedIn(key)
    try {
      const sent = await trigger({ contact: { first_name: 'Frances', phone: '+44 20 7946 0964', timezone: 'Europe/London' }, test_mode: true })
      await waitUntil('its task.completed fails at the receiver', () => down.received.some(completionOf(sent.task_id)))
      // Disabled meanwhile, which gives the delivery up; enabled again, and answering.
      await setEnabled(false)
      await setEnabled(true)
      down.answerAll({ status: 200 })
      const eventId = down.received.find(completionOf(sent.task_id))!.headers['webhook-id'] as string
      await page.goto(`${baseUrl}/console/#/events/${eventId}`)
      const delivery = page.getByLabel(`Delivery to ${endpointId}`)
      await delivery.getByText('failed', { exact: true }).waitFor()
      await delivery.getByRole('button', { name: 'Recover failed deliveries to this endpoint since this one' }).click()
      await delivery.getByRole('status').getByText('1 event queued to be sent again').waitFor()
      await waitUntil('the event is sent again', () => down.received.filter((request) => request.headers['webhook-id'] === eventId).length === 2)
      await page.getByLabel(`Delivery to ${endpointId}`).nth(1).getByText('delivered').waitFor()
    } finally {
      await context.close()
      const removed = await service.app.inject({ method: 'DELETE', url: `/api/v2/webhook-endpoints/${endpointId}`, headers: bearer(key) })
      assert.equal(removed.statusCode, 204)
      await down.close()
    }
  })

  test("a task whose events reached a local receiver through listen says so, with when and what it answered, not that no endpoint took them", async () => {
    // The quick start: an organization with no endpoint, its events forwarded by listen (named apart: the operator's tests open Acme's by name).
    const admin = bearer(OPERATOR_TOKEN)
    const quietOrg = json(await service.app.inject({ method: 'POST', url: '/admin/v1/organizations', headers: admin, payload: { name: 'Quick Start' } })).data
    const quiet = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${quietOrg.id}/api-keys`, headers: admin, payload: { name: 'listen', scopes: ['triggers:write', 'triggers:read'] } }),
    ).data
    await createCampaign(service.app, quietOrg.id, { routing_key: 'screening', channel: 'voice', context: {}, schedule: ALWAYS_OPEN })
    const local = await startReceiver()
    const listen = new LocalForwarder({ baseUrl, apiKey: quiet.key, forwardTo: local.url, secret: newWebhookSecret(), types: [], print: () => {} })
    const { context, page } = await signedIn(quiet.key)
    try {
      await listen.start()
      const sent = await acceptedTrigger(service.app, quiet.key, { campaign: 'screening', contact: { first_name: 'Alan', phone: '+44 20 7946 0963', timezone: 'Europe/London' }, test_mode: true })
      await waitUntil('listen forwards its interaction.finalized and task.completed', async () => {
        await listen.forwardNew()
        return local.received.length === 2
      })
      await page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      const completion = page.locator('.event', { hasText: 'task.completed' })
      const forwarded = completion.getByRole('listitem').filter({ hasText: 'Forwarded by listen at' })
      await forwarded.getByText('200', { exact: true }).waitFor()
      assert.match((await forwarded.locator('time').textContent())!, /\d{2}:\d{2}:\d{2}[.,]\d{3}/)
      assert.equal(await page.getByText('No endpoint was subscribed').count(), 0)
      await shot(page, 'task-listen')
    } finally {
      await context.close()
      await listen.close()
      await local.close()
    }
  })

  test('the endpoint form offers every event type the service sends', async () => {
    const { context, page } = await signedIn(key)
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click()
      const form = page.getByRole('form', { name: 'Register a webhook endpoint' })
      await form.getByRole('checkbox').first().waitFor()
      const offered = await form.locator('label.check').allTextContents()
      assert.deepEqual(offered.map((label) => label.trim()), [...EVENT_TYPES])
      for (const box of await form.getByRole('checkbox').all()) assert.ok(await box.isChecked(), 'every type, unless unticked')
    } finally {
      await context.close()
    }
  })

  test('a number is suppressed in any written form, listed in E.164, and lifted; a key without the scope is not offered the page', async () => {
    const { context, page } = await signedIn(key)
    try {
      await page.getByRole('link', { name: 'Suppressions' }).click()
      await page.getByText('No number is suppressed').waitFor()
      await page.getByLabel('Number', { exact: true }).fill('+44 (0)20 7946 0001')
      await page.getByRole('button', { name: 'Suppress' }).click()
      const row = page.getByRole('row', { name: /\+442079460001/ })
      await row.getByText('added by you').waitFor()
      await shot(page, 'suppressions')
      await page.getByLabel('Number', { exact: true }).fill('020 7946 0001')
      await page.getByRole('button', { name: 'Suppress' }).click()
      await page.getByRole('alert').waitFor()
      await row.getByRole('button', { name: 'Lift' }).click()
      await row.getByRole('button', { name: 'Lift: it may be contacted again' }).click()
      await page.getByText('No number is suppressed').waitFor()
    } finally {
      await context.close()
    }
    const narrow = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'reader', scopes: ['triggers:read'] } }),
    ).data.key
    const reader = await signedIn(narrow)
    try {
      await reader.page.getByRole('link', { name: 'Tasks' }).waitFor()
      assert.equal(await reader.page.getByRole('link', { name: 'Suppressions' }).count(), 0)
      assert.equal(await reader.page.getByRole('link', { name: 'Webhooks' }).count(), 0)
      await reader.page.goto(`${baseUrl}/console/#/tasks/${completed.task_id}`)
      await reader.page.getByRole('heading', { name: 'Interactions' }).waitFor()
      assert.equal(await reader.page.getByRole('button', { name: 'Resend' }).count(), 0, 'no resend without webhooks:manage')
    } finally {
      await reader.context.close()
    }
  })

  test('at 390 pixels wide, the task page fits the screen', async () => {
    const { context, page } = await signedIn(key, { width: 390, height: 844 })
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${completed.task_id}`)
      await page.getByRole('heading', { name: 'Interactions' }).waitFor()
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no sideways scrolling')
      await shot(page, 'task-390')
    } finally {
      await context.close()
    }
  })

  test("a conversation's result is shown on its interaction: disposition, summary, extracted data, the transcript as a chat (a hostile turn as text), the recording; and fits 390 pixels", async () => {
    // A simulated call whose conversation reports a result as it ends; the person asks to be called back in three days.
    const callbackAt = new Date(Math.ceil((Date.now() + 3 * 86_400_000) / 60_000) * 60_000).toISOString()
    const saidAt = (seconds: number) => new Date(Date.now() - 120_000 + seconds * 1000).toISOString()
    await createCampaign(service.app, orgId, {
      routing_key: 'results-demo',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider_config: {
        outcomes: ['completed'],
        duration_ms: 0,
        result: {
          disposition: 'interested',
          summary: 'Still interested; free on Tuesday afternoons.',
          data: { interested: true, available_from: '2026-12-07', salary_band: 3, languages: ['en', 'es'] },
          transcript: [
            { role: 'agent', text: 'Hello Ada, are you still interested in the Analyst role?', at: saidAt(0) },
            { role: 'contact', text: 'Yes, very much.', at: saidAt(4) },
            { role: 'agent', text: 'When could we talk with the hiring manager?' },
            { role: 'contact', text: HOSTILE_NAME },
            { role: 'contact', text: 'Tuesday afternoons suit me best; call me back then.' },
            { role: 'agent', text: 'Noted. We will call you back. Goodbye!' },
          ],
          recording_url: 'https://recordings.example.com/r/123',
          callback_at: callbackAt,
        },
      },
    })
    const sent = await acceptedTrigger(service.app, key, {
      campaign: 'results-demo',
      contact: { first_name: 'Ada', last_name: 'Byron', phone: '+44 20 7946 0962', timezone: 'Europe/London' },
      test_mode: true,
    })
    // The callback makes attempt 2 due then, instead of completing the task: attempt 1 is settled once finalized with its result.
    await waitUntil('the simulated call is finalized with its result', async () => {
      const interaction = (await taskState(sent.task_id)).interactions[0]
      return interaction?.status === 'finalized' && interaction.result !== null
    })
    const settled = await taskState(sent.task_id)
    assert.equal(settled.status, 'pending')
    assert.equal(settled.next_attempt_at, callbackAt)
    assert.equal(settled.interactions[0].result.callback_at, callbackAt)
    await waitUntil('its interaction.finalized reaches the receiver', () =>
      receiver.received.some((request) => {
        const event = JSON.parse(request.body)
        return event.type === 'interaction.finalized' && event.data.task_id === sent.task_id
      }),
    )
    const { context, page } = await signedIn(key)
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      await page.getByRole('heading', { name: 'Ada Byron' }).waitFor()
      const attempt = page.locator('.timeline > li', { hasText: 'Attempt 1' })
      const result = attempt.locator('.result')
      await result.getByRole('heading', { name: 'Conversation result' }).waitFor()
      assert.equal(await result.locator('.badge-disposition').textContent(), 'interested')
      assert.ok(await result.getByText('Still interested; free on Tuesday afternoons.').isVisible())
      assert.equal(await result.getByText('Asked not to be contacted again').count(), 0)
      // The callback time, as an instant (its exact value in the tooltip).
      assert.equal(await result.locator(`time[datetime="${callbackAt}"]`).count(), 1)
      // The extracted data: a key beside its value; a value that is not a string, as JSON.
      const data = result.locator('table.result-data')
      assert.deepEqual(await data.getByRole('row', { name: /available_from/ }).getByRole('cell').allTextContents(), ['available_from', '2026-12-07'])
      assert.deepEqual(await data.getByRole('row', { name: /languages/ }).getByRole('cell').allTextContents(), ['languages', '["en","es"]'])
      // The transcript: each turn with who spoke, the agent's and the contact's told apart.
      const transcript = result.getByRole('list', { name: 'Transcript' })
      assert.equal(await transcript.locator('.turn').count(), 6)
      const agentTurn = transcript.locator('.turn-agent', { hasText: 'Hello Ada, are you still interested in the Analyst role?' })
      const contactTurn = transcript.locator('.turn-contact', { hasText: 'Yes, very much.' })
      assert.ok(await agentTurn.isVisible())
      assert.ok(await contactTurn.isVisible())
      assert.equal(await agentTurn.locator('.turn-who strong').textContent(), 'Agent')
      assert.equal(await contactTurn.locator('.turn-who strong').textContent(), 'Contact')
      assert.equal(await contactTurn.locator('time').count(), 1, 'a turn said at a known time shows it')
      const [agentBox, contactBox] = [await agentTurn.boundingBox(), await contactTurn.boundingBox()]
      assert.ok(agentBox!.x < contactBox!.x, "the agent's turns on the left, the contact's on the right")
      // A hostile turn is text: no element made from it, no script run.
      await transcript.locator('.turn-contact').getByText(HOSTILE_NAME, { exact: true }).waitFor()
      assert.equal(await page.locator('img').count(), 0, 'no element was made from the transcript')
      assert.deepEqual(dialogs, [], 'no script ran')
      const recording = result.getByRole('link', { name: 'Recording' })
      assert.equal(await recording.getAttribute('href'), 'https://recordings.example.com/r/123')
      assert.equal(await recording.getAttribute('target'), '_blank')
      assert.equal(await recording.getAttribute('rel'), 'noopener noreferrer')
      assert.equal(await result.getByRole('link', { name: 'Full transcript' }).count(), 0, 'no link where the result keeps none')
      await shot(page, 'task-result')
    } finally {
      await context.close()
    }
    const narrow = await signedIn(key, { width: 390, height: 844 })
    try {
      await narrow.page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      await narrow.page.getByRole('heading', { name: 'Conversation result' }).waitFor()
      assert.ok(await narrow.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no sideways scrolling')
      await shot(narrow.page, 'task-result-390')
    } finally {
      await narrow.context.close()
    }
  })

  test('an SMS thread kept open reads as a chat of both sides, with until when it stays open and the status of what was sent', async () => {
    await createCampaign(service.app, orgId, {
      routing_key: 'sms-thread',
      channel: 'sms',
      schedule: ALWAYS_OPEN,
      provider: 'twilio',
      provider_config: { account_sid: TWILIO_ACCOUNT, from: '+14155550199', text: 'Hi {{first_name}}, your interview is on Monday. Questions? Just reply.' },
      results: { conversation_s: 7200 },
      pacing: { per_second: 1000 },
    })
    const sent = await acceptedTrigger(service.app, key, { campaign: 'sms-thread', contact: { first_name: 'Katherine', last_name: 'Johnson', phone: '+44 20 7946 0777' } })
    await waitUntil('the text reaches Twilio', () => twilio.messages.sent().some((message) => message.to === '+442079460777'))
    const text = { accountSid: TWILIO_ACCOUNT, from: '+442079460777', to: '+14155550199', webhookUrl: `${baseUrl}/providers/twilio/messages/inbound` }
    assert.equal((await twilio.messages.receive({ ...text, body: 'Is there parking?' })).status, 200)
    const agentKey = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'desk', scopes: ['messages:send'] } }),
    ).data.key
    const interactionId = (await taskState(sent.task_id)).interactions[0].id
    const answer = await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/messages`, headers: bearer(agentKey), payload: { text: 'Yes, behind the building.' } })
    assert.equal(answer.statusCode, 201, answer.body)
    const reply = twilio.messages.sent().find((message) => message.body === 'Yes, behind the building.')!
    assert.equal((await twilio.messages.advance(reply.sid, 'delivered'))!.status, 204)

    const { context, page } = await signedIn(key)
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      const transcript = page.getByRole('list', { name: 'Transcript' })
      await transcript.getByText('Is there parking?').waitFor()
      await transcript.getByText('Yes, behind the building.').waitFor()
      assert.deepEqual(await transcript.locator('.turn').evaluateAll((turns) => turns.map((turn) => turn.className)), ['turn turn-contact', 'turn turn-agent'])
      await page.getByText('The conversation is open').waitFor()
      const thread = page.getByLabel('Thread')
      await thread.getByText('Conversation open until').waitFor()
      await thread.getByText('Window open until').waitFor()
      await thread.getByRole('cell', { name: 'delivered' }).waitFor()
      await shot(page, 'task-sms-thread')
    } finally {
      await context.close()
    }
    // Its result closes it, so that the service's queues are left empty.
    const desk = json(
      await service.app.inject({ method: 'POST', url: `/admin/v1/organizations/${orgId}/api-keys`, headers: bearer(OPERATOR_TOKEN), payload: { name: 'desk-result', scopes: ['conversations:write'] } }),
    ).data.key
    assert.equal((await service.app.inject({ method: 'POST', url: `/api/v2/interactions/${interactionId}/result`, headers: bearer(desk), payload: { disposition: 'answered' } })).statusCode, 200)
    await waitUntil('the thread completes its task', async () => (await taskState(sent.task_id)).status === 'completed')
  })

  test("a task that went on to its campaign's fallback step shows its steps; the campaign page names the step", async () => {
    // A simulated message that is not delivered, then a simulated call that reaches the person.
    const call = await createCampaign(service.app, orgId, { routing_key: 'reminder-call', channel: 'voice', schedule: ALWAYS_OPEN, provider_config: { outcomes: ['completed'], duration_ms: 0 } })
    const message = await createCampaign(service.app, orgId, {
      routing_key: 'reminder',
      channel: 'whatsapp',
      schedule: ALWAYS_OPEN,
      provider_config: { outcomes: ['undelivered'], duration_ms: 0 },
      fallback: { campaign_id: call.id, when: ['undelivered', 'no_reply'], no_reply_minutes: 120 },
    })
    const sent = await acceptedTrigger(service.app, key, { campaign: 'reminder', contact: { first_name: 'Grace', phone: '+44 20 7946 0963', timezone: 'Europe/London' }, test_mode: true })
    await waitUntil('the task falls back and completes on the call', async () => (await taskState(sent.task_id)).status === 'completed')
    const done = await taskState(sent.task_id)
    assert.deepEqual(done.steps.map((step: { campaign: string; outcome: string }) => `${step.campaign} ${step.outcome}`), ['reminder undelivered', 'reminder-call reached'])
    const { context, page } = await signedIn(key)
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${sent.task_id}`)
      const steps = page.getByRole('region', { name: 'Steps' })
      await steps.getByText('reminder · whatsapp').waitFor()
      await steps.getByText('the message was not delivered').waitFor()
      await steps.getByText('reminder-call · voice').waitFor()
      await shot(page, 'task-steps')
    } finally {
      await context.close()
    }
    const operator = await signedIn(OPERATOR_TOKEN)
    try {
      await operator.page.goto(`${baseUrl}/console/#/organizations/${encodeURIComponent(orgId)}/campaigns/${encodeURIComponent(message.id)}`)
      const fallback = operator.page.getByRole('region', { name: 'Fallback step' })
      await fallback.getByLabel('Then').waitFor()
      assert.equal(await fallback.getByLabel('Then').inputValue(), call.id)
      assert.equal(await fallback.getByLabel('No reply within (open minutes)').inputValue(), '120')
      assert.equal(await fallback.getByLabel('the number is not on WhatsApp (at once)').isChecked(), false)
      await shot(operator.page, 'campaign-fallback')
    } finally {
      await operator.context.close()
    }
  })

  test("a marketing call without consent completes not_permitted, and its page names the block's reason and rule; once consent is on file, the attempt says why it was placed", async () => {
    await createCampaign(service.app, orgId, { routing_key: 'offers', channel: 'voice', schedule: ALWAYS_OPEN, compliance: { purpose: 'marketing' }, provider_config: { outcomes: ['completed'], duration_ms: 0 } })
    const contact = { first_name: 'Marge', last_name: 'Keting', phone: '+44 20 7946 0964', timezone: 'Europe/London' }
    const blocked = await acceptedTrigger(service.app, key, { campaign: 'offers', ids: [{ source: 'ats', type: 'candidate_id', value: 'MKT-1' }], contact })
    await waitUntil('the task is blocked', async () => (await taskState(blocked.task_id)).status === 'completed')
    assert.equal((await taskState(blocked.task_id)).outcome, 'not_permitted')
    const consent = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${orgId}/consents`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { phone: contact.phone, channel: 'voice', purpose: 'marketing', kind: 'express_written', source: 'web_form', captured_at: new Date(Date.now() - 86_400_000).toISOString() },
    })
    assert.equal(consent.statusCode, 201, consent.body)
    const consentId = json(consent).data.id
    const placed = await acceptedTrigger(service.app, key, { campaign: 'offers', ids: [{ source: 'ats', type: 'candidate_id', value: 'MKT-2' }], contact })
    await waitUntil('the consented call completes', async () => (await taskState(placed.task_id)).status === 'completed')

    const { context, page } = await signedIn(key)
    try {
      await page.goto(`${baseUrl}/console/#/tasks/${blocked.task_id}`)
      const decision = page.getByRole('region', { name: 'Decision' })
      await decision.getByRole('heading', { name: 'Not permitted' }).waitFor()
      await decision.getByText('before its first attempt, which was not made').waitFor()
      const reason = decision.getByRole('listitem')
      await reason.getByText('Consent missing', { exact: true }).waitFor()
      assert.equal(await reason.locator('code').first().textContent(), 'campaign.consent')
      await reason.getByText('the campaign requires express_written consent for marketing on voice').waitFor()
      await decision.getByText('gb@2026-12-04').waitFor()
      assert.ok(await page.getByText('not_permitted', { exact: true }).isVisible())
      await shot(page, 'task-not-permitted')

      await page.goto(`${baseUrl}/console/#/tasks/${placed.task_id}`)
      const attempt = page.locator('.timeline > li', { hasText: 'Attempt 1' })
      await attempt.getByRole('heading', { name: 'Why it was placed' }).waitFor()
      const relied = attempt.locator('.placed').getByRole('listitem')
      await relied.getByText('Consent on file', { exact: true }).waitFor()
      assert.deepEqual(await relied.locator('code').allTextContents(), [consentId, 'campaign.consent'])
      assert.equal(await page.getByRole('region', { name: 'Decision' }).count(), 0, 'no decision held the task')
      await shot(page, 'task-placed')
    } finally {
      await context.close()
    }
  })

  test('a wrong key is refused in words; sign-out forgets the key', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${baseUrl}/console/`)
      await page.getByLabel('API key or operator token').fill('ct_live_not_a_key')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('alert').getByText('not a valid API key').waitFor()
      await page.getByLabel('API key or operator token').fill(key)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      assert.equal(await page.evaluate(() => sessionStorage.length), 0)
    } finally {
      await context.close()
    }
  })

  test('the operator creates a campaign with a schedule, reads its preview for a Spanish mobile, and changes it', async () => {
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      await page.getByRole('link', { name: 'New campaign' }).click()
      await page.getByLabel('Routing key').fill('interview-reminder')
      await page.getByLabel('Channel').selectOption('voice')
      const window = page.locator('.window-row').first()
      await window.getByLabel('sat').check()
      await window.getByLabel('Until').fill('18:00')
      await page.getByLabel('Blackout dates').fill('2026-12-25')
      const preview = page.getByRole('region', { name: 'Schedule preview' })
      await preview.getByLabel('Phone').fill('+34 612 34 56 78')
      await preview.getByRole('button', { name: 'Preview' }).click()
      await preview.getByText('Atlantic/Canary').first().waitFor()
      assert.equal(await preview.locator('.openings tbody tr').count(), 5)
      await shot(page, 'campaign-preview')
      await page.getByRole('button', { name: 'Create campaign' }).click()
      await page.getByRole('heading', { name: 'interview-reminder · voice' }).waitFor()
      await shot(page, 'campaign')
      const campaigns = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data
      const made = campaigns.find((campaign: { routing_key: string }) => campaign.routing_key === 'interview-reminder')
      assert.deepEqual(made.schedule, {
        timezone: 'contact',
        windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat'], start: '09:00', end: '18:00' }],
        blackout_dates: ['2026-12-25'],
      })
      // A change, and a refusal in words at the field.
      await page.getByLabel('Most attempts').fill('5')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('status').getByText('Saved').waitFor()
      await page.locator('.window-row').first().getByLabel('Until').fill('08:00')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('alert').getByText('end must be after start').waitFor()
      const changed = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data
      assert.equal(changed.find((campaign: { id: string }) => campaign.id === made.id).attempts.max, 5)
    } finally {
      await context.close()
    }
  })

  test('the operator sets a Twilio campaign to leave a message on voicemails, and retry the next day', async () => {
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      await page.getByRole('link', { name: 'New campaign' }).click()
      await page.getByLabel('Routing key').fill('visit-reminder')
      await page.getByLabel('Channel').selectOption('voice')
      await page.locator('select[name="provider"]').selectOption('twilio')
      await page
        .locator('textarea[name="provider_config"]')
        .fill(JSON.stringify({ account_sid: `AC${'0'.repeat(32)}`, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' }))
      const voicemail = page.getByRole('region', { name: 'Voicemail' })
      await voicemail.locator('select[name="voicemail_policy"]').selectOption('leave_message')
      await voicemail.locator('textarea[name="voicemail_text"]').fill('{"en": "Hello {{first_name}}, see you at {{context.appointment_time}}.", "de": "Hallo {{first_name}}"}')
      await voicemail.locator('select[name="voicemail_then"]').selectOption('retry')
      await voicemail.locator('input[name="voicemail_delay_s"]').fill('93600')
      await page.getByRole('button', { name: 'Create campaign' }).click()
      await page.getByRole('heading', { name: 'visit-reminder · voice' }).waitFor()
      await shot(page, 'campaign-voicemail')
      const campaigns = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data
      const made = campaigns.find((campaign: { routing_key: string }) => campaign.routing_key === 'visit-reminder')
      assert.deepEqual(made.provider_config.voicemail, {
        policy: 'leave_message',
        message: { text: { en: 'Hello {{first_name}}, see you at {{context.appointment_time}}.', de: 'Hallo {{first_name}}' } },
      })
      assert.deepEqual(made.attempts.voicemail_left, { then: 'retry', delay_s: 93600 })
      // Read back into the form as it was set.
      assert.equal(await page.locator('select[name="voicemail_policy"]').inputValue(), 'leave_message')
      assert.doesNotMatch(await page.locator('textarea[name="provider_config"]').inputValue(), /voicemail/)
    } finally {
      await context.close()
    }
  })

  test('the operator makes a campaign a marketing one by an AI voice, requiring express consent, and puts it back to its defaults', async () => {
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      await page.getByRole('link', { name: 'New campaign' }).click()
      await page.getByLabel('Routing key').fill('renewal-offer')
      await page.getByLabel('Channel').selectOption('voice')
      const compliance = page.getByRole('region', { name: 'Compliance' })
      await compliance.locator('select[name="purpose"]').selectOption('marketing')
      await compliance.locator('input[name="subject"]').fill('policy-renewal')
      await compliance.locator('select[name="artificial_voice"]').selectOption('yes')
      await compliance.getByLabel("the purpose's default consent").uncheck()
      assert.equal(await compliance.getByLabel('WhatsApp opt-in').count(), 0, 'not offered on a voice campaign')
      await compliance.getByLabel('express', { exact: true }).check()
      await page.getByRole('button', { name: 'Create campaign' }).click()
      await page.getByRole('heading', { name: 'renewal-offer · voice' }).waitFor()
      await shot(page, 'campaign-compliance')
      const madeOf = async () =>
        json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}/campaigns`, headers: bearer(OPERATOR_TOKEN) })).data.find(
          (campaign: { routing_key: string }) => campaign.routing_key === 'renewal-offer',
        )
      assert.deepEqual((await madeOf()).compliance, { purpose: 'marketing', subject: 'policy-renewal', artificial_voice: true, consent: { voice: ['express'] } })
      // Read back into the form as it was set, then the defaults again.
      const shown = page.getByRole('region', { name: 'Compliance' })
      assert.equal(await shown.locator('select[name="purpose"]').inputValue(), 'marketing')
      assert.equal(await shown.getByLabel('express', { exact: true }).isChecked(), true)
      await shown.locator('input[name="subject"]').fill('')
      await shown.locator('select[name="artificial_voice"]').selectOption('')
      await shown.getByLabel("the purpose's default consent").check()
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('status').getByText('Saved.').waitFor()
      assert.deepEqual((await madeOf()).compliance, { purpose: 'marketing' })
    } finally {
      await context.close()
    }
  })

  test("the operator reads the service's queues: with every task settled, nothing is due, running or undelivered", async () => {
    const depths = json(await service.app.inject({ method: 'GET', url: '/admin/v1/queues', headers: bearer(OPERATOR_TOKEN) })).data
    assert.equal(depths.interactions.running, 0)
    assert.equal(depths.tasks.due, 0)
    assert.equal(depths.tasks.oldest_due_at, null)
    assert.equal(depths.deliveries.pending, 0)
    assert.equal((await service.app.inject({ method: 'GET', url: '/admin/v1/queues', headers: bearer(key) })).statusCode, 403)
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Queues' }).click()
      const tasks = page.getByRole('region', { name: 'Tasks' })
      await tasks.getByText('Longest due: none').waitFor()
      await page.getByRole('region', { name: 'Webhook deliveries' }).getByText('retrying').waitFor()
      await shot(page, 'queues')
    } finally {
      await context.close()
    }
  })

  test("the operator adds a source, whose rules then refuse a trigger citing an unknown id type, and removes it", async () => {
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      const sources = page.getByRole('region', { name: 'Sources' })
      await sources.getByText('None: triggers may cite any source').waitFor()
      await sources.getByLabel('Source', { exact: true }).fill('Greenhouse')
      await sources.getByLabel('Id types').fill('application_id, candidate_id')
      await sources.getByRole('button', { name: 'Add source' }).click()
      const row = sources.getByRole('row', { name: /greenhouse/ })
      await row.getByText('application_id').waitFor()
      await shot(page, 'sources')
      const refused = await service.app.inject({
        method: 'POST',
        url: '/api/v2/triggers',
        headers: bearer(key),
        payload: { campaign: 'screening', ids: [{ source: 'greenhouse', type: 'badge', value: '1' }], contact: { phone: '+44 20 7946 0961' }, test_mode: true },
      })
      assert.equal(refused.statusCode, 422, refused.body)
      await row.getByRole('button', { name: 'Remove' }).click()
      await row.getByRole('button', { name: 'Remove: triggers may no longer cite it' }).click()
      await sources.getByText('None: triggers may cite any source').waitFor()
    } finally {
      await context.close()
    }
  })

  test('the operator signs in, opens the organization, issues a key shown once, and revokes it; the browser logs no error', async () => {
    const errorsBefore = consoleErrors.length
    const { context, page } = await signedIn(OPERATOR_TOKEN)
    try {
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().waitFor()
      assert.deepEqual(consoleErrors.slice(errorsBefore), [], 'signing in as the operator logs no failed request')
      await page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      await page.getByRole('heading', { name: 'API keys' }).waitFor()
      await page.getByLabel('What it is for').fill('CRM sync')
      await page.getByRole('button', { name: 'Issue key' }).click()
      const secret = await page.locator('.secret').textContent()
      assert.match(secret ?? '', /\S{20,}/)
      const described = await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(secret!) })
      assert.equal(json(described).data.name, 'CRM sync', 'the key shown is the key issued')
      await shot(page, 'organization')
      await page.getByRole('row', { name: /CRM sync/ }).getByRole('button', { name: 'Revoke' }).click()
      await page.getByRole('button', { name: 'Revoke: refused from now on' }).click()
      await page.getByRole('row', { name: /CRM sync/ }).getByText('revoked').waitFor()
      assert.equal((await service.app.inject({ method: 'GET', url: '/api/v2/key', headers: bearer(secret!) })).statusCode, 401)
    } finally {
      await context.close()
    }
  })

  // Last: the cap holds tasks of the organization the tests above share until it is turned off.
  test("the operator sets the organization's cap per number; a task it holds says so on its page; the cap is turned off", async () => {
    const operator = await signedIn(OPERATOR_TOKEN)
    try {
      await operator.page.getByRole('link', { name: 'Acme Recruiting' }).first().click()
      const cap = operator.page.getByRole('form', { name: 'Cap per number' })
      await cap.getByText('Off: each campaign calls').waitFor()
      await cap.getByLabel('In any 24 hours').fill('1')
      await cap.getByRole('button', { name: 'Save cap' }).click()
      await cap.getByText('at most 1 attempt to one number in any 24 hours').waitFor()
      await shot(operator.page, 'organization-cap')
      const organization = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}`, headers: bearer(OPERATOR_TOKEN) })).data
      assert.deepEqual(organization.contact_cap, { per_24h: 1, per_local_day: null })

      const contact = { first_name: 'Cappa', last_name: 'Held', phone: '+44 20 7946 0977' }
      const first = await trigger({ ids: [{ source: 'ats', type: 'candidate_id', value: 'CAP-1' }], contact })
      await waitUntil('the first call starts', async () => (await taskState(first.task_id)).attempts === 1)
      const second = await trigger({ ids: [{ source: 'ats', type: 'candidate_id', value: 'CAP-2' }], contact })
      await waitUntil('the second is held by the cap', async () => (await taskState(second.task_id)).waiting?.for === 'contact_cap')
      const reader = await signedIn(key)
      try {
        await reader.page.goto(`${baseUrl}/console/#/tasks/${second.task_id}`)
        await reader.page.getByText("Held by the organization's cap on attempts to this number across campaigns").waitFor()
        await shot(reader.page, 'task-held-by-cap')
      } finally {
        await reader.context.close()
      }

      await cap.getByRole('button', { name: 'Turn off' }).click()
      await cap.getByText('Off: each campaign calls').waitFor()
      const off = json(await service.app.inject({ method: 'GET', url: `/admin/v1/organizations/${orgId}`, headers: bearer(OPERATOR_TOKEN) })).data
      assert.deepEqual(off.contact_cap, { per_24h: null, per_local_day: null })
    } finally {
      await operator.context.close()
    }
  })
})
