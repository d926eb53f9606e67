/**
 * `cli listen`'s forwarder against the service over HTTP: it starts after the
 * newest event, forwards what is recorded from then on, in order, signed as
 * Standard Webhooks with its secret, tries a receiver that fails again after
 * 1, 2, 4 and 8 seconds (an injected wait) before skipping the event, takes a
 * 4xx as the receiver's verdict, and refuses a bad key at once. Ten minutes
 * idle (1,200 polls, each its real wait shortened) leave no listener behind.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach, test } from 'node:test'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { getEventListeners } from 'node:events'
import { ForwarderError, LocalForwarder, wakeableSleep } from '../src/webhooks/localForwarder.ts'
import { newWebhookSecret } from '../src/webhooks/signing.ts'
import { type Receiver, startReceiver } from './support/receiver.ts'
import { acceptedTrigger, bearer, freePort, json, seedOrganization, startService, type TestService } from './support/service.ts'

const ALWAYS_OPEN = { timezone: 'contact', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }

let service: TestService
let baseUrl: string
let receiver: Receiver
let now = Date.now()

before(async () => {
  service = await startService({ now: () => now })
  await service.app.listen({ port: 0, host: '127.0.0.1' })
  baseUrl = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`
})
after(() => service.close())
beforeEach(async () => {
  receiver = await startReceiver()
  // The receiver checks signatures' timestamps against its own clock.
  now = Date.now()
})
afterEach(() => receiver.close())

const organization = () => seedOrganization(service.app, { schedule: ALWAYS_OPEN })

/** A trigger taken through a simulated call to its end: its interaction.finalized and task.completed are recorded. */
async function completedTrigger(key: string, routingKey: string, value: string) {
  const created = await acceptedTrigger(service.app, key, { campaign: routingKey, ids: [{ source: 'ats', type: 'candidate', value }], contact: { phone: '+442079460958' }, test_mode: true })
  await service.app.workers!.dispatcher.runOnce()
  now += 60_000
  await service.app.workers!.dispatcher.runOnce()
  return created
}

async function eventIdsOf(key: string): Promise<string[]> {
  return json(await service.app.inject({ method: 'GET', url: '/api/v2/events', headers: bearer(key) })).data.map((event: { id: string }) => event.id)
}

function forwarder(key: string, options: { types?: string[]; sleeps?: number[]; lines?: string[]; forwardTo?: string } = {}) {
  const secret = newWebhookSecret()
  return {
    secret,
    forwarder: new LocalForwarder({
      baseUrl,
      apiKey: key,
      forwardTo: options.forwardTo ?? receiver.url,
      secret,
      types: options.types ?? [],
      print: (line) => options.lines?.push(line),
      sleep: async (ms) => {
        options.sleeps?.push(ms)
      },
    }),
  }
}

test('forwards only what is recorded after it starts, in order, each signed with its secret and with its event id', async () => {
  const org = await organization()
  await completedTrigger(org.key, org.routingKey, 'before')
  const lines: string[] = []
  const { forwarder: listen, secret } = forwarder(org.key, { lines })
  await listen.start()
  assert.equal(await listen.forwardNew(), 0, 'what was recorded before it started is not forwarded')

  await completedTrigger(org.key, org.routingKey, 'after-1')
  await completedTrigger(org.key, org.routingKey, 'after-2')
  assert.equal(await listen.forwardNew(), 4)
  await listen.close()
  const expected = (await eventIdsOf(org.key)).slice(2)
  assert.deepEqual(receiver.received.map((request) => request.headers['webhook-id']), expected)
  const verifier = new Webhook(secret)
  for (const request of receiver.received) {
    const event = verifier.verify(request.body, request.headers as Record<string, string>) as { id: string; data: { ids: { value: string }[] } }
    assert.equal(event.id, request.headers['webhook-id'])
    assert.notEqual(event.data.ids[0]?.value, 'before')
  }
  assert.equal(lines.filter((line) => / -> 200 \(\d+ ms\)$/.test(line)).length, 4, lines.join('\n'))
  assert.equal(await listen.forwardNew(), 0, 'nothing is forwarded twice')
})

