/**
 * Every provider callback route against mutated requests: a NUL, a lone
 * surrogate or 100 000 characters in every text field (ids among them),
 * instants and numbers beyond a Date's range and PostgreSQL's, every field
 * swapped for another JSON type, bodies truncated, oversized or not JSON,
 * each sent signed as the platform signs and unsigned. Whatever a platform
 * sends, the service answers below 500 and logs no error: an answer of 5xx
 * is retried by the platform for ever and meets the same fault.
 *
 * Deterministic: the mutations are enumerated from realistic bodies, and
 * where they are sampled it is by a seeded generator.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { after, before, test } from 'node:test'
import { statusCallbackUrl, answerUrl, amdCallbackUrl, inboundCallUrl, inboundStatusUrl } from '../../src/channels/twilio/webhooks.ts'
import type { JsonObject } from '../../src/domain/types.ts'
import { type FakeElevenLabs, startFakeElevenLabs } from '../fakes/elevenlabs.ts'
import { type FakeRetell, startFakeRetell } from '../fakes/retell.ts'
import { type FakeTwilio, startFakeTwilio, twilioSignature } from '../fakes/twilio.ts'
import { type FakeVapi, startFakeVapi } from '../fakes/vapi.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from '../fakes/whatsappCloud.ts'
import { bearer, json, OPERATOR_TOKEN, seedOrganization, startCalledBackService, taskOf, type TestService } from '../support/service.ts'

const SEED = 20261202
const ACCOUNT_SID = `AC${'0123456789abcdef'.repeat(2)}`
const WHATSAPP_NUMBER = '106540352242922'
const VAPI_ASSISTANT = '5b0a4a08-133c-4146-9315-0984f8c6be80'
const VAPI_NUMBER = '0a9d2a1c-8d3e-4e8f-9b1d-2f1e7c3a4b5c'
const RETELL_FROM = '+14155550100'
const ELEVENLABS_AGENT = 'agent_01jz5xq4fzeq8ta2y6kpm0n8ab'
const ELEVENLABS_NUMBER = 'phnum_01jz5xr0twilio0000000000'
const SECRETS: Record<string, string> = {
  TWILIO_AUTH_TOKEN: 'twilio-auth-token-for-fuzzing',
  WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token-for-fuzzing',
  WHATSAPP_APP_SECRET: 'whatsapp-app-secret-for-fuzzing',
  WHATSAPP_VERIFY_TOKEN: 'whatsapp-verify-token-for-fuzzing',
  VAPI_API_KEY: 'vapi-private-key-for-fuzzing',
  VAPI_WEBHOOK_SECRET: 'vapi-hmac-secret-for-fuzzing',
  RETELL_API_KEY: 'key_fuzzing0123456789abcdef0123',
  ELEVENLABS_API_KEY: 'sk_elevenlabs-api-key-for-fuzzing',
  ELEVENLABS_WEBHOOK_SECRET: 'wsec_elevenlabs-webhook-secret-for-fuzzing',
  ELEVENLABS_INITIATION_SECRET: 'elevenlabs-initiation-secret-for-fuzzing',
}
const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }
/** Over every route's body limit (ElevenLabs' is the largest, 4 MiB). */
const OVERSIZED_BYTES = 4 * 1024 * 1024 + 1

const now = Date.parse('2026-12-02T10:00:00Z')
const nowS = Math.floor(now / 1000)

