/**
 * The service as an operator runs it: the CLI and `serve` as real processes
 * on one database, as the README's quick start uses them.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { openDatabase } from '../src/store/database.ts'
import { cliArguments, ROOT, runCli as cli } from './support/cli.ts'
import { parsePrometheusText, sampleValue } from './support/prometheus.ts'
import { startReceiver } from './support/receiver.ts'
import { matchesPhoneHashKey } from '../src/store/phoneHashKey.ts'
import { freePort, freshDatabase, onPostgres, PHONE_HASH_KEY, type TestDatabase } from './support/service.ts'

let dataDir: string
let database: TestDatabase | undefined

/** The environment of every process: a PostgreSQL schema of its own, or an embedded database in a temp dir. */
function environment(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const shared = database === undefined ? {} : { ...database.environment, PHONE_HASH_KEY }
  // A variable given as undefined is left unset.
  const env = Object.entries({ PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'info', ...shared, ...extra }).filter(([, value]) => value !== undefined)
  return Object.fromEntries(env)
}

const runCli = (args: string[], extra: Record<string, string | undefined> = {}) => cli(args, environment(extra))

/** `serve` (or a `worker`, which listens on METRICS_PORT), once its /healthz answers. */
async function startServer(extra: Record<string, string> = {}, command: 'serve' | 'worker' = 'serve') {
  const port = await freePort()
  const child = spawn(process.execPath, cliArguments(command), {
    cwd: ROOT,
    env: environment({ PORT: String(port), METRICS_PORT: String(port), HOST: '127.0.0.1', ...extra }),
  })
  let stdout = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stdout += chunk))
  const base = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`serve exited: ${stdout}`)
    try {
      if ((await fetch(`${base}/healthz`)).ok) break
    } catch {
      if (attempt > 300) {
        // Not left running: it would hold this test file open after the failure.
        child.kill('SIGKILL')
        throw new Error(`serve did not start: ${stdout}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  return {
    base,
    output: () => stdout,
    /** SIGTERM, and a clean exit (0) once the drain is over: a failure shows what the process logged, its shutdown steps included. */
    stop: async () => {
      const code = await new Promise<number | null>((resolve) => {
        child.on('close', resolve)
        child.kill('SIGTERM')
      })
      assert.equal(code, 0, `exit code ${code} after SIGTERM; the process logged:\n${stdout}`)
    },
    /** As a crash would end it: no shutdown at all. */
    kill: () =>
      new Promise<void>((resolve) => {
        child.on('close', () => resolve())
        child.kill('SIGKILL')
      }),
  }
}

function parse(output: { code: number | null; stdout: string; stderr: string }) {
  assert.equal(output.code, 0, output.stderr)
  return JSON.parse(output.stdout)
}

before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'trigger-service-'))
  if (process.env.DATABASE_URL !== undefined) database = await freshDatabase()
})
after(async () => {
  await database?.drop()
  await rm(dataDir, { recursive: true, force: true })
})

test('bad configuration stops start-up with one clear line', async () => {
  const result = await runCli(['serve'], { PORT: 'eighty' })
  assert.equal(result.code, 1)
  assert.equal(result.stderr, 'configuration error: PORT must be an integer from 0 to 65535, got "eighty"\n')
})

test('with DATABASE_URL, serve needs OPERATOR_TOKEN: processes sharing a database must share it', async () => {
  const result = await runCli(['serve'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })
  assert.equal(result.code, 1)
  assert.equal(result.stderr, 'configuration error: OPERATOR_TOKEN must be set when DATABASE_URL is (at least 24 characters)\n')
})

test('with DATABASE_URL, serve and worker need PHONE_HASH_KEY, and the one the database was first used with', async () => {
  const unreachable = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', OPERATOR_TOKEN: 'shared-operator-token-0123456789', PHONE_HASH_KEY: undefined }
  for (const command of [['serve'], ['worker']]) {
    const result = await runCli(command, unreachable)
    assert.equal(result.code, 1)
    assert.equal(result.stderr, 'configuration error: PHONE_HASH_KEY must be set when DATABASE_URL is (at least 32 characters), the same in every process\n')
  }
  const short = await runCli(['worker'], { ...unreachable, PHONE_HASH_KEY: 'too-short' })
  assert.equal(short.stderr, 'configuration error: PHONE_HASH_KEY must be at least 32 characters long\n')
  if (!onPostgres) return
  // The database keeps the fingerprint of the first key it was used with.
  assert.equal(await matchesPhoneHashKey(database!.db, Buffer.from(PHONE_HASH_KEY), Date.now()), true)
  const other = await runCli(['worker'], { OPERATOR_TOKEN: unreachable.OPERATOR_TOKEN, PHONE_HASH_KEY: 'another-phone-hash-key-0123456789abcdef', METRICS_PORT: '0' })
  assert.equal(other.code, 1)
  assert.equal(
    other.stderr,
    'configuration error: PHONE_HASH_KEY is not the key this database was first used with: erased numbers would no longer meet their suppressions\n',
  )
})

test('CLI admin commands, then serve: the key works until revoked', async () => {
  const org = parse(await runCli(['org', 'create', '--name', 'Acme']))
  assert.match(org.id, /^org_/)
  const key = parse(await runCli(['key', 'issue', '--org', org.id, '--name', 'ats']))
  assert.match(key.key, /^ctk_/)
  const campaign = parse(await runCli(['campaign', 'create', '--org', org.id, '--routing-key', 'screening', '--channel', 'voice', '--context', '{"company":"Acme"}']))
  assert.equal(campaign.routing_key, 'screening')

  const refused = await runCli(['campaign', 'create', '--org', org.id, '--routing-key', 'bad key', '--channel', 'fax'])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /--routing-key: String should match pattern/)
  assert.match(refused.stderr, /--channel: Input should be 'voice', 'whatsapp' or 'sms'/)
  const limited = parse(await runCli(['org', 'rate-limit', '--org', org.id, '--per-second', '20', '--burst', '40']))
  assert.deepEqual(limited.rate_limit, { per_second: 20, burst: 40 })
  assert.equal(parse(await runCli(['org', 'retention', '--org', org.id, '--days', '30'])).retention_days, 30)
  assert.deepEqual(parse(await runCli(['org', 'contact-cap', '--org', org.id, '--per-24h', '3'])).contact_cap, { per_24h: 3, per_local_day: null })
  const badCap = await runCli(['org', 'contact-cap', '--org', org.id, '--per-local-day', '0'])
  assert.equal(badCap.code, 1)
  assert.match(badCap.stderr, /--per-local-day: Input should be greater than or equal to 1/)
  assert.deepEqual(parse(await runCli(['org', 'contact-cap', '--org', org.id])).contact_cap, { per_24h: null, per_local_day: null })
  const badLimit = await runCli(['org', 'rate-limit', '--org', org.id, '--per-second', '0'])
  assert.equal(badLimit.code, 1)
  assert.match(badLimit.stderr, /--per-second: Input should be greater than or equal to 1/)
  assert.match(badLimit.stderr, /--burst: Field required/)
  assert.deepEqual(parse(await runCli(['org', 'rate-limit', '--org', org.id, '--default'])).rate_limit, { per_second: null, burst: null })
  const unknownOption = await runCli(['org', 'create', '--nme', 'typo'])
  assert.equal(unknownOption.code, 1)
  assert.match(unknownOption.stderr, /^Unknown option '--nme'/)

  // With the embedded database the token comes from the data directory (next test); on PostgreSQL it must be set.
  const tokenEnv: Record<string, string> = !onPostgres ? {} : { OPERATOR_TOKEN: 'shared-operator-token-0123456789' }
  const first = await startServer(tokenEnv)
  const token = tokenEnv.OPERATOR_TOKEN ?? (await readFile(path.join(dataDir, 'operator-token'), 'utf8')).trim()
  const trigger = (base: string) =>
    fetch(`${base}/api/v2/triggers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ campaign: 'screening', contact: { phone: '+44 20 7946 0958' } }),
    })
  assert.equal((await trigger(first.base)).status, 201)
  const orgs = await fetch(`${first.base}/admin/v1/organizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"name": "Second"}',
  })
  assert.equal(orgs.status, 201)
  await first.stop()
  assert.ok(!first.output().includes(key.key), 'the API key is never logged')

  parse(await runCli(['key', 'revoke', '--org', org.id, '--key', key.id]))
  const second = await startServer(tokenEnv)
  assert.equal((await trigger(second.base)).status, 401)
  await second.stop()
})

test('on the embedded database, a generated operator token is kept and printed on first start only', { skip: onPostgres && 'runs on the embedded database only' }, async () => {
  const ownDir = await mkdtemp(path.join(tmpdir(), 'trigger-service-token-'))
  try {
    const first = await startServer({ DATA_DIR: ownDir })
    await first.stop()
    const tokenFile = path.join(ownDir, 'operator-token')
    const token = (await readFile(tokenFile, 'utf8')).trim()
    assert.equal((await stat(tokenFile)).mode & 0o777, 0o600)
    assert.ok(first.output().includes(`Operator token (shown once): ${token}`))
    assert.ok(!first.output().split('\n').some((line) => line.startsWith('{') && line.includes(token)), 'never in a log line')
    const second = await startServer({ DATA_DIR: ownDir })
    const response = await fetch(`${second.base}/admin/v1/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"name": "Kept"}',
    })
    assert.equal(response.status, 201)
    await second.stop()
    assert.ok(!second.output().includes(token), 'printed on the first start only')
  } finally {
    await rm(ownDir, { recursive: true, force: true })
  }
})

