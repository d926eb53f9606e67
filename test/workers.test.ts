/**
 * Never twice, with real processes on one PostgreSQL: worker processes
 * (`cli worker`) share the due tasks, each attempt is started exactly once on
 * the provider, and a worker killed while it dials causes no second dial.
 * The provider is the local Twilio fake, which counts every call created.
 * Each worker serves its own /metrics, which together count every start once.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, afterEach, before, describe, test } from 'node:test'
import { createChannels } from '../src/channels/index.ts'
import { type FakeTwilio, startFakeTwilio } from './fakes/twilio.ts'
import { cliArguments, ROOT } from './support/cli.ts'
import { parsePrometheusText, sampleValue } from './support/prometheus.ts'
import { bearer, freePort, json, onPostgres, OPERATOR_TOKEN, PHONE_HASH_KEY, seedOrganization, startService, type TestService } from './support/service.ts'

const ACCOUNT_SID = `AC${'fedcba9876543210'.repeat(2)}`
const AUTH_TOKEN = 'worker-test-twilio-token'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const TASKS = 1000

describe('worker processes on one PostgreSQL', { skip: onPostgres ? false : 'needs PostgreSQL (DATABASE_URL)' }, () => {
  let service: TestService
  let twilio: FakeTwilio
  let org: Awaited<ReturnType<typeof seedOrganization>>
  let baseUrl: string
  const workers: ChildProcess[] = []

  before(async () => {
    twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: AUTH_TOKEN } })
    const port = await freePort()
    baseUrl = `http://127.0.0.1:${port}`
    const channels = createChannels({ publicBaseUrl: baseUrl, twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: twilio.url }, (name) =>
      name === 'TWILIO_AUTH_TOKEN' ? AUTH_TOKEN : undefined,
    )
    // The API alone, as `serve --no-workers`: only the worker processes dial.
    service = await startService({ channels, workers: false })
    await service.app.listen({ port, host: '127.0.0.1' })
    org = await seedOrganization(service.app)
  })
  // A test that fails leaves no worker behind to take the next test's tasks.
  afterEach(() => {
    for (const worker of workers.splice(0)) worker.kill('SIGKILL')
  })
  after(async () => {
    await service.close()
    await twilio.close()
  })

  /**
   * A worker process, once it listens for wake-ups and dispatches, with where it serves /metrics (on a port
   * the system chose); its lines at warn and above go to standard error.
   */
  async function startWorker(): Promise<{ child: ChildProcess; metricsUrl: string }> {
    const worker = spawn(process.execPath, cliArguments('worker'), {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        ...service.environment,
        PHONE_HASH_KEY,
        OPERATOR_TOKEN,
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        PUBLIC_BASE_URL: baseUrl,
        TWILIO_API_BASE_URL: twilio.url,
        TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    workers.push(worker)
    const lines = createInterface({ input: worker.stdout! })
    const metricsPort = await new Promise<number>((resolve, reject) => {
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it was ready`)))
      lines.on('line', (line) => {
        if (line.includes('"msg":"worker ready"')) resolve(JSON.parse(line).metricsPort)
        else if (/"level":([4-6]0)/.test(line)) process.stderr.write(`${line}\n`)
      })
    })
    return { child: worker, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` }
  }

  /** How many attempts a worker's /metrics says it started. */
  async function attemptsStartedBy(worker: { metricsUrl: string }): Promise<number> {
    const response = await fetch(worker.metricsUrl, { headers: bearer(OPERATOR_TOKEN) })
    assert.equal(response.status, 200)
    return sampleValue(parsePrometheusText(await response.text()), 'conversation_trigger_task_dispatch_lag_seconds', 'conversation_trigger_task_dispatch_lag_seconds_count') ?? 0
  }

  async function campaign(routingKey: string): Promise<void> {
    const response = await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/campaigns`,
      headers: bearer(OPERATOR_TOKEN),
      payload: {
        routing_key: routingKey,
        channel: 'voice',
        schedule: ALWAYS_OPEN,
        provider: 'twilio',
        provider_config: { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml' },
        // Not the account's 1 call a second by default: 1,000 calls are placed at once here.
        pacing: { per_second: 1_000_000 },
      },
    })
    assert.equal(response.statusCode, 201, response.body)
  }

  async function trigger(routingKey: string): Promise<string> {
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: { campaign: routingKey, contact: { phone: '+442079460958' } },
    })
    assert.equal(response.statusCode, 201, response.body)
    return json(response).data.task_id
  }

  async function until(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  const createdCalls = () => twilio.requests.filter((request) => request.method === 'POST')
  const interactionOf = (request: { form: URLSearchParams }) => /calls\/(int_[0-9a-z]+)\/status$/.exec(request.form.get('StatusCallback') ?? '')?.[1]

  test(`two workers start each of ${TASKS} due tasks exactly once`, async (t) => {
    await campaign('many')
    // Both are up before any task is due: the first one up could otherwise start them all before the other is.
    const pair = await Promise.all([startWorker(), startWorker()])
    const before = createdCalls().length
    const started = Date.now()
    const taskIds: string[] = []
    for (let i = 0; i < TASKS; i += 50) taskIds.push(...(await Promise.all(Array.from({ length: Math.min(50, TASKS - i) }, () => trigger('many')))))
    const dialled = async () => {
      const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM interactions WHERE provider_ref IS NOT NULL`)
      return row!.n >= TASKS
    }
    await until(dialled, 120_000, 'every task to be dialled')
    const seconds = (Date.now() - started) / 1000
    // Anything still in flight would show up here.
    await new Promise((resolve) => setTimeout(resolve, 1000))

    const calls = createdCalls().slice(before)
    assert.equal(calls.length, TASKS)
    const interactions = new Set(calls.map(interactionOf))
    assert.equal(interactions.size, TASKS)
    const rows = await service.db.query<{ task_id: string; attempts: number }>(
      `SELECT task_id, count(*)::int AS attempts FROM interactions WHERE task_id = ANY($1::text[]) GROUP BY task_id`,
      [taskIds],
    )
    assert.equal(rows.length, TASKS)
    assert.ok(rows.every((row) => row.attempts === 1))
    const [stray] = await service.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM interactions WHERE id <> ALL($1::text[]) AND task_id = ANY($2::text[])`,
      [[...interactions], taskIds],
    )
    assert.equal(stray!.n, 0)
    const byWorker = await service.db.query<{ started_by: string; n: number }>(
      `SELECT started_by, count(*)::int AS n FROM interactions WHERE task_id = ANY($1::text[]) GROUP BY started_by`,
      [taskIds],
    )
    assert.equal(byWorker.length, 2, 'both workers started calls')
    // Each worker's /metrics counts its own starts, which Prometheus sums; the operator token guards it as on the API.
    const startsCounted = await Promise.all(pair.map(attemptsStartedBy))
    assert.deepEqual(startsCounted.toSorted(), byWorker.map((row) => row.n).toSorted())
    assert.equal((await fetch(pair[0]!.metricsUrl)).status, 401)
    assert.equal((await fetch(pair[0]!.metricsUrl, { headers: bearer(org.key) })).status, 403)
    t.diagnostic(`${TASKS} tasks triggered and dialled in ${seconds.toFixed(1)} s: ${byWorker.map((row) => row.n).join(' + ')} by the two workers`)
  })

  test('of two workers, one killed mid-dispatch: no attempt is started twice', async (t) => {
    await campaign('halved')
    const taskIds: string[] = []
    for (let i = 0; i < 400; i++) taskIds.push(await trigger('halved'))
    const before = createdCalls().length
    const [doomed, survivor] = await Promise.all([startWorker(), startWorker()])
    await until(async () => createdCalls().length - before >= 50, 60_000, 'the first calls')
    doomed.child.kill('SIGKILL')
    await new Promise((resolve) => doomed.child.once('exit', resolve))
    // The survivor takes every task the dead worker had not started: the dead one holds nothing.
    const settledDown = async () => {
      const [row] = await service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1::text[]) AND status = 'pending'`, [taskIds])
      return row!.n === 0
    }
    await until(settledDown, 60_000, 'the survivor to take every task')
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const calls = createdCalls().slice(before)
    const dialled = calls.map(interactionOf)
    assert.equal(new Set(dialled).size, dialled.length, 'no interaction dialled twice')
    const rows = await service.db.query<{ task_id: string; attempt: number; n: number }>(
      `SELECT task_id, attempt, count(*)::int AS n FROM interactions WHERE task_id = ANY($1::text[]) GROUP BY task_id, attempt`,
      [taskIds],
    )
    assert.equal(rows.length, taskIds.length, 'every task started')
    assert.ok(rows.every((row) => row.n === 1 && row.attempt === 1), 'one interaction per task, its first attempt')
    const recorded = new Set(
      (await service.db.query<{ id: string }>(`SELECT id FROM interactions WHERE task_id = ANY($1::text[])`, [taskIds])).map((row) => row.id),
    )
    assert.ok(dialled.every((id) => recorded.has(id!)), 'every call was recorded before it was made')
    t.diagnostic(`${dialled.length} calls made, ${recorded.size} attempts recorded, ${taskIds.length} tasks`)
  })

  test('a worker process hears of a new trigger at once, not at its next poll', async (t) => {
    await campaign('prompt')
    const worker = await startWorker()
    // Idle: nothing due, so only a wake-up or the 500 ms poll makes it look.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const delays: number[] = []
    for (let i = 0; i < 5; i++) {
      const taskId = await trigger('prompt')
      await until(async () => (await service.db.query(`SELECT 1 FROM interactions WHERE task_id = $1`, [taskId])).length > 0, 10_000, 'the call')
      const [row] = await service.db.query<{ ms: number }>(
        `SELECT extract(epoch FROM i.started_at - t.created_at)::float8 * 1000 AS ms FROM interactions i JOIN tasks t ON t.id = i.task_id WHERE t.id = $1`,
        [taskId],
      )
      delays.push(row!.ms)
      await new Promise((resolve) => setTimeout(resolve, 700))
    }
    delays.sort((a, b) => a - b)
    t.diagnostic(`trigger committed to attempt recorded: ${delays.map((ms) => ms.toFixed(1)).join(', ')} ms`)
    // Found by the poll alone, the median would be about 250 ms.
    assert.ok(delays[2]! < 100, `median ${delays[2]} ms`)
  })

  test('a worker killed while it dials causes no second dial', async () => {
    await campaign('killed')
    const taskId = await trigger('killed')
    // Twilio creates the call but answers only after the worker is gone.
    twilio.delayNext(60_000)
    const before = createdCalls().length
    const worker = await startWorker()
    await until(async () => createdCalls().length > before, 30_000, 'the call to be created')
    worker.child.kill('SIGKILL')
    await new Promise((resolve) => worker.child.once('exit', resolve))
    const [call] = createdCalls().slice(before)
    const interactionId = interactionOf(call!)!

    // Another worker takes over; the attempt is recorded as started, so it does not dial again.
    const successor = await startWorker()
    await new Promise((resolve) => setTimeout(resolve, 2000))
    assert.equal(createdCalls().length, before + 1)

    // Twilio reports the call it did place; the callback settles the attempt with its real outcome.
    const callSid = twilio.callSidFor(call!.form.get('StatusCallback')!)
    assert.ok(callSid, 'the fake has the call')
    assert.equal(await twilio.finishCall(callSid, { status: 'completed', answeredBy: 'human', duration: 30 }), 204)
    const state = json(await service.app.inject({ method: 'GET', url: `/api/v2/tasks/${taskId}`, headers: bearer(org.key) })).data
    assert.equal(state.outcome, 'reached')
    assert.equal(state.interactions.length, 1)
    assert.equal(state.interactions[0].id, interactionId)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    assert.equal(createdCalls().length, before + 1)
  })
})