/** mulberry32: a small generator whose sequence is fixed by its seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const random = seeded(SEED)
const pick = <T>(values: readonly T[], count: number): T[] => {
  const pool = [...values]
  const picked: T[] = []
  while (picked.length < count && pool.length > 0) picked.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!)
  return picked
}

/** What no column, jsonb value or index entry can hold, for every text field (ids among them). */
const TEXTS = (original: string) => ['\u0000', `${original}\u0000`, `\u0000${original}`, '\ud800', 'x'.repeat(100_000)]
/** Instants as text: past a Date's range either way, past PostgreSQL's start, year 0, beyond four digits, not one. */
const INSTANT_TEXTS = ['+275760-09-13T00:00:00.001Z', '-271821-04-19T00:00:00.000Z', '-100000-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '+100000-01-01T00:00:00Z', 'Sat, 13 Sep 275760 00:00:01 +0000', 'soon']
/** Numbers as instants (ms or s), durations and offsets: past a Date's range, past an integer column's, negative, fractional. */
const NUMBERS = [1e20, -1e20, 9e15, 8.64e15 + 1, 1e308, -1, 0, 0.5, Number.MAX_SAFE_INTEGER, 2 ** 31]
/** Every field swapped for another type; an object with a NUL in its key as well. */
const TYPES: unknown[] = [null, 0, 1e20, '', 'x', true, {}, [], [null], { 'key\u0000': 'value\u0000' }]

type Path = (string | number)[]
interface Mutation {
  name: string
  body: string
}

/** Every path in a JSON value, containers and leaves. */
function pathsOf(value: unknown, prefix: Path = []): { path: Path; value: unknown }[] {
  const here = prefix.length === 0 ? [] : [{ path: prefix, value }]
  if (Array.isArray(value)) return [...here, ...value.flatMap((member, index) => pathsOf(member, [...prefix, index]))]
  if (typeof value === 'object' && value !== null) return [...here, ...Object.entries(value).flatMap(([key, member]) => pathsOf(member, [...prefix, key]))]
  return here
}

function withValue(body: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(body) as any
  let parent = copy
  for (const key of path.slice(0, -1)) parent = parent[key]
  parent[path.at(-1)!] = value
  return copy
}

/** Data whose keys are the client's own (the analysis' fields): a NUL in them as well. */
const DATA_KEYS = new Set(['structuredData', 'custom_analysis_data', 'data_collection_results'])

/** A NUL in every text under each of `paths` (and in the keys of its data): what a conversation says, as a report whose ids still name its call. */
function nulInTextsUnder(body: unknown, ...paths: Path[]): unknown {
  const spoil = (value: unknown, keysToo: boolean): unknown =>
    typeof value === 'string'
      ? `${value}\u0000`
      : Array.isArray(value)
        ? value.map((member) => spoil(member, keysToo))
        : typeof value === 'object' && value !== null
          ? Object.fromEntries(Object.entries(value).map(([key, member]) => [keysToo ? `${key}\u0000` : key, spoil(member, keysToo || DATA_KEYS.has(key))]))
          : value
  return paths.reduce((spoiled, path) => withValue(spoiled, path, spoil(path.reduce((parent: any, key) => parent[key], spoiled), false)), body)
}

/**
 * A JSON body's mutations: each field given the values its kind cannot hold
 * (texts, instants as text, numbers), three other types drawn by the seeded
 * generator, and the body truncated at three drawn offsets, oversized, empty,
 * not an object, with a raw NUL byte.
 */
function jsonMutations(name: string, body: unknown): Mutation[] {
  const mutations: Mutation[] = []
  for (const { path, value } of pathsOf(body)) {
    const at = `${name} ${path.join('.')}`
    const values =
      typeof value === 'string' ? [...TEXTS(value), ...INSTANT_TEXTS] : typeof value === 'number' ? NUMBERS : []
    for (const mutated of [...values, ...pick(TYPES, 3)]) mutations.push({ name: `${at} = ${JSON.stringify(mutated).slice(0, 40)}`, body: JSON.stringify(withValue(body, path, mutated)) })
  }
  const text = JSON.stringify(body)
  for (const offset of pick(offsetsOf(text), 3)) mutations.push({ name: `${name} truncated at ${offset}`, body: text.slice(0, offset) })
  mutations.push(
    { name: `${name} oversized`, body: `{"padding":"${'x'.repeat(OVERSIZED_BYTES)}"}` },
    { name: `${name} empty`, body: '' },
    { name: `${name} array`, body: `[${text}]` },
    { name: `${name} raw NUL`, body: text.replace('"', '"\u0000') },
  )
  return mutations
}

/** A form's mutations: each parameter given the texts and instants no column holds, emptied, repeated, left out; the form truncated and oversized. */
function formMutations(name: string, params: Record<string, string>): { name: string; params: Record<string, string> | string }[] {
  const mutations: { name: string; params: Record<string, string> | string }[] = []
  for (const [key, value] of Object.entries(params)) {
    for (const mutated of [...TEXTS(value), ...INSTANT_TEXTS, ...NUMBERS.map(String), '']) {
      mutations.push({ name: `${name} ${key} = ${JSON.stringify(mutated).slice(0, 40)}`, params: { ...params, [key]: mutated } })
    }
    const { [key]: _left, ...without } = params
    mutations.push({ name: `${name} without ${key}`, params: without })
    mutations.push({ name: `${name} ${key} twice`, params: `${new URLSearchParams(params)}&${key}=${encodeURIComponent(value)}` })
  }
  const text = new URLSearchParams(params).toString()
  for (const offset of pick(offsetsOf(text), 3)) mutations.push({ name: `${name} truncated at ${offset}`, params: text.slice(0, offset) })
  mutations.push({ name: `${name} oversized`, params: `Padding=${'x'.repeat(OVERSIZED_BYTES)}` })
  return mutations
}

/** Where a text can be cut short: after each of its characters but the last. */
const offsetsOf = (text: string) => Array.from({ length: text.length - 1 }, (_, index) => index + 1)

const hmacHex = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex')

let service: TestService
let baseUrl: string
let org: Awaited<ReturnType<typeof seedOrganization>>
let twilio: FakeTwilio
let whatsapp: FakeWhatsAppCloud
let vapi: FakeVapi
let retell: FakeRetell
let elevenlabs: FakeElevenLabs
let routingKeys = 0
let phones = 0

before(async () => {
  twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: SECRETS.TWILIO_AUTH_TOKEN! } })
  whatsapp = await startFakeWhatsAppCloud({
    accessToken: SECRETS.WHATSAPP_ACCESS_TOKEN!,
    appSecret: SECRETS.WHATSAPP_APP_SECRET!,
    phoneNumberIds: [WHATSAPP_NUMBER],
    templates: { interview_invite: { languages: ['en'], bodyParameters: 0 } },
  })
  vapi = await startFakeVapi({ apiKey: SECRETS.VAPI_API_KEY!, webhookSecret: SECRETS.VAPI_WEBHOOK_SECRET!, assistantIds: [VAPI_ASSISTANT], phoneNumberIds: [VAPI_NUMBER], now: () => now })
  retell = await startFakeRetell({ apiKey: SECRETS.RETELL_API_KEY!, numbers: { [RETELL_FROM]: 'agent_bound_to_the_number' }, now: () => now })
  elevenlabs = await startFakeElevenLabs({
    apiKey: SECRETS.ELEVENLABS_API_KEY!,
    webhookSecret: SECRETS.ELEVENLABS_WEBHOOK_SECRET!,
    agents: [ELEVENLABS_AGENT],
    phoneNumbers: { [ELEVENLABS_NUMBER]: 'twilio' },
    now: () => now,
  })
  ;({ service, baseUrl, org } = await startCalledBackService({
    now: () => now,
    apiBaseUrls: { twilioApiBaseUrl: twilio.url, whatsappApiBaseUrl: whatsapp.url, vapiApiBaseUrl: vapi.url, retellApiBaseUrl: retell.url, elevenlabsApiBaseUrl: elevenlabs.url },
    secrets: SECRETS,
  }))
})

