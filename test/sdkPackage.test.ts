/**
 * The SDK as its users get it: sdk/ packed by `npm pack` (which builds it),
 * the tarball installed into a project of its own, offline (it has no
 * dependencies), then used by an ESM script and a CommonJS script, each a
 * child process talking HTTP to the running service; and the installed
 * package type-checked by strict TypeScript consumers of each module system
 * (nodenext), and of a bundler's resolution, and so are sdk/README.md's samples.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const run = promisify(execFile)
const repository = path.resolve(import.meta.dirname, '..')
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const CALL_MS = 200
const MINUTE = 60_000

let service: TestService
let baseUrl: string
let now = Date.now()
let workDirectory: string
/** The project the tarball is installed into. */
let consumer: string
let installed: string

before(async () => {
  service = await startService({ now: () => now, allowPrivateWebhookUrls: true })
  baseUrl = await service.app.listen({ port: 0, host: '127.0.0.1' })
  workDirectory = await mkdtemp(path.join(tmpdir(), 'sdk-package-'))
  await run('npm', ['pack', '--pack-destination', workDirectory, '--silent'], { cwd: path.join(repository, 'sdk') })
  const [tarball] = (await readdir(workDirectory)).filter((name) => name.endsWith('.tgz'))
  assert.equal(tarball, 'conversation-trigger-sdk-0.1.0.tgz', 'the name sdk/README.md tells to install')
  consumer = path.join(workDirectory, 'consumer')
  await mkdir(consumer)
  await writeFile(path.join(consumer, 'package.json'), `${JSON.stringify({ name: 'sdk-consumer', version: '1.0.0', private: true }, null, 2)}\n`)
  await run('npm', ['install', path.join(workDirectory, tarball), '--offline', '--no-audit', '--no-fund'], { cwd: consumer })
  installed = path.join(consumer, 'node_modules', '@conversation-trigger', 'sdk')
})
after(async () => {
  await service?.close()
  if (workDirectory !== undefined) await rm(workDirectory, { recursive: true, force: true })
})

test('the tarball holds both builds, their declarations and the README, not the sources', async () => {
  const files = (await readdir(installed, { recursive: true })).map((file) => file.split(path.sep).join('/')).filter((file) => !file.endsWith('.map'))
  for (const file of ['README.md', 'package.json', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/esm/schema.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/schema.d.ts', 'dist/cjs/package.json']) {
    assert.ok(files.includes(file), `${file} is in the package`)
  }
  assert.deepEqual(files.filter((file) => file.startsWith('src/') || (file.endsWith('.ts') && !file.endsWith('.d.ts'))), [])
  assert.deepEqual((await readdir(path.join(consumer, 'node_modules'))).sort(), ['.package-lock.json', '@conversation-trigger'], 'nothing else installed')
})

/**
 * What a script is given: an organization whose endpoint's deliveries failed
 * and were given up (its receiver answered 500, then it was disabled and
 * enabled again), and one of those webhooks as the receiver got it.
 */
async function organizationAfterAnOutage(receiver: Receiver) {
  const since = new Date(now).toISOString()
  const seeded = await seedOrganization(service.app, { scopes: ['triggers:write', 'triggers:read', 'webhooks:manage'], schedule: ALWAYS_OPEN })
  const admin = bearer(OPERATOR_TOKEN)
  const configured = await service.app.inject({
    method: 'PATCH',
    url: `/admin/v1/organizations/${seeded.orgId}/campaigns/${seeded.campaign.id}`,
    headers: admin,
    payload: { provider_config: { duration_ms: CALL_MS, result: { disposition: 'interested', summary: 'Free on Tuesdays.' } } },
  })
  assert.equal(configured.statusCode, 200, configured.body)
  const key = bearer(seeded.key)
  const endpoint = json(await service.app.inject({ method: 'POST', url: '/api/v2/webhook-endpoints', headers: key, payload: { url: receiver.url } })).data
  const trigger = await service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: key, payload: { campaign: seeded.routingKey, contact: { phone: '+44 20 7946 0958' } } })
  assert.equal(trigger.statusCode, 201, trigger.body)
  receiver.answerAll({ status: 500 })
  await service.app.workers!.dispatcher.runOnce()
  now += CALL_MS
  await service.app.workers!.dispatcher.runOnce()
  await service.app.workers!.deliverer.runOnce()
  await receiver.waitFor(2)
  const failed = [...receiver.received]
  // Disabling gives up what is pending; enabled again, the endpoint receives (200) what is sent from now on.
  for (const enabled of [false, true]) {
    const changed = await service.app.inject({ method: 'PATCH', url: `/api/v2/webhook-endpoints/${endpoint.id}`, headers: key, payload: { enabled } })
    assert.equal(changed.statusCode, 200, changed.body)
  }
  receiver.answerAll({ status: 200 })
  now += MINUTE
  const completed = failed.find((request) => JSON.parse(request.body).type === 'task.completed')!
  assert.match(completed.body, /"outcome":"reached"/)
  return {
    input: {
      baseUrl,
      apiKey: seeded.key,
      campaign: seeded.routingKey,
      endpointId: endpoint.id as string,
      since,
      webhook: { body: completed.body, headers: completed.headers, secret: endpoint.secret as string },
    },
    setUpTaskId: json(trigger).data.task_id as string,
    failedWebhookIds: failed.map((request) => request.headers['webhook-id']),
  }
}