test('OPERATOR_TOKEN from the environment is used and never printed', async () => {
  const token = 'env-operator-token-abcdefghijklmnop'
  const server = await startServer({ OPERATOR_TOKEN: token })
  const response = await fetch(`${server.base}/admin/v1/organizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"name": "Env"}',
  })
  assert.equal(response.status, 201)
  await server.stop()
  assert.ok(!server.output().includes(token))
})

test('logs are JSON lines unless a person reads them: LOG_FORMAT=pretty (the default at a terminal) writes a level word and the time of day', async () => {
  // A token of its own: on PostgreSQL serve needs one from the environment.
  const token = { OPERATOR_TOKEN: 'log-format-operator-token-0123456789' }
  const json = await startServer(token)
  await json.stop()
  // The line every start writes before /healthz answers (its "ready" may come after a stop sent at once).
  assert.match(json.output(), /^\{"level":30,"time":\d+,.*"msg":"Server listening at http:\/\/127\.0\.0\.1:\d+"\}$/m)
  const pretty = await startServer({ ...token, LOG_FORMAT: 'pretty' })
  await pretty.stop()
  assert.match(pretty.output(), /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/m)
  assert.doesNotMatch(pretty.output(), /"level":/)
})

test('serve runs the dispatcher: a test-mode trigger on an always-open simulator campaign starts within 1 s and completes within 2 s', async (t) => {
  const token = 'dispatch-operator-token-0123456789'
  const server = await startServer({ OPERATOR_TOKEN: token })
  try {
    const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const post = async (url: string, body: unknown, headers: Record<string, string> = admin) => {
      const response = await fetch(`${server.base}${url}`, { method: 'POST', headers, body: JSON.stringify(body) })
      assert.ok(response.ok, `${url}: ${response.status} ${await response.clone().text()}`)
      return ((await response.json()) as { data: any }).data
    }
    const org = await post('/admin/v1/organizations', { name: 'Realtime' })
    const key = await post(`/admin/v1/organizations/${org.id}/api-keys`, { name: 'demo' })
    await post(`/admin/v1/organizations/${org.id}/campaigns`, {
      routing_key: 'demo',
      channel: 'voice',
      schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] },
      provider_config: { outcomes: ['completed'], duration_ms: 200 },
    })
    const client = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }
    const started = performance.now()
    const trigger = await post('/api/v2/triggers', { campaign: 'demo', test_mode: true, contact: { phone: '+44 20 7946 0958' } }, client)
    let task: any
    do {
      await new Promise((resolve) => setTimeout(resolve, 25))
      task = ((await (await fetch(`${server.base}/api/v2/tasks/${trigger.task_id}`, { headers: client })).json()) as { data: any }).data
    } while (task.status !== 'completed' && performance.now() - started < 5000)
    const elapsed = performance.now() - started
    assert.equal(task.outcome, 'reached')
    assert.equal(task.test_mode, true)
    assert.ok(elapsed < 2000, `completed after ${Math.round(elapsed)} ms`)
    const startedAfter = Date.parse(task.interactions[0].started_at) - Date.parse(trigger.created_at)
    assert.ok(startedAfter < 1000, `the call started ${startedAfter} ms after the trigger`)
    t.diagnostic(`trigger to call started: ${startedAfter} ms; to task.completed: ${Math.round(elapsed)} ms`)
  } finally {
    await server.stop()
  }
})

test('a worker process serves /metrics to the metrics token and the operator, and its health checks on METRICS_PORT, and no API', async () => {
  const token = 'worker-operator-token-0123456789'
  const metricsToken = 'worker-metrics-token-0123456789'
  const worker = await startServer({ OPERATOR_TOKEN: token, METRICS_TOKEN: metricsToken }, 'worker')
  try {
    assert.equal((await fetch(`${worker.base}/readyz`)).status, 200)
    assert.equal((await fetch(`${worker.base}/metrics`)).status, 401)
    assert.equal((await fetch(`${worker.base}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
    const response = await fetch(`${worker.base}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
    assert.equal(response.status, 200)
    const families = parsePrometheusText(await response.text())
    // METRICS_LEGACY_NAMES is true unless set: the old names too, for this release.
    assert.match(families.get('tasks_pending')?.help ?? '', /^Deprecated: renamed conversation_trigger_tasks_pending;/)
    for (const family of [
      'conversation_trigger_task_dispatch_lag_seconds',
      'conversation_trigger_tasks_completed_total',
      'conversation_trigger_interactions_finalized_total',
      'conversation_trigger_provider_errors_total',
      'conversation_trigger_webhook_delivery_attempt_duration_seconds',
      'conversation_trigger_tasks_pending',
      'process_cpu_seconds_total',
    ]) {
      assert.ok(families.has(family), family)
    }
    assert.equal(sampleValue(families, 'conversation_trigger_http_request_duration_seconds', 'conversation_trigger_http_request_duration_seconds_count', { route: '/metrics', status_code: '401' }), 1)
    assert.equal((await fetch(`${worker.base}/api/v2/tasks`)).status, 404)
    assert.equal((await fetch(`${worker.base}/openapi.json`)).status, 404)
  } finally {
    await worker.stop()
  }
})

test('campaign settings from the CLI: checked as the admin API checks them, and changed by update', async () => {
  const org = parse(await runCli(['org', 'create', '--name', 'Settings']))
  const refused = await runCli(['campaign', 'create', '--org', org.id, '--routing-key', 'calls', '--channel', 'voice',
    '--schedule', '{"timezone": "Mars/Base", "windows": [{"days": ["mon"], "start": "10:00", "end": "09:00"}]}', '--max-concurrent', 'many'])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /--max-concurrent: Input should be a valid integer/)
  const created = parse(await runCli(['campaign', 'create', '--org', org.id, '--routing-key', 'calls', '--channel', 'voice', '--max-concurrent', '5']))
  assert.equal(created.max_concurrent, 5)
  const badSchedule = await runCli(['campaign', 'update', '--org', org.id, '--campaign', created.id,
    '--schedule', '{"timezone": "Mars/Base", "windows": [{"days": ["mon"], "start": "10:00", "end": "09:00"}]}'])
  assert.equal(badSchedule.code, 1)
  assert.match(badSchedule.stderr, /--schedule \(timezone\): /)
  assert.match(badSchedule.stderr, /--schedule \(windows\.0\.end\): /)
  const updated = parse(await runCli(['campaign', 'update', '--org', org.id, '--campaign', created.id, '--attempts', '{"max": 5}']))
  assert.equal(updated.attempts.max, 5)
  assert.equal(updated.attempts.expire_after_s, 604800)
})

test('a receiver down for its first three attempts gets the event, with one webhook-id however often, across SIGKILLs and restarts', async (t) => {
  const token = 'webhook-crash-operator-token-0123456789'
  const ownDir = await mkdtemp(path.join(tmpdir(), 'trigger-service-webhooks-'))
  const env = { OPERATOR_TOKEN: token, ALLOW_PRIVATE_WEBHOOK_URLS: 'true', DATA_DIR: ownDir }
  const receiverPort = await freePort()
  // Time travel for a crashed service: what the deliverer would do in minutes or hours is made due now.
  const fastForward = async () => {
    const db = await openDatabase({ databaseUrl: undefined, ...database?.connection, dataDir: ownDir })
    try {
      await db.query(`UPDATE deliveries SET due_at = now() WHERE status = 'pending'`)
    } finally {
      await db.close()
    }
  }
  let server = await startServer(env)
  try {
    const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = admin) => {
      const response = await fetch(`${server.base}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
      assert.ok(response.ok, `${method} ${url}: ${response.status}`)
      return ((await response.json()) as { data: any }).data
    }
    const org = await call('POST', '/admin/v1/organizations', { name: 'Crashy' })
    const key = await call('POST', `/admin/v1/organizations/${org.id}/api-keys`, { name: 'ats' })
    const client = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }
    await call('POST', `/admin/v1/organizations/${org.id}/campaigns`, {
      routing_key: 'demo',
      channel: 'voice',
      schedule: { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] },
      provider_config: { duration_ms: 100 },
    })
    await call('POST', `/admin/v1/organizations/${org.id}/webhook-endpoints`, { url: `http://127.0.0.1:${receiverPort}/hooks`, events: ['task.completed'] })
    await call('POST', '/api/v2/triggers', { campaign: 'demo', test_mode: true, contact: { phone: '+44 20 7946 0958' } }, client)

    const attemptsSoFar = async (): Promise<{ id: string; attempts: number } | undefined> => {
      const [event] = await call('GET', '/api/v2/events?type=task.completed', undefined, client)
      if (event === undefined) return undefined
      const detail = await call('GET', `/api/v2/events/${event.id}`, undefined, client)
      return { id: event.id, attempts: detail.deliveries[0]?.attempts.length ?? 0 }
    }
    const until = async (attempts: number) => {
      for (let waited = 0; ; waited += 50) {
        const seen = await attemptsSoFar()
        if (seen !== undefined && seen.attempts >= attempts) return seen.id
        if (waited > 10_000) throw new Error(`no attempt ${attempts}: ${JSON.stringify(seen)}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    // Three attempts while nothing listens, each by a process that is then killed; the receiver comes up before the fourth.
    let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(attempt)
      await server.kill()
      await fastForward()
      if (attempt === 3) {
        receiver = await startReceiver({ port: receiverPort })
        // The fourth reaches the receiver, but the process is killed before it hears back: it is never recorded.
        receiver.answer('hang')
      }
      server = await startServer(env)
    }
    try {
      await receiver!.waitFor(1)
      await server.kill()
      await fastForward()
      server = await startServer(env)
      const eventId = await until(4)
      await receiver!.waitFor(2)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      const { received } = receiver!
      assert.equal(received.length, 2)
      assert.deepEqual(new Set(received.map((request) => request.headers['webhook-id'])), new Set([eventId]))
      assert.equal(JSON.parse(received[1]!.body).id, eventId)
      const detail = await call('GET', `/api/v2/events/${eventId}`, undefined, client)
      assert.deepEqual(
        detail.deliveries[0].attempts.map((attempt: any) => attempt.status_code),
        [null, null, null, 200],
      )
      t.diagnostic('delivered after 3 refused connections, 4 SIGKILLs and one answer lost: twice, both with the one webhook-id')
    } finally {
      await receiver?.close()
    }
  } finally {
    await server.stop()
    await rm(ownDir, { recursive: true, force: true })
  }
})