after(async () => {
  await service.close()
  for (const fake of [twilio, whatsapp, vapi, retell, elevenlabs]) await fake.close()
})

/** A campaign of the provider, and one task of it dispatched: its interaction (of a start whose answer was lost, with `lost`). */
async function startedInteraction(channel: 'voice' | 'whatsapp', provider: string, providerConfig: JsonObject, options: { lost?: () => void } = {}) {
  const routingKey = `fuzz-${++routingKeys}`
  const created = await service.app.inject({
    method: 'POST',
    url: `/admin/v1/organizations/${org.orgId}/campaigns`,
    headers: bearer(OPERATOR_TOKEN),
    payload: { routing_key: routingKey, channel, schedule: ALWAYS_OPEN, pacing: { per_second: 1_000_000 }, provider, provider_config: providerConfig },
  })
  assert.equal(created.statusCode, 201, created.body)
  const phone = `+4420794609${String(++phones).padStart(2, '0')}`
  const triggered = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value: `c-${phones}` }], contact: { phone, first_name: 'Ana' } },
  })
  assert.equal(triggered.statusCode, 201, triggered.body)
  options.lost?.()
  await service.app.workers!.dispatcher.runOnce()
  const interaction = (await taskOf(service.app, org.key, json(triggered).data.task_id)).interactions[0]
  return { id: interaction.id as string, phone }
}