/**
 * The script's work, the same for both module systems: only how it loads
 * the SDK differs (the preambles below). It prints what it saw as JSON.
 */
const SCRIPT_BODY = `
async function main(sdk, createServer, entry) {
  const input = JSON.parse(process.env.SDK_SCRIPT_INPUT)
  const client = new sdk.ConversationTriggerClient({ apiKey: input.apiKey, baseUrl: input.baseUrl })
  const created = []
  for (const n of [0, 1, 2]) created.push((await client.createTrigger({ campaign: input.campaign, contact: { phone: '+44 20 7946 097' + n } })).task_id)
  const firstPage = await client.listTasks({ limit: 3 })
  const lastPage = await client.listTasks({ limit: 3, before: firstPage.nextCursor })
  const iterated = []
  for await (const task of client.tasks({ limit: 2 })) iterated.push(task.id)
  const recovery = await client.recoverWebhookEndpoint(input.endpointId, { since: input.since })

  const { body, headers, secret } = input.webhook
  const event = sdk.verifyWebhook(body, headers, secret)
  const refusal = (rawBody) => {
    try {
      sdk.verifyWebhook(rawBody, headers, secret)
      return 'accepted'
    } catch (error) {
      return error instanceof sdk.WebhookVerificationError ? error.name : String(error)
    }
  }

  const described = (error) => ({ name: error.name, aborted: error instanceof sdk.AbortedError, base: error instanceof sdk.ConversationTriggerError, cause: error.cause?.name })
  const abortedBefore = await client.getTask(created[0], { signal: AbortSignal.abort() }).then(() => 'answered', described)
  // A server that never answers: the request is aborted while it waits.
  const caller = new AbortController()
  const silent = createServer(() => caller.abort())
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const waiting = new sdk.ConversationTriggerClient({ apiKey: input.apiKey, baseUrl: 'http://127.0.0.1:' + silent.address().port })
  const abortedWhile = await waiting.getTask(created[0], { signal: caller.signal }).then(() => 'answered', described)
  silent.closeAllConnections()
  silent.close()

  console.log(JSON.stringify({
    entry,
    created,
    pages: [firstPage.data.map((task) => task.id), firstPage.nextCursor, lastPage.data.map((task) => task.id), lastPage.nextCursor ?? null],
    iterated,
    recovery,
    verified: { id: event.id, type: event.type, outcome: event.data.outcome },
    tampered: refusal(body.replace('"outcome":"reached"', '"outcome":"failed"')),
    abortedBefore,
    abortedWhile,
  }))
}
`

const SCRIPTS = {
  esm: {
    file: 'use-sdk.mjs',
    preamble: `import * as sdk from '@conversation-trigger/sdk'\nimport { createServer } from 'node:http'\nawait main(sdk, createServer, import.meta.resolve('@conversation-trigger/sdk'))\n`,
    build: 'dist/esm/index.js',
  },
  cjs: {
    file: 'use-sdk.cjs',
    preamble: `const sdk = require('@conversation-trigger/sdk')\nconst { createServer } = require('node:http')\nmain(sdk, createServer, require.resolve('@conversation-trigger/sdk')).catch((error) => {\n  console.error(error)\n  process.exitCode = 1\n})\n`,
    build: 'dist/cjs/index.js',
  },
}