test('a receiver that fails gets the event again after 1, 2, 4 and 8 s, then it is skipped; a 4xx is not sent again', async () => {
  const org = await organization()
  const sleeps: number[] = []
  const lines: string[] = []
  const { forwarder: listen } = forwarder(org.key, { sleeps, lines, types: ['task.completed'] })
  await listen.start()
  await completedTrigger(org.key, org.routingKey, 'down')
  await completedTrigger(org.key, org.routingKey, 'refused')
  receiver.answer({ status: 503 }, { status: 500 }, { status: 502 }, { status: 500 }, { status: 500 }, { status: 401 })
  assert.equal(await listen.forwardNew(), 4, 'both tasks: two events each, read')
  await listen.close()
  assert.deepEqual(sleeps, [1_000, 2_000, 4_000, 8_000])
  // Only task.completed, as asked: five tries of the first, one of the second.
  assert.equal(receiver.received.length, 6)
  const completions = (await eventIdsOf(org.key)).filter((_, n) => n % 2 === 1)
  assert.deepEqual([...new Set(receiver.received.map((request) => request.headers['webhook-id']))], completions)
  assert.match(lines[5] ?? '', /task\.completed evt_\w+ -> 500 \(\d+ ms\), skipped$/)
  assert.match(lines[6] ?? '', /task\.completed evt_\w+ -> 401 \(\d+ ms\)$/)
})

test('a receiver that is not there is named in the line; a key that is not valid stops it at start', async () => {
  const org = await organization()
  const lines: string[] = []
  const { forwarder: listen } = forwarder(org.key, { lines, forwardTo: `http://127.0.0.1:${await freePort()}/hook` })
  await listen.start()
  await completedTrigger(org.key, org.routingKey, 'nobody')
  await listen.forwardNew()
  await listen.close()
  assert.match(lines[1] ?? '', /interaction\.finalized evt_\w+ -> .*(refused|ECONNREFUSED).*, again in 1 s$/i)

  const { forwarder: stranger } = forwarder('ctk_aaaaaaaaaaaa_' + 'a'.repeat(43))
  await assert.rejects(stranger.start(), (error: Error) => error instanceof ForwarderError && /answered 401/.test(error.message))
  await stranger.close()
})

test('ten idle minutes of listen (1,200 polls with their real wait, shortened) print no warning and leave no abort listener', async () => {
  const org = await organization()
  const warnings: Error[] = []
  const onWarning = (warning: Error) => warnings.push(warning)
  process.on('warning', onWarning)
  const stop = new AbortController()
  let polls = 0
  let listenersAtLastPoll: number | undefined
  const listen = new LocalForwarder({
    baseUrl,
    apiKey: org.key,
    forwardTo: receiver.url,
    secret: newWebhookSecret(),
    types: [],
    print: () => {},
    // What listen waits between polls (500 ms), shortened to nothing: the same timer, the same signal.
    sleep: async (_ms, signal) => {
      if (++polls === 1_200) {
        // What 1,199 waits left on the run's signal, counted before the abort (which lets go of every listener).
        listenersAtLastPoll = getEventListeners(signal!, 'abort').length
        stop.abort()
      }
      await wakeableSleep(0, signal)
    },
  })
  try {
    await listen.run(stop.signal)
    // A warning is emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('warning', onWarning)
  }
  assert.equal(polls, 1_200)
  assert.deepEqual(warnings.map((warning) => warning.name), [])
  assert.equal(listenersAtLastPoll, 0)
})

test('the wait listen polls with ends at once when Ctrl-C aborts it', async () => {
  const stop = new AbortController()
  const started = performance.now()
  const waited = wakeableSleep(60_000, stop.signal)
  stop.abort()
  await waited
  assert.ok(performance.now() - started < 1_000)
})