interface Sent {
  mutation: string
  signed: boolean
  status: number
}

/** Sends each mutation signed and unsigned; what was answered 5xx. */
async function fuzz(
  mutations: Mutation[],
  send: (body: string, signed: boolean) => Promise<number>,
): Promise<{ failures: Sent[]; sent: number }> {
  const failures: Sent[] = []
  for (const mutation of mutations) {
    for (const signed of [true, false]) {
      const status = await send(mutation.body, signed)
      if (status >= 500) failures.push({ mutation: mutation.name, signed, status })
    }
  }
  return { failures, sent: mutations.length * 2 }
}

const post = async (url: string, headers: Record<string, string>, payload: string) =>
  (await service.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload })).statusCode

/** The log lines at level error (50) or above so far. */
const errorLines = () => service.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50)

const counts: Record<string, number> = {}

async function assertSurvives(route: string, run: () => Promise<{ failures: Sent[]; sent: number }>) {
  const before = errorLines().length
  const { failures, sent } = await run()
  counts[route] = sent
  assert.deepEqual(failures, [], `${route}: answered 5xx`)
  assert.deepEqual(errorLines().slice(before), [], `${route}: logged errors`)
}

test('Vapi server messages', async () => {
  const config = { assistant_id: VAPI_ASSISTANT, phone_number_id: VAPI_NUMBER, disposition_field: 'disposition', callback_at_field: 'callback_at' }
  const active = await startedInteraction('voice', 'vapi', config)
  const lost = await startedInteraction('voice', 'vapi', config, { lost: () => vapi.dropNext() })
  const fresh = await startedInteraction('voice', 'vapi', config)
  // A call is found by the interaction its metadata names, else by its own id: a message without metadata is looked up by the call id.
  const byCallId = { name: 'status-update by call id', body: { message: { type: 'status-update', status: 'ringing', timestamp: now, call: { id: vapi.callIdFor(active.id)! } } } }
  const bodiesOf = ({ id }: { id: string }, index: number) => {
    const call = { id: vapi.callIdFor(id)!, assistantOverrides: { metadata: { interaction_id: id } } }
    const startedAt = new Date(now - 60_000).toISOString()
    return [
      { name: `status-update ${index}`, body: { message: { type: 'status-update', status: 'in-progress', timestamp: now, call } } },
      {
        name: `end-of-call-report ${index}`,
        body: {
          message: {
            type: 'end-of-call-report',
            timestamp: now,
            endedReason: 'customer-ended-call',
            startedAt,
            endedAt: new Date(now).toISOString(),
            call,
            artifact: { messages: [{ role: 'bot', message: 'Hi Ana.', time: now - 50_000 }], transcript: 'AI: Hi Ana.', recordingUrl: 'https://storage.vapi.ai/a.wav' },
            analysis: { summary: 'Booked.', structuredData: { disposition: 'booked', callback_at: '2026-12-03T10:00:00Z' } },
          },
        },
      },
    ]
  }
  // Sent first to an interaction still running: its result is stored, not only read.
  const said = { name: 'end-of-call-report with a NUL in every text', body: JSON.stringify(nulInTextsUnder(bodiesOf(fresh, 2)[1]!.body, ['message', 'artifact'], ['message', 'analysis'])) }
  const bodies = [active, lost].flatMap(bodiesOf)
  // A call to the campaign's number: the service lands it and answers with the assistant.
  const askedFor = {
    name: 'assistant-request',
    body: { message: { type: 'assistant-request', timestamp: now, call: { id: '7f3c2a10-5d4e-4b6a-9c8d-1e2f3a4b5c6d', type: 'inboundPhoneCall', phoneNumberId: VAPI_NUMBER, customer: { number: '+447700900123' } }, phoneNumber: { id: VAPI_NUMBER } } },
  }
  await assertSurvives('vapi', () =>
    fuzz(
      [said, ...[byCallId, askedFor, ...bodies].flatMap(({ name, body }) => jsonMutations(name, body))],
      (body, signed) =>
        post('/providers/vapi/webhook', signed ? { 'x-timestamp': String(now), 'x-signature': hmacHex(SECRETS.VAPI_WEBHOOK_SECRET!, `${now}.${body}`) } : { 'x-timestamp': String(now) }, body),
    ),
  )
})

