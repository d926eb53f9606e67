/**
 * Messaging (docs/messaging.md), on PostgreSQL: how long a person's message
 * takes from the provider's webhook to the client's, and how many messages a
 * second the client can send them through the session-message route.
 *
 * The service runs as production runs it, an API process beside a worker
 * process, with a WhatsApp Cloud campaign and an SMS campaign through Twilio,
 * both paced at PACE (so that no sender's pace holds anything back), whose
 * Graph API and Twilio REST API are the test suite's fakes
 * (test/fakes/whatsappCloud.ts, test/fakes/twilio.ts) in the benchmark's
 * process, on its CPU, as the end-to-end section's Vapi fake is. Each person
 * of each campaign is triggered once, and the worker sends them its template
 * (or text). Then every person replies once, at a steady RATE: the fake posts
 * the signed inbound notification (WhatsApp's X-Hub-Signature-256 to
 * /providers/whatsapp/webhook; Twilio's X-Twilio-Signature to
 * /providers/twilio/messages/inbound) and the organization's endpoint, a
 * receiver in this process subscribed to interaction.message_received alone,
 * checks each event's signature and notes when it arrived by its
 * data.message.id. A message's time runs from the moment the fake starts
 * posting it to that arrival: the API process verifies and records it, and the
 * worker's deliverer, woken by the NOTIFY the API sends after its commit, signs
 * and posts it.
 *
 * Then, every WhatsApp person's window open (they have just written), the
 * client's agent sends them messages through POST
 * /api/v2/interactions/{id}/messages with a key of scope messages:send, from
 * CLIENTS concurrent clients on kept-alive connections, each sending the next
 * as soon as its last is answered, for a fixed time; the WhatsApp fake takes
 * each send, as Meta does within the window.
 */