describe('the installed package, used from a script', () => {
  for (const [moduleSystem, script] of Object.entries(SCRIPTS)) {
    test(`${moduleSystem}: creates triggers, pages tasks, recovers an endpoint's failed deliveries, verifies a webhook and refuses it tampered, and an abort is its AbortedError`, async (t) => {
      const receiver = await startReceiver()
      t.after(() => receiver.close())
      const { input, setUpTaskId, failedWebhookIds } = await organizationAfterAnOutage(receiver)
      await writeFile(path.join(consumer, script.file), `${script.preamble}${SCRIPT_BODY}`)
      const { stdout } = await run(process.execPath, [script.file], { cwd: consumer, env: { ...process.env, SDK_SCRIPT_INPUT: JSON.stringify(input) } })
      const seen = JSON.parse(stdout)

      const entry = seen.entry.startsWith('file:') ? fileURLToPath(seen.entry) : seen.entry
      assert.equal(entry, path.join(installed, script.build), 'the build of its module system, from the installed package')
      const [first, second, third] = seen.created
      assert.deepEqual(seen.pages, [[third, second, first], first, [setUpTaskId], null])
      assert.deepEqual(seen.iterated, [third, second, first, setUpTaskId])
      const { queued, since, until, next } = seen.recovery
      assert.deepEqual({ queued, since, until, next }, { queued: 2, since: input.since, until: new Date(now).toISOString(), next: null })
      const receivedBefore = receiver.received.length
      await service.app.workers!.deliverer.runOnce()
      await receiver.waitFor(receivedBefore + 2)
      assert.deepEqual(receiver.received.slice(receivedBefore).map((request) => request.headers['webhook-id']), failedWebhookIds, 'the failed events sent again, with their ids')
      assert.deepEqual(seen.verified, { id: input.webhook.headers['webhook-id'], type: 'task.completed', outcome: 'reached' })
      assert.equal(seen.tampered, 'WebhookVerificationError')
      for (const aborted of [seen.abortedBefore, seen.abortedWhile]) assert.deepEqual(aborted, { name: 'AbortedError', aborted: true, base: true, cause: 'AbortError' })
    })
  }
})

/**
 * A consumer of each module system: the event union narrows by type (an
 * event type left out of the switch fails `never`; data of another type is
 * refused), and the error classes narrow by instanceof.
 */
const CONSUMER_BODY = `
export function describeEvent(event: WebhookEvent): string {
  switch (event.type) {
    case 'task.completed':
      return \`\${event.data.task_id} \${event.data.outcome}\`
    case 'interaction.finalized':
      return \`\${event.data.interaction_id} \${event.data.outcome}\`
    case 'interaction.result_added':
      return event.data.interaction_id
    case 'interaction.message_received':
      return event.data.message.text ?? ''
    case 'webhook.test':
      return event.data.message
    default: {
      const unhandled: never = event
      return unhandled
    }
  }
}

export function taskOfTest(event: WebhookEventOf<'webhook.test'>): string {
  // @ts-expect-error webhook.test's data names no task
  return event.data.task_id
}

export async function firstTaskOrWhy(client: ConversationTriggerClient, signal: AbortSignal): Promise<string> {
  try {
    const page = await client.listTasks({ limit: 1 }, { signal })
    const recovery = await client.recoverWebhookEndpoint('whe_1', { since: new Date(0).toISOString() }, { signal })
    return page.data[0]?.id ?? String(recovery.next)
  } catch (error) {
    if (error instanceof RateLimitError) return \`again at \${error.retryAt?.toISOString()} (\${error.retryAfterSeconds} s)\`
    if (error instanceof ValidationError) return error.detail.map((issue) => issue.loc.join('.')).join(', ')
    if (error instanceof ApiError) return \`\${error.status} \${error.code} \${error.requestId}\`
    if (error instanceof AbortedError) return String(error.cause)
    if (error instanceof ConversationTriggerError) return error.message
    throw error
  }
}

export function verified(body: string, headers: Record<string, string>, secret: string): WebhookEvent {
  return verifyWebhook(body, headers, secret)
}
`
const CONSUMER_IMPORT = `import {
  AbortedError,
  ApiError,
  ConversationTriggerClient,
  ConversationTriggerError,
  RateLimitError,
  ValidationError,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
} from '@conversation-trigger/sdk'
`

async function typeCheck(project: string, compilerOptions: Record<string, unknown>, files: Record<string, string>): Promise<string[]> {
  for (const [file, text] of Object.entries(files)) await writeFile(path.join(consumer, file), text)
  await writeFile(
    path.join(consumer, project),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        // The package's own declarations are checked too, under the consumer's settings.
        skipLibCheck: false,
        noEmit: true,
        target: 'ES2022',
        types: ['node'],
        typeRoots: [path.join(repository, 'node_modules', '@types')],
        ...compilerOptions,
      },
      files: Object.keys(files),
    }),
  )
  const tsc = path.join(repository, 'node_modules', 'typescript', 'bin', 'tsc')
  const { stdout } = await run(process.execPath, [tsc, '-p', project, '--listFilesOnly'], { cwd: consumer })
  // --listFilesOnly lists without checking; the check itself reports each error on stdout and fails.
  await run(process.execPath, [tsc, '-p', project], { cwd: consumer }).catch((error: { stdout: string }) => assert.fail(`${project}:\n${error.stdout}`))
  return stdout.split('\n').filter((file) => file.includes('@conversation-trigger/sdk/')).map((file) => path.relative(installed, file).split(path.sep).join('/'))
}