test('Retell webhooks and its inbound webhook', async () => {
  const config = { from_number: RETELL_FROM, disposition_field: 'disposition', callback_at_field: 'callback_at', opt_out_field: 'opt_out' }
  const active = await startedInteraction('voice', 'retell', config)
  const lost = await startedInteraction('voice', 'retell', config, { lost: () => retell.dropNext() })
  const fresh = await startedInteraction('voice', 'retell', config)
  const bodiesOf = ({ id }: { id: string }, index: number) => {
    const call = {
      call_id: retell.callIdFor(id)!,
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      start_timestamp: now - 60_000,
      end_timestamp: now,
      duration_ms: 60_000,
      metadata: { interaction_id: id },
      transcript_object: [{ role: 'agent', content: 'Hi Ana.', words: [{ word: 'Hi', start: 0.5, end: 0.7 }] }],
      recording_url: 'https://retell.example/recording.wav',
      call_analysis: { call_summary: 'Booked.', in_voicemail: false, custom_analysis_data: { disposition: 'booked', callback_at: '2026-12-03T10:00:00Z', opt_out: false } },
    }
    return ['call_started', 'call_ended', 'call_analyzed'].map((event) => ({ name: `${event} ${index}`, body: { event, call } }))
  }
  // Sent first to an interaction still running: its result is stored, not only read.
  const said = { name: 'call_analyzed with a NUL in every text', body: JSON.stringify(nulInTextsUnder(bodiesOf(fresh, 2)[2]!.body, ['call', 'transcript_object'], ['call', 'call_analysis'])) }
  const bodies = [active, lost].flatMap(bodiesOf)
  const signature = (body: string) => ({ 'x-retell-signature': `v=${now},d=${hmacHex(SECRETS.RETELL_API_KEY!, body + now)}` })
  // A call to the campaign's number, which the service lands and answers with the agent.
  const inbound = { event: 'call_inbound', call_inbound: { agent_id: 'agent_bound', agent_version: 0, from_number: '+447700900123', to_number: config.from_number } }
  await assertSurvives('retell', async () => {
    const webhooks = await fuzz([said, ...bodies.flatMap(({ name, body }) => jsonMutations(name, body))], (body, signed) => post('/providers/retell/webhook', signed ? signature(body) : {}, body))
    const asked = await fuzz(jsonMutations('call_inbound', inbound), (body, signed) => post('/providers/retell/inbound', signed ? signature(body) : {}, body))
    return { failures: [...webhooks.failures, ...asked.failures], sent: webhooks.sent + asked.sent }
  })
})

test('ElevenLabs post-call and conversation initiation webhooks', async () => {
  const config = { agent_id: ELEVENLABS_AGENT, agent_phone_number_id: ELEVENLABS_NUMBER, disposition_field: 'disposition', callback_at_field: 'callback_at' }
  const active = await startedInteraction('voice', 'elevenlabs', config)
  const lost = await startedInteraction('voice', 'elevenlabs', config, { lost: () => elevenlabs.dropNext() })
  const fresh = await startedInteraction('voice', 'elevenlabs', config)
  const bodiesOf = ({ id }: { id: string }, index: number) => {
    const conversationId = elevenlabs.conversationFor(id)!
    return [
      {
        name: `post_call_transcription ${index}`,
        body: {
          type: 'post_call_transcription',
          event_timestamp: nowS,
          data: {
            agent_id: ELEVENLABS_AGENT,
            conversation_id: conversationId,
            status: 'done',
            transcript: [{ role: 'agent', message: 'Hi Ana.', time_in_call_secs: 1, tool_results: [] }],
            metadata: { start_time_unix_secs: nowS - 60, call_duration_secs: 60 },
            analysis: { transcript_summary: 'Booked.', data_collection_results: { disposition: { value: 'booked' }, callback_at: { value: '2026-12-03T10:00:00Z' } } },
            conversation_initiation_client_data: { dynamic_variables: { interaction_id: id } },
          },
        },
      },
      {
        name: `call_initiation_failure ${index}`,
        body: { type: 'call_initiation_failure', event_timestamp: nowS, data: { agent_id: ELEVENLABS_AGENT, conversation_id: conversationId, failure_reason: 'unknown', metadata: { type: 'twilio', body: { CallStatus: 'busy', sip_status_code: 486 } } } },
      },
    ]
  }
  // Sent first to an interaction still running: its result is stored, not only read.
  const said = { name: 'post_call_transcription with a NUL in every text', body: JSON.stringify(nulInTextsUnder(bodiesOf(fresh, 2)[0]!.body, ['data', 'transcript'], ['data', 'analysis'])) }
  const bodies = [active, lost].flatMap(bodiesOf)
  // A call to the agent's number: "signed" is the workspace's header with the campaign's secret.
  const initiation = { caller_id: '+447700900123', agent_id: ELEVENLABS_AGENT, called_number: '+14155550100', call_sid: `CA${'7d'.repeat(16)}` }
  await assertSurvives('elevenlabs', async () => {
    const webhooks = await fuzz(
      [said, ...bodies.flatMap(({ name, body }) => jsonMutations(name, body))],
      (body, signed) => post('/providers/elevenlabs/webhook', signed ? { 'elevenlabs-signature': `t=${nowS},v0=${hmacHex(SECRETS.ELEVENLABS_WEBHOOK_SECRET!, `${nowS}.${body}`)}` } : {}, body),
    )
    const asked = await fuzz(jsonMutations('conversation initiation', initiation), (body, signed) =>
      post('/providers/elevenlabs/conversation-initiation', signed ? { authorization: `Bearer ${SECRETS.ELEVENLABS_INITIATION_SECRET}` } : {}, body),
    )
    return { failures: [...webhooks.failures, ...asked.failures], sent: webhooks.sent + asked.sent }
  })
})