import { createHmac, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { startFakeTwilio } from '../test/fakes/twilio.ts'
import { type FakeWhatsAppCloud, startFakeWhatsAppCloud } from '../test/fakes/whatsappCloud.ts'
import { hasExited, stopChild } from './children.ts'
import { meterPostgresCpu, processCpuSeconds } from './cpu.ts'
import { ALWAYS_OPEN } from './dispatcher.ts'
import { CLIENTS, logProblems, POSTGRES_LAYOUT, postEvery, untilReady } from './endToEnd.ts'
import {
  adminPost,
  freePort,
  LOAD_CPU,
  log,
  OPERATOR_TOKEN,
  percentile,
  PHONE_HASH_KEY,
  pinnedTo,
  positiveInteger,
  postCreating,
  provision,
  requestWith,
  type Server,
  sleep,
  startServer,
  tail,
  withClient,
  withPostgresDatabase,
} from './harness.ts'
import { alignedTable, markdownTable, type Section } from './report.ts'

/** Messages measured per channel, each from a person of their own (BENCH_MESSAGING_MESSAGES). */
const MESSAGES = 1000
/** Messages of other people posted first, the same way, so that what is measured is a running service's steady state. */
const WARM_UP_MESSAGES = 250
/** Inbound messages a second, posted at steady intervals whatever the service's answers (BENCH_MESSAGING_RATE). */
const RATE = 50
/** How long session messages are sent and measured (BENCH_MESSAGING_SECONDS), after SESSION_WARM_UP_SECONDS. */
const SESSION_SECONDS = 10
const SESSION_WARM_UP_SECONDS = 3
/** A pace no sender reaches: neither the templates nor the session messages wait for one. */
const PACE = 1_000_000
/**
 * How long the service's CPU is metered with nothing posted: its workers poll, and at RATE what it spends idle is a
 * good part of what it spends over a measured span.
 */
const IDLE_SECONDS = 5
/** How long the worker may take to start every template and text, and the events to arrive after the last post. */
const STARTS_TIMEOUT_MS = 120_000
const ARRIVALS_TIMEOUT_MS = 60_000
/** Problems kept as examples. */
const EXAMPLES = 5

const WHATSAPP_ACCESS_TOKEN = `bench-whatsapp-token-${randomBytes(16).toString('hex')}`
const WHATSAPP_APP_SECRET = randomBytes(32).toString('hex')
const PHONE_NUMBER_ID = '106540352242922'
const TEMPLATE = 'bench_invite'
const ACCOUNT_SID = `AC${randomBytes(16).toString('hex')}`
const TWILIO_AUTH_TOKEN = randomBytes(16).toString('hex')
const SMS_FROM = '+14155550199'

/** Due at once, every day; its template has no parameters, and its credentials are in the env names its provider_config defaults to. */
const WHATSAPP_CAMPAIGN = {
  routing_key: 'messaging-whatsapp',
  channel: 'whatsapp',
  schedule: ALWAYS_OPEN,
  pacing: { per_second: PACE },
  provider: 'whatsapp_cloud',
  provider_config: { phone_number_id: PHONE_NUMBER_ID, template: { name: TEMPLATE, language: 'en' } },
}

const SMS_CAMPAIGN = {
  routing_key: 'messaging-sms',
  channel: 'sms',
  schedule: ALWAYS_OPEN,
  pacing: { per_second: PACE },
  provider: 'twilio',
  provider_config: { account_sid: ACCOUNT_SID, from: SMS_FROM, text: 'Acme Recruiting: your interview is on Monday at 10:00. Reply YES to confirm, STOP to opt out.' },
}

const REPLY = 'Yes, Monday at 10:00 works for me. Should I bring anything?'
const SESSION_TEXT = 'Great, see you on Monday at 10:00. Just bring an ID, nothing else.'

/** The channels whose inbound messages are timed, as the report names them. */
export const CHANNELS = ['WhatsApp', 'SMS'] as const
type Channel = (typeof CHANNELS)[number]

/**
 * The people of each channel, E.164: UK mobiles (+44 7400) on WhatsApp, US numbers (+1 202 555) by SMS, each valid
 * and each a person of their own, so that a reply finds exactly one conversation.
 */
function people(channel: Channel, count: number): string[] {
  return Array.from({ length: count }, (_, index) => (channel === 'WhatsApp' ? `+447400${String(index).padStart(6, '0')}` : `+1202555${String(index).padStart(4, '0')}`))
}

export interface InboundResult {
  channel: Channel
  messages: number
  warmUp: number
  /** Messages a second as scheduled, and as posted: their count over the time from the first post to the last. */
  rate: number
  postedPerSecond: number
  /** From the moment the fake started posting a message to the receiver's reading the whole event. */
  latencyMs: { p50: number; p99: number; max: number }
  /** From just before the first measured post to the last event's arrival. */
  seconds: number
  /** Milliseconds of CPU per message over that span: each service process's, and PostgreSQL's for the database. */
  cpuMsPerMessage: CpuFigures
}

interface CpuFigures {
  api: number
  worker: number
  postgres: number
}

export interface SessionResult {
  connections: number
  seconds: number
  warmUpSeconds: number
  /** Answered 201, each taken by the fake: the count, and over the measured time. */
  messages: number
  messagesPerSecond: number
  /** Each message from sending its first request to reading the 201, through any 429s before it. */
  latencyMs: { p50: number; p99: number; max: number }
  /** Requests answered 429, each sent again at once. */
  rateLimited: number
  /** Interactions the messages went to, in turn. */
  interactions: number
  /** Microseconds of CPU per message: the service's processes, PostgreSQL, and this process (the clients, the WhatsApp fake). */
  cpuUsPerMessage: { api: number; worker: number; postgres: number; bench: number }
}

export interface MessagingResult {
  /** Milliseconds of CPU a second with nothing posted, once every template and text had been sent. */
  idleMsPerSecond: CpuFigures
  inbound: InboundResult[]
  session: SessionResult
  /** Log lines of the service's processes at warn or above. */
  serviceLogProblems: number
}

/** The section on a fresh PostgreSQL database, with this process (the fakes, the receiver, the clients) on LOAD_CPU. */
export async function benchMessaging(workDir: string): Promise<MessagingResult> {
  const messages = positiveInteger('BENCH_MESSAGING_MESSAGES', MESSAGES)
  const rate = positiveInteger('BENCH_MESSAGING_RATE', RATE)
  const seconds = positiveInteger('BENCH_MESSAGING_SECONDS', SESSION_SECONDS)
  return pinnedTo(LOAD_CPU, () => withPostgresDatabase((databaseUrl) => run({ databaseUrl, messages, rate, seconds, workDir })))
}

async function run(options: { databaseUrl: string; messages: number; rate: number; seconds: number; workDir: string }): Promise<MessagingResult> {
  const { databaseUrl, messages, rate } = options
  const whatsapp = await startFakeWhatsAppCloud({
    accessToken: WHATSAPP_ACCESS_TOKEN,
    appSecret: WHATSAPP_APP_SECRET,
    phoneNumberIds: [PHONE_NUMBER_ID],
    templates: { [TEMPLATE]: { languages: ['en'], bodyParameters: 0 } },
  })
  const twilio = await startFakeTwilio({ accounts: { [ACCOUNT_SID]: TWILIO_AUTH_TOKEN } })
  const receiver = await startReceiver()
  const servers: Server[] = []
  try {
    // Twilio signs over the URL it was given, which the service rebuilds from PUBLIC_BASE_URL: the API's own address.
    const apiPort = await freePort()
    const publicBaseUrl = `http://127.0.0.1:${apiPort}`
    const env = {
      DATABASE_URL: databaseUrl,
      OPERATOR_TOKEN,
      PHONE_HASH_KEY,
      LOG_LEVEL: 'info',
      ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      PUBLIC_BASE_URL: publicBaseUrl,
      WHATSAPP_API_BASE_URL: whatsapp.url,
      WHATSAPP_ACCESS_TOKEN,
      WHATSAPP_APP_SECRET,
      TWILIO_API_BASE_URL: twilio.url,
      TWILIO_AUTH_TOKEN,
    }
    for (const [index, { name, args }] of POSTGRES_LAYOUT.processes.entries()) {
      servers.push(await startServer(name.replace('e2e', 'messaging'), args, env, options.workDir, index === 0 ? apiPort : undefined))
    }
    await Promise.all(servers.map(untilReady))
    const api = servers[0]!
    whatsapp.setWebhookUrl(`${api.baseUrl}/providers/whatsapp/webhook`)

    const { orgId, apiKey } = await provision(api.baseUrl, [WHATSAPP_CAMPAIGN, SMS_CAMPAIGN], ['triggers:write', 'webhooks:manage'])
    const endpoint = await postCreating(api.baseUrl, '/api/v2/webhook-endpoints', apiKey, { url: receiver.url, events: ['interaction.message_received'] })
    receiver.setSecret(endpoint.data.secret as string)
    const agentKey = (await adminPost(api.baseUrl, `/admin/v1/organizations/${orgId}/api-keys`, { name: 'agent', scopes: ['messages:send'] })).data.key as string

    const count = WARM_UP_MESSAGES + messages
    const persons: Record<Channel, string[]> = { WhatsApp: people('WhatsApp', count), SMS: people('SMS', count) }
    const triggers = CHANNELS.flatMap((channel) =>
      persons[channel].map((phone, index) =>
        JSON.stringify({
          campaign: channel === 'WhatsApp' ? WHATSAPP_CAMPAIGN.routing_key : SMS_CAMPAIGN.routing_key,
          ids: [{ source: 'bench', type: 'person', value: `${channel.toLowerCase()}-${index}` }],
          contact: { phone },
        }),
      ),
    )
    log(`messaging: ${triggers.length} triggers, a WhatsApp template or a text each`)
    await postEvery(POSTGRES_LAYOUT, api, apiKey, triggers, 'messaging-triggers')
    await untilStarted(databaseUrl, triggers.length, servers)
    if (whatsapp.sent.length !== count || twilio.messages.sent().length !== count) {
      throw new Error(`messaging: the fakes took ${whatsapp.sent.length} templates and ${twilio.messages.sent().length} texts, not ${count} of each`)
    }

    const { ms: idleMsPerSecond } = await meterCpu(servers, databaseUrl, () => sleep(IDLE_SECONDS * 1000), () => IDLE_SECONDS)
    const senders: Record<Channel, (phone: string, index: number) => Promise<{ key: string; status: number }>> = {
      // The fake's notification names no wamid back, but its wamid holds the sender's number as Meta's do: that is its key.
      WhatsApp: async (phone, index) => ({ key: phone.slice(1), status: await whatsapp.sendReply({ from: phone.slice(1), text: `${REPLY} (${index})` }) }),
      SMS: async (phone, index) => {
        const answer = await twilio.messages.receive({ accountSid: ACCOUNT_SID, from: phone, to: SMS_FROM, body: `${REPLY} (${index})`, webhookUrl: `${publicBaseUrl}/providers/twilio/messages/inbound` })
        return { key: answer.params.MessageSid!, status: answer.status }
      },
    }
    const keyOf: Record<Channel, (messageId: string) => string> = { WhatsApp: senderOfWamid, SMS: (messageId) => messageId }
    const inbound: InboundResult[] = []
    for (const channel of CHANNELS) {
      const post = (from: number, to: number, phase: string) =>
        postInbound({ channel, phase, phones: persons[channel].slice(from, to), offset: from, rate, send: senders[channel], keyOf: keyOf[channel], receiver, servers })
      log(`messaging: ${channel}: ${WARM_UP_MESSAGES} replies to warm up, then ${messages} measured, ${rate} a second`)
      await post(0, WARM_UP_MESSAGES, 'warm-up')
      const startedAt = performance.now()
      const { done, ms } = await meterCpu(servers, databaseUrl, () => post(WARM_UP_MESSAGES, count, 'measured'), () => messages)
      inbound.push({ channel, messages, warmUp: WARM_UP_MESSAGES, rate, ...done, seconds: (performance.now() - startedAt) / 1000, cpuMsPerMessage: ms })
    }

    const interactions = [...receiver.arrivals.entries()].filter(([messageId]) => messageId.startsWith('wamid.')).map(([, arrival]) => arrival.interactionId)
    log(`messaging: session messages to ${interactions.length} WhatsApp interactions from ${CLIENTS} clients, ${SESSION_WARM_UP_SECONDS} s to warm up, then ${options.seconds} s`)
    await sendSessionMessages(api, agentKey, interactions, SESSION_WARM_UP_SECONDS, 'session-warm-up', whatsapp)
    const benchBefore = process.cpuUsage()
    const { done: sent, ms } = await meterCpu(servers, databaseUrl, () => sendSessionMessages(api, agentKey, interactions, options.seconds, 'session', whatsapp), (done) => done.latenciesMs.length)
    const bench = process.cpuUsage(benchBefore)
    const session: SessionResult = {
      connections: CLIENTS,
      seconds: sent.seconds,
      warmUpSeconds: SESSION_WARM_UP_SECONDS,
      messages: sent.latenciesMs.length,
      messagesPerSecond: sent.latenciesMs.length / sent.seconds,
      latencyMs: latencyOf(sent.latenciesMs),
      rateLimited: sent.rateLimited,
      interactions: interactions.length,
      cpuUsPerMessage: { api: ms.api * 1000, worker: ms.worker * 1000, postgres: ms.postgres * 1000, bench: (bench.user + bench.system) / sent.latenciesMs.length },
    }
    if (receiver.problems.count > 0) throw new Error(`messaging: the receiver met ${receiver.problems.count} problems, e.g.\n${receiver.problems.examples.join('\n')}`)
    await Promise.all(servers.map((server) => stopChild(server.child)))
    // Read once the service has stopped, so that a problem on its way out counts.
    const serviceLogProblems = (await Promise.all(servers.map(logProblems))).flat()
    for (const line of serviceLogProblems.slice(0, EXAMPLES)) log(`messaging: in the service's log: ${line}`)
    return { idleMsPerSecond, inbound, session, serviceLogProblems: serviceLogProblems.length }
  } finally {
    await Promise.all(servers.map((server) => stopChild(server.child)))
    await receiver.close()
    await whatsapp.close()
    await twilio.close()
  }
}

/**
 * What `work` gives, with the CPU milliseconds that the API process, the worker process and PostgreSQL (the
 * database's backends, the server's own processes) spent while it ran, over `per` (of what it did).
 */
async function meterCpu<T>(servers: readonly Server[], databaseUrl: string, work: () => Promise<T>, per: (done: T) => number): Promise<{ done: T; ms: CpuFigures }> {
  const [api, worker] = servers as [Server, Server]
  const before = { api: processCpuSeconds(api.child.pid!), worker: processCpuSeconds(worker.child.pid!) }
  const postgresCpu = meterPostgresCpu(new URL(databaseUrl).pathname.slice(1))
  const done = await work()
  const postgres = postgresCpu.stop()
  const ms = (seconds: number) => (seconds * 1000) / per(done)
  return {
    done,
    ms: { api: ms(processCpuSeconds(api.child.pid!) - before.api), worker: ms(processCpuSeconds(worker.child.pid!) - before.worker), postgres: ms(postgres) },
  }
}

/**
 * Waits until every trigger's interaction is active (its template or text taken by the fake, the answer recorded),
 * so that each reply finds the conversation it answers.
 */
async function untilStarted(databaseUrl: string, interactions: number, servers: readonly Server[]): Promise<void> {
  const deadline = Date.now() + STARTS_TIMEOUT_MS
  await withClient(databaseUrl, async (client) => {
    for (;;) {
      const { active } = (await client.query<{ active: number }>("SELECT count(*)::int AS active FROM interactions WHERE status = 'active'")).rows[0]!
      if (active === interactions) return
      await failIfStopped(servers, `${active} of ${interactions} interactions active`, deadline)
      await sleep(200)
    }
  })
}

/** Fails when a service process has exited, or past `deadline`, saying how far it got. */
async function failIfStopped(servers: readonly Server[], progress: string, deadline: number): Promise<void> {
  const exited = servers.find((server) => hasExited(server.child))
  if (exited !== undefined) throw new Error(`messaging: ${exited.name} exited (${progress}):\n${await tail(exited.logFile)}`)
  if (Date.now() > deadline) throw new Error(`messaging: timed out with ${progress}`)
}

/**
 * One reply from each of `phones` (`offset` numbers their texts), started every 1/`rate` s whatever the answers to
 * the ones before (a provider posts as its people write); then waits for their events. Fails on any answer but 200,
 * and on an event that does not come.
 */
async function postInbound(options: {
  channel: Channel
  phase: string
  phones: readonly string[]
  offset: number
  rate: number
  /** Posts the reply; resolves its key (what keyOf makes of its event's data.message.id) and the service's answer. */
  send: (phone: string, index: number) => Promise<{ key: string; status: number }>
  keyOf: (messageId: string) => string
  receiver: Receiver
  servers: readonly Server[]
}): Promise<{ postedPerSecond: number; latencyMs: InboundResult['latencyMs'] }> {
  const { phones, rate } = options
  const startedAt = performance.now()
  const posts: Promise<{ key: string; status: number; sentAt: number }>[] = []
  for (const [index, phone] of phones.entries()) {
    const wait = startedAt + (index * 1000) / rate - performance.now()
    if (wait >= 1) await sleep(wait)
    const sentAt = performance.now()
    posts.push(options.send(phone, options.offset + index).then((answer) => ({ ...answer, sentAt })))
  }
  const lastSentAt = performance.now()
  const answers = await Promise.all(posts)
  const refused = answers.filter((answer) => answer.status !== 200)
  if (refused.length > 0) throw new Error(`messaging: ${options.channel} ${options.phase}: ${refused.length} of ${answers.length} notifications answered ${[...new Set(refused.map((answer) => answer.status))].join(', ')}, not 200`)

  const deadline = Date.now() + ARRIVALS_TIMEOUT_MS
  const arrivedAt = new Map<string, number>()
  for (;;) {
    for (const [messageId, arrival] of options.receiver.arrivals) arrivedAt.set(options.keyOf(messageId), arrival.at)
    const missing = answers.filter((answer) => !arrivedAt.has(answer.key)).length
    if (missing === 0) break
    await failIfStopped(options.servers, `${options.channel} ${options.phase}: ${missing} of ${answers.length} events missing`, deadline)
    await sleep(50)
  }
  return {
    postedPerSecond: ((phones.length - 1) * 1000) / (lastSentAt - startedAt),
    latencyMs: latencyOf(answers.map((answer) => arrivedAt.get(answer.key)! - answer.sentAt)),
  }
}

/**
 * The sender's WhatsApp ID in a wamid the fake made: base64 of a record whose third byte is the ID's length and
 * which holds it from the fourth (test/fakes/whatsappCloud.ts, newWamid).
 */
function senderOfWamid(wamid: string): string {
  const record = Buffer.from(wamid.slice('wamid.'.length), 'base64')
  return record.subarray(3, 3 + record[2]!).toString()
}

/**
 * Session messages to `interactions`, each client taking the next one in turn, for `seconds`; each Idempotency-Key
 * its own, as an agent that may send a message again sends them. A message answered 429 is sent again at once, its
 * Retry-After (1 s) not waited for: the sender's pace is PACE, and a 429 under it is the service's own fault (one
 * read its clock before waiting for the sender's row, 42 in 3,195 until it read it after), not the pace's, so it is
 * counted and the message timed until its 201. Fails on any other answer, or a send the fake did not take.
 */
async function sendSessionMessages(
  api: Server,
  agentKey: string,
  interactions: readonly string[],
  seconds: number,
  phase: string,
  whatsapp: FakeWhatsAppCloud,
): Promise<{ seconds: number; latenciesMs: number[]; rateLimited: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS })
  const body = JSON.stringify({ text: SESSION_TEXT })
  const latenciesMs: number[] = []
  const refusals: string[] = []
  let rateLimited = 0
  const takenBefore = whatsapp.sessionSent.length
  let next = 0
  const startedAt = performance.now()
  const until = startedAt + seconds * 1000
  const client = async () => {
    while (performance.now() < until && refusals.length === 0) {
      const index = next++
      const url = `${api.baseUrl}/api/v2/interactions/${interactions[index % interactions.length]}/messages`
      const sentAt = performance.now()
      for (let attempt = 1; ; attempt++) {
        const answer = await requestWith(agent, url, 'POST', agentKey, `${phase}-${index}-${attempt}`, body, { 'idempotency-key': `${phase}-${index}` }).catch((error: Error) => ({ status: 0, text: error.message }))
        if (answer.status === 429) {
          rateLimited++
          continue
        }
        if (answer.status === 201) latenciesMs.push(performance.now() - sentAt)
        else refusals.push(`${answer.status} ${answer.text}`)
        break
      }
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, client))
  const elapsed = (performance.now() - startedAt) / 1000
  agent.destroy()
  if (refusals.length > 0) throw new Error(`messaging: ${phase}: ${refusals.length} session messages not answered 201, e.g.\n${refusals.slice(0, EXAMPLES).join('\n')}\n${api.name} log:\n${await tail(api.logFile)}`)
  const taken = whatsapp.sessionSent.length - takenBefore
  if (taken !== latenciesMs.length) throw new Error(`messaging: ${phase}: ${latenciesMs.length} session messages answered 201, but the fake took ${taken}`)
  return { seconds: elapsed, latenciesMs, rateLimited }
}

