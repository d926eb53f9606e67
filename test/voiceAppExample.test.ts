/**
 * The README's voice app (examples/voice-app.js), run as it is against the
 * service: Twilio's signed requests for an answered call (as a redirect from
 * the service's answer route brings them) get TwiML built from the
 * interaction's context, and the person's answer becomes its result. The
 * README shows the file as it is.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { after, before, test } from 'node:test'
import { acceptedTrigger, bearer, createCampaign, freePort, json, OPERATOR_TOKEN, seedOrganization, startService, taskOf, type TestService } from './support/service.ts'

const AUTH_TOKEN = 'twilio-auth-token-of-the-voice-app'
const PUBLIC_URL = 'https://voice.example.com'
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
const EXAMPLE = new URL('../examples/voice-app.js', import.meta.url)

let service: TestService
let app: ChildProcess
let appUrl: string
let org: Awaited<ReturnType<typeof seedOrganization>>

before(async () => {
  service = await startService()
  const serviceUrl = await service.app.listen({ port: 0, host: '127.0.0.1' })
  org = await seedOrganization(service.app)
  const appKey = json(
    await service.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.orgId}/api-keys`,
      headers: bearer(OPERATOR_TOKEN),
      payload: { name: 'voice app', scopes: ['conversations:read', 'conversations:write'] },
    }),
  ).data.key
  const port = await freePort()
  appUrl = `http://127.0.0.1:${port}`
  app = spawn(process.execPath, [EXAMPLE.pathname], {
    env: { PATH: process.env.PATH, SERVICE_URL: serviceUrl, APP_KEY: appKey, TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_URL, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    app.once('exit', (code) => reject(new Error(`the voice app exited with ${code}`)))
    app.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('voice app on port') && resolve())
  })
})
after(async () => {
  app.kill()
  await service.close()
})

/** Twilio's request for instructions, signed as Twilio signs it for the public URL the app is reached at. */
function twilioRequest(path: string, params: Record<string, string>, { signed = true } = {}) {
  const data = Object.keys(params).sort().reduce((text, name) => text + name + params[name], `${PUBLIC_URL}${path}`)
  const signature = createHmac('sha1', AUTH_TOKEN).update(data).digest('base64')
  return fetch(`${appUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signed ? { 'x-twilio-signature': signature } : {}) },
    body: new URLSearchParams(params),
  })
}

test('the voice app greets the person by the context it reads, and reports what they said as the result', async () => {
  const campaign = await createCampaign(service.app, org.orgId, {
    routing_key: 'voice-app',
    channel: 'voice',
    schedule: ALWAYS_OPEN,
    context: { company: 'Acme & Sons' },
    provider_config: { outcomes: ['completed'], duration_ms: 60_000 },
  })
  const created = await acceptedTrigger(service.app, org.key, {
    campaign: campaign.routing_key,
    contact: { first_name: 'Ada', phone: '+44 20 7946 0958', language: 'en-GB' },
  })
  await service.app.workers!.dispatcher.runOnce()
  const interactionId = (await taskOf(service.app, org.key, created.task_id)).interactions[0].id
  const call = { CallSid: `CA${'1'.repeat(32)}`, AccountSid: `AC${'2'.repeat(32)}`, CallStatus: 'in-progress', From: '+14155550100', To: '+442079460958' }

  const greeting = await twilioRequest(`/twiml?interaction_id=${interactionId}`, call)
  assert.equal(greeting.status, 200)
  const twiml = await greeting.text()
  assert.match(twiml, /<Gather input="speech" action="\/answer\?interaction_id=int_[0-9a-z]{26}" language="en-GB">/)
  assert.match(twiml, /<Say>Hello Ada, this is Acme &#38; Sons: are you still interested in the role\?<\/Say>/)

  const answered = await twilioRequest(`/answer?interaction_id=${interactionId}`, { ...call, SpeechResult: 'Yes, very much.' })
  assert.equal(answered.status, 200)
  assert.match(await answered.text(), /<Say>Thank you\. Goodbye\.<\/Say><Hangup\/>/)
  const { result } = json(await service.app.inject({ method: 'GET', url: `/api/v2/interactions/${interactionId}`, headers: bearer(org.key) })).data
  assert.equal(result.disposition, 'interested')
  assert.deepEqual(result.transcript, [
    { role: 'agent', text: 'are you still interested in the role?' },
    { role: 'contact', text: 'Yes, very much.' },
  ])

  assert.equal((await twilioRequest(`/twiml?interaction_id=${interactionId}`, call, { signed: false })).status, 403)
})

test('the README shows the voice app as it is', async () => {
  const [readme, example] = await Promise.all([readFile(new URL('../docs/conversations.md', import.meta.url), 'utf8'), readFile(EXAMPLE, 'utf8')])
  assert.ok(readme.includes(`\`\`\`js\n${example}\`\`\``), 'docs/conversations.md holds examples/voice-app.js in a js block, unchanged')
})