test('WhatsApp notifications and subscription handshake', async () => {
  const { id, phone } = await startedInteraction('whatsapp', 'whatsapp_cloud', { phone_number_id: WHATSAPP_NUMBER, template: { name: 'interview_invite' } })
  const wamid = whatsapp.sent.at(-1)!.wamid
  const value = (fields: object) => ({
    object: 'whatsapp_business_account',
    entry: [{ id: '102290129340398', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550000000', phone_number_id: WHATSAPP_NUMBER }, ...fields } }] }],
  })
  const from = phone.slice(1)
  const bodies = [
    { name: 'status read', body: value({ statuses: [{ id: wamid, status: 'read', timestamp: String(nowS), recipient_id: from }] }) },
    { name: 'status failed', body: value({ statuses: [{ id: wamid, status: 'failed', timestamp: String(nowS), recipient_id: from, errors: [{ code: 131026, title: 'Message undeliverable' }] }] }) },
    {
      name: `reply to ${id}`,
      body: value({
        contacts: [{ profile: { name: 'Ana' }, wa_id: from }],
        messages: [{ from, id: 'wamid.reply-1', timestamp: String(nowS), type: 'text', text: { body: 'Yes, Monday works' }, context: { from: '15550000000', id: wamid } }],
      }),
    },
  ]
  const sign = (body: string) => `sha256=${hmacHex(SECRETS.WHATSAPP_APP_SECRET!, body)}`
  const handshakes: Mutation[] = [
    { name: 'handshake', body: `hub.mode=subscribe&hub.verify_token=${SECRETS.WHATSAPP_VERIFY_TOKEN}&hub.challenge=1158201444` },
    { name: 'handshake NUL challenge', body: `hub.mode=subscribe&hub.verify_token=${SECRETS.WHATSAPP_VERIFY_TOKEN}&hub.challenge=%00` },
    { name: 'handshake NUL token', body: 'hub.mode=subscribe&hub.verify_token=%00&hub.challenge=1' },
    { name: 'handshake repeated', body: `hub.mode=subscribe&hub.mode=subscribe&hub.verify_token=${SECRETS.WHATSAPP_VERIFY_TOKEN}&hub.verify_token=x&hub.challenge=1&hub.challenge=2` },
    { name: 'handshake empty', body: '' },
  ]
  // A message of its own id, so that it is recorded rather than taken for a repeated delivery.
  const said = { name: 'reply with a NUL in its text', body: JSON.stringify(nulInTextsUnder(withValue(bodies[2]!.body, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'id'], 'wamid.reply-nul'), ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'text', 'body'])) }
  await assertSurvives('whatsapp', async () => {
    const posted = await fuzz(
      [said, ...bodies.flatMap(({ name, body }) => jsonMutations(name, body))],
      (body, signed) => post('/providers/whatsapp/webhook', signed ? { 'x-hub-signature-256': sign(body) } : {}, body),
    )
    const handshook = await fuzz(handshakes, async (query, verified) =>
      (await service.app.inject({ method: 'GET', url: `/providers/whatsapp/webhook?${verified ? query : query.replace(SECRETS.WHATSAPP_VERIFY_TOKEN!, 'wrong')}` })).statusCode,
    )
    return { failures: [...posted.failures, ...handshook.failures], sent: posted.sent + handshook.sent }
  })
})