function latencyOf(latenciesMs: readonly number[]): { p50: number; p99: number; max: number } {
  const values = Float64Array.from(latenciesMs)
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: percentile(values, 100) }
}

interface Receiver {
  url: string
  /** The endpoint's secret, known once the endpoint (which names this receiver's URL) is created. */
  setSecret(secret: string): void
  /** Each message's first event, by its data.message.id: when it was read whole, and the interaction it landed on. */
  arrivals: Map<string, { at: number; interactionId: string }>
  /** Events not signed with the endpoint's secret, not of a message, or of a message already received. */
  problems: { count: number; examples: string[] }
  close(): Promise<void>
}

/** The client's endpoint: answers 200 at once, then checks the event's Standard Webhooks signature, as a client should, and notes its message. */
async function startReceiver(): Promise<Receiver> {
  let key: Buffer | undefined
  const arrivals = new Map<string, { at: number; interactionId: string }>()
  const problems = { count: 0, examples: [] as string[] }
  const problem = (what: string) => {
    problems.count++
    if (problems.examples.length < EXAMPLES) problems.examples.push(what)
  }
  const server = http.createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (body += chunk))
    request.on('end', () => {
      const at = performance.now()
      response.writeHead(200).end()
      const id = String(request.headers['webhook-id'])
      const expected = `v1,${createHmac('sha256', key ?? '').update(`${id}.${request.headers['webhook-timestamp']}.${body}`).digest('base64')}`
      if (!String(request.headers['webhook-signature']).split(' ').includes(expected)) return problem(`${id}: not signed with the endpoint's secret`)
      const event = JSON.parse(body) as { type?: string; data?: { interaction_id?: string; message?: { id?: string } } }
      const messageId = event.data?.message?.id
      if (event.type !== 'interaction.message_received' || messageId === undefined || event.data?.interaction_id === undefined) return problem(`${id}: ${body.slice(0, 200)}`)
      if (arrivals.has(messageId)) return problem(`${id}: message ${messageId} again`)
      arrivals.set(messageId, { at, interactionId: event.data.interaction_id })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    setSecret: (secret) => {
      key = Buffer.from(secret.slice('whsec_'.length), 'base64')
    },
    arrivals,
    problems,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

const sum = (cpu: CpuFigures) => cpu.api + cpu.worker + cpu.postgres

/** A message's CPU, the three together, less what the service and PostgreSQL would have spent idle over its span. */
function aboveIdleMs(result: MessagingResult, channel: InboundResult): number {
  return sum(channel.cpuMsPerMessage) - (sum(result.idleMsPerSecond) * channel.seconds) / channel.messages
}

function inboundTable(result: MessagingResult): [string[], string[][]] {
  return [
    ['channel', 'messages', 'rate (/s)', 'posted (/s)', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'API CPU (ms/msg)', 'worker CPU (ms/msg)', 'PostgreSQL CPU (ms/msg)', 'all three above idle (ms/msg)'],
    result.inbound.map((channel) => [
      channel.channel,
      String(channel.messages),
      String(channel.rate),
      channel.postedPerSecond.toFixed(1),
      channel.latencyMs.p50.toFixed(1),
      channel.latencyMs.p99.toFixed(1),
      channel.latencyMs.max.toFixed(1),
      channel.cpuMsPerMessage.api.toFixed(2),
      channel.cpuMsPerMessage.worker.toFixed(2),
      channel.cpuMsPerMessage.postgres.toFixed(2),
      aboveIdleMs(result, channel).toFixed(2),
    ]),
  ]
}

function sessionTable({ session }: MessagingResult): [string[], string[][]] {
  return [
    ['connections', 'seconds', 'messages', 'messages/s', '429s (sent again)', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'API CPU (µs/msg)', 'worker CPU (µs/msg)', 'PostgreSQL CPU (µs/msg)', 'benchmark process CPU (µs/msg)'],
    [
      [
        String(session.connections),
        session.seconds.toFixed(1),
        String(session.messages),
        session.messagesPerSecond.toFixed(0),
        String(session.rateLimited),
        session.latencyMs.p50.toFixed(1),
        session.latencyMs.p99.toFixed(1),
        session.latencyMs.max.toFixed(1),
        session.cpuUsPerMessage.api.toFixed(0),
        session.cpuUsPerMessage.worker.toFixed(0),
        session.cpuUsPerMessage.postgres.toFixed(0),
        session.cpuUsPerMessage.bench.toFixed(0),
      ],
    ],
  ]
}

/** Idle, as the report says it. */
function idleText({ idleMsPerSecond: idle }: MessagingResult): string {
  return `API ${idle.api.toFixed(1)}, worker ${idle.worker.toFixed(1)}, PostgreSQL ${idle.postgres.toFixed(1)} ms of CPU a second`
}

export function messagingTextTable(result: MessagingResult): string {
  return `inbound, provider's webhook to the client's:\n${alignedTable(...inboundTable(result))}\nidle: ${idleText(result)}\n\nsession messages, POST /api/v2/interactions/{id}/messages:\n${alignedTable(...sessionTable(result))}`
}

export function messagingSection(result: MessagingResult): Section {
  const { session } = result
  const [whatsapp, sms] = result.inbound as [InboundResult, InboundResult]
  const body = `
A person's message from the provider's webhook to the client's, by WhatsApp and by SMS, and the messages a second a client sends people through \`POST /api/v2/interactions/{id}/messages\` while their WhatsApp window is open, on PostgreSQL (docs/messaging.md).

Method:

- The service as production runs it: an API process (\`node dist/cli.js serve --no-workers\`) beside a worker process (\`dist/cli.js worker\`), both pinned to CPU 0, on a fresh database, \`LOG_LEVEL=info\`. One organization, with a WhatsApp Cloud campaign (\`${WHATSAPP_CAMPAIGN.routing_key}\`, provider \`whatsapp_cloud\`, a template without parameters) and an SMS campaign through Twilio (\`${SMS_CAMPAIGN.routing_key}\`, provider \`twilio\`, a text from \`${SMS_FROM}\`), both open all week and paced at \`pacing.per_second\` ${PACE.toLocaleString('en')}, so that no sender's pace holds a message back. Their providers are the test suite's fakes (test/fakes/whatsappCloud.ts, test/fakes/twilio.ts), node:http servers in the benchmark process (\`WHATSAPP_API_BASE_URL\`, \`TWILIO_API_BASE_URL\`; the secrets in \`WHATSAPP_ACCESS_TOKEN\`, \`WHATSAPP_APP_SECRET\`, \`TWILIO_AUTH_TOKEN\`; \`PUBLIC_BASE_URL\` the API's own address, over which Twilio's signature is checked). The benchmark process, with the fakes, the receiver and the clients, is pinned to CPU 1; PostgreSQL is not pinned and shares both.
- ${whatsapp.warmUp + whatsapp.messages} people on each channel (UK mobiles on WhatsApp, US numbers by SMS), each triggered once; the worker sends each their template or text, and every interaction is active before the first reply.
- Inbound: each person replies once, a text, at a steady ${whatsapp.rate} a second (each posted on time whatever the answers to those before): the WhatsApp fake posts Meta's inbound message notification to \`/providers/whatsapp/webhook\`, signed with \`X-Hub-Signature-256\`; the Twilio fake posts Twilio's incoming-message request to \`/providers/twilio/messages/inbound\`, signed with \`X-Twilio-Signature\`. Every one must be answered 200. The organization's one webhook endpoint, subscribed to \`interaction.message_received\` alone, is a node:http receiver in the benchmark process that answers 200 at once and checks each event's Standard Webhooks signature with the endpoint's secret; a message's time runs from the moment the fake starts posting it (building and signing it included) to the moment the receiver has read its whole event, matched by the event's \`data.message.id\` (WhatsApp's wamid, whose record holds the sender's number; Twilio's \`SM...\` sid, as the fake's request carried it). In between: the API process verifies the signature, lands the message on the person's conversation (ending it \`replied\`) and writes the event; after its commit a NOTIFY of its own wakes the worker's deliverer, which signs and posts it. The first ${whatsapp.warmUp} replies of each channel warm the service up and are not measured; then ${whatsapp.messages}, their events all received before the next channel's begin. Every event must arrive once, signed, or the section fails.
- CPU per message: the CPU time (user and system, all threads, from \`/proc\`) of each service process and of PostgreSQL (the backends of the database and the server's own processes), from just before the first measured reply to the arrival of the last event (${whatsapp.seconds.toFixed(1)} s by WhatsApp, ${sms.seconds.toFixed(1)} s by SMS), over the messages. At ${whatsapp.rate} a second the service is mostly idle, and its workers' polls spend CPU all along: measured for ${IDLE_SECONDS} s with nothing posted once every template and text had been sent, ${idleText(result)}. The last column is the three together less that idle share of the span: what a message itself costs.
- Session messages: once every WhatsApp person has written (their windows open for 24 hours, as the fake keeps them too), an agent's key of scope \`messages:send\` sends \`{"text": ...}\` (${SESSION_TEXT.length} characters), each message with an \`Idempotency-Key\` of its own, to the ${session.interactions} WhatsApp interactions in turn, from ${session.connections} clients in the benchmark process (node:http, each on a kept-alive connection, each sending the next as soon as its last is answered) for ${session.warmUpSeconds} s of warm-up, not measured, then ${Math.round(session.seconds)} s. The WhatsApp fake takes each send within the window, on the benchmark process's CPU with the clients: its cost and theirs is the last column. A message answered 429 is sent again at once with its key, not after its \`Retry-After\` of 1 s: at a pace of ${PACE.toLocaleString('en')} a second no 429 is the pace's; they are counted. Every message must end answered 201 and taken by the fake, or the section fails. Latency: from sending a message's first request to reading its 201, which comes once WhatsApp (the fake) has taken it; CPU per message counts the requests answered 429 too.

Inbound messages, provider's webhook to the client's (${whatsapp.messages} messages a channel, posted at ${whatsapp.rate}/s):

${markdownTable(...inboundTable(result))}

Session messages:

${markdownTable(...sessionTable(result))}

By WhatsApp, a person's message reached the client's endpoint in ${whatsapp.latencyMs.p50.toFixed(1)} ms at the median and ${whatsapp.latencyMs.p99.toFixed(1)} ms at p99 (${whatsapp.latencyMs.max.toFixed(1)} ms at most); by SMS in ${sms.latencyMs.p50.toFixed(1)} ms and ${sms.latencyMs.p99.toFixed(1)} ms (${sms.latencyMs.max.toFixed(1)} ms). The session-message route took ${session.messagesPerSecond.toFixed(0)} messages a second from ${session.connections} connections, p50 ${session.latencyMs.p50.toFixed(1)} ms, p99 ${session.latencyMs.p99.toFixed(1)} ms. Service log lines at warn or above: ${result.serviceLogProblems}.
${session.rateLimited === 0 ? '' : `
${session.rateLimited} requests were answered 429 ("all taken now") at a pace of ${PACE.toLocaleString('en')} a second: a fault of the service rather than of the pace, to be found (src/services/sessionMessages.ts reads its clock once it holds the sender's row, so that one that waited across a second's end is not refused as late).
`}`
  return { heading: "Messaging: the person's messages to the client's webhook, and session messages", body }
}