describe('the installed package, type-checked by a strict consumer', () => {
  test('nodenext: an ES module (.mts) gets the ESM declarations, a CommonJS one (.cts) the CommonJS declarations', async () => {
    const files = await typeCheck('tsconfig.nodenext.json', { module: 'nodenext', moduleResolution: 'nodenext' }, {
      'consumer.mts': `${CONSUMER_IMPORT}${CONSUMER_BODY}`,
      'consumer.cts': `${CONSUMER_IMPORT}${CONSUMER_BODY}`,
    })
    assert.ok(files.includes('dist/esm/index.d.ts'), files.join(', '))
    assert.ok(files.includes('dist/cjs/index.d.ts'), files.join(', '))
  })

  test('bundler: an ES module', async () => {
    const files = await typeCheck('tsconfig.bundler.json', { module: 'preserve', moduleResolution: 'bundler' }, { 'bundled.ts': `${CONSUMER_IMPORT}${CONSUMER_BODY}` })
    assert.ok(files.includes('dist/esm/index.d.ts'), files.join(', '))
  })

  test('the README\'s samples, each a module of its own, with what it assumes declared', async () => {
    const readme = await readFile(path.join(repository, 'sdk', 'README.md'), 'utf8')
    const samples = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)
    assert.ok(samples.length >= 9, `${samples.length} samples`)
    const files = Object.fromEntries(samples.map((sample, n) => [`readme-${n + 1}.mts`, `${assumedBy(sample)}\n${sample}\nexport {}\n`]))
    await typeCheck('tsconfig.readme.json', { module: 'nodenext', moduleResolution: 'nodenext' }, { 'frameworks.d.ts': FRAMEWORKS, ...files })
  })
})

/**
 * What the README's samples take as given, by name: a sample gets each one
 * it uses and neither declares nor imports itself.
 */
const README_ASSUMES: Record<string, string> = {
  client: 'declare const client: sdk.ConversationTriggerClient',
  endpoint: 'declare const endpoint: sdk.WebhookEndpointWithSecret',
  body: 'declare const body: sdk.TriggerRequest',
  application: 'declare const application: { id: string }',
  verifyWebhook: 'const { verifyWebhook } = sdk',
  createServer: "import { createServer } from 'node:http'",
  app: "import { app } from 'fastify-app'",
  alreadyHandled: 'declare function alreadyHandled(eventId: string): boolean',
  closeRecord: 'declare function closeRecord(ids: sdk.TaskCompletedData["ids"], outcome: string, result: sdk.ConversationResult | null): void',
  recordAttempt: 'declare function recordAttempt(interactionId: string, result: sdk.ConversationResult | null): void',
  recordReply: 'declare function recordReply(interactionId: string, text: string | null): void',
}

function assumedBy(sample: string): string {
  const given = (name: string) => new RegExp(`\\b(const|let|function)\\s+${name}\\b|import\\s+(${name}\\b|\\{[^}]*\\b${name}\\b)`).test(sample)
  const used = Object.entries(README_ASSUMES).filter(([name]) => new RegExp(`\\b${name}\\b`).test(sample) && !given(name))
  return [`import * as sdk from '@conversation-trigger/sdk'`, ...used.map(([, declaration]) => declaration)].join('\n')
}

/** The little of Express and Fastify the samples use (neither is installed here): the SDK's calls in them are what is checked. */
const FRAMEWORKS = `
declare module 'express' {
  import type { IncomingHttpHeaders } from 'node:http'
  interface Request { body: Buffer; headers: IncomingHttpHeaders }
  interface Response { sendStatus(status: number): Response }
  interface Application { post(path: string, parser: unknown, handler: (req: Request, res: Response) => unknown): void }
  function express(): Application
  namespace express { function raw(options: { type: string }): unknown }
  export default express
}
declare module 'fastify-app' {
  import type { IncomingHttpHeaders } from 'node:http'
  export const app: {
    addContentTypeParser(type: string, options: { parseAs: 'buffer' }, parser: (request: unknown, body: Buffer, done: (error: null, body: Buffer) => void) => void): void
    post(path: string, handler: (request: { body: unknown; headers: IncomingHttpHeaders }, reply: { code(status: number): { send(): unknown } }) => Promise<unknown>): void
  }
}
`