test('Twilio answer, status, AMD and inbound-call callbacks', async () => {
  const config = { account_sid: ACCOUNT_SID, from: '+14155550100', answer_url: 'https://agent.example.com/twiml', voicemail: { policy: 'leave_message', message: { text: 'Hello, please call us back.' } } }
  const { id } = await startedInteraction('voice', 'twilio', config)
  const callSid = twilio.callSidFor(statusCallbackUrl(baseUrl, id))!
  const timestamp = 'Wed, 02 Dec 2026 10:00:00 +0000'
  const INBOUND_CALL_SID = `CA${'5e'.repeat(16)}`
  const routes: { name: string; urlOf: (base: string, interactionId: string) => string; params: Record<string, string> }[] = [
    { name: 'answer', urlOf: answerUrl, params: { CallSid: callSid, AccountSid: ACCOUNT_SID, CallStatus: 'in-progress', Timestamp: timestamp } },
    { name: 'status', urlOf: statusCallbackUrl, params: { CallSid: callSid, AccountSid: ACCOUNT_SID, CallStatus: 'completed', CallDuration: '17', AnsweredBy: 'human', Timestamp: timestamp } },
    { name: 'amd', urlOf: amdCallbackUrl, params: { CallSid: callSid, AccountSid: ACCOUNT_SID, AnsweredBy: 'machine_end_beep', MachineDetectionDuration: '4200' } },
    // A call to the campaign's number, and its end: no interaction in their URLs.
    { name: 'inbound', urlOf: inboundCallUrl, params: { CallSid: INBOUND_CALL_SID, AccountSid: ACCOUNT_SID, From: '+447700900123', To: config.from, CallStatus: 'ringing', Direction: 'inbound' } },
    { name: 'inbound status', urlOf: inboundStatusUrl, params: { CallSid: INBOUND_CALL_SID, AccountSid: ACCOUNT_SID, CallStatus: 'completed', CallDuration: '40', Timestamp: timestamp } },
  ]
  const INBOUND_PATH_IDS = new Set(['inbound', 'inbound status'])
  /** Ids in the URL a route cannot know: a NUL, far too long, an interaction's that is not, bytes that are not UTF-8 (a lone surrogate's). */
  const pathIds = ['%00', `${id}%00`, 'x'.repeat(5_000), 'int_00000000000000000000000000', '%ED%A0%80']
  await assertSurvives('twilio', async () => {
    const failures: Sent[] = []
    let sent = 0
    for (const route of routes) {
      const cases = [
        ...formMutations(route.name, route.params).map((mutation) => ({ ...mutation, pathId: id })),
        ...(INBOUND_PATH_IDS.has(route.name) ? [] : pathIds.map((pathId) => ({ name: `${route.name} at /${pathId.slice(0, 40)}`, params: route.params, pathId }))),
      ]
      for (const mutation of cases) {
        for (const signed of [true, false]) {
          const url = route.urlOf(baseUrl, id).replace(encodeURIComponent(id), mutation.pathId)
          const form = typeof mutation.params === 'string' ? mutation.params : new URLSearchParams(mutation.params).toString()
          const signature = twilioSignature(SECRETS.TWILIO_AUTH_TOKEN!, url, Object.fromEntries(new URLSearchParams(form)))
          const response = await service.app.inject({
            method: 'POST',
            url: url.slice(baseUrl.length),
            headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signed ? { 'x-twilio-signature': signature } : {}) },
            payload: form,
          })
          sent += 1
          if (response.statusCode >= 500) failures.push({ mutation: mutation.name, signed, status: response.statusCode })
        }
      }
    }
    return { failures, sent }
  })
})

test('how much was sent', () => {
  // Printed for the record of a run: requests per route, each mutation signed and unsigned.
  console.log(JSON.stringify(counts))
  assert.ok(Object.values(counts).every((count) => count > 0))
})
