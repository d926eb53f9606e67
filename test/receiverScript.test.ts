/** scripts/receiver.js, the local webhook receiver of the README's quick start: it prints each webhook and checks signatures. */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { newWebhookSecret, signatureHeader } from '../src/webhooks/signing.ts'
import { freePort } from './support/service.ts'

const secret = newWebhookSecret()
let receiver: ChildProcess
let url: string
const printed: string[] = []

before(async () => {
  const port = await freePort()
  url = `http://127.0.0.1:${port}`
  receiver = spawn(process.execPath, [path.join(import.meta.dirname, '..', 'scripts', 'receiver.js')], {
    env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  receiver.stdout!.setEncoding('utf8').on('data', (text: string) => printed.push(...text.split('\n').filter(Boolean)))
  for (let waited = 0; !printed.some((line) => line.startsWith('receiving webhooks')); waited += 20) {
    assert.ok(waited < 5000, 'the receiver starts')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
})

after(async () => {
  receiver.kill()
  if (receiver.exitCode === null) await once(receiver, 'exit')
})

async function deliver(id: string, body: string, signedWith: string, timestamp = Math.floor(Date.now() / 1000)) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([signedWith], id, timestamp, body) },
    body,
  })
}

test('a webhook signed with the secret is answered 204 and printed in one line, with the task, outcome and ids', async () => {
  const body = JSON.stringify({
    id: 'evt_1',
    type: 'task.completed',
    timestamp: '2026-11-25T18:00:00.000Z',
    data: { task_id: 'tsk_1', outcome: 'reached', ids: [{ source: 'ats', type: 'candidate_id', value: 'AbC-001' }] },
  })
  assert.equal((await deliver('evt_1', body, secret)).status, 204)
  for (let waited = 0; !printed.some((line) => line.includes('evt_1')); waited += 20) {
    assert.ok(waited < 5000)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.match(printed.find((line) => line.includes('evt_1'))!, /\(signature checked\) task\.completed evt_1: task tsk_1, outcome reached, ids ats\/candidate_id\/AbC-001$/)
})

test("a webhook that carries a conversation's result prints its disposition, the start of its summary and its turns", async () => {
  const body = JSON.stringify({
    id: 'evt_3',
    type: 'interaction.finalized',
    timestamp: '2026-11-25T18:00:00.000Z',
    data: {
      task_id: 'tsk_1',
      outcome: 'completed',
      result: { disposition: 'interested', summary: 'Still interested in the Analyst role; free on Tuesday afternoons, after 14:00.', transcript: [{}, {}, {}] },
    },
  })
  assert.equal((await deliver('evt_3', body, secret)).status, 204)
  for (let waited = 0; !printed.some((line) => line.includes('evt_3')); waited += 20) {
    assert.ok(waited < 5000)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.match(
    printed.find((line) => line.includes('evt_3'))!,
    /interaction\.finalized evt_3: task tsk_1, outcome completed, result interested "Still interested in the Analyst role; free on Tuesday after…" \(3 turns\)$/,
  )
})

test('a webhook signed with another secret, or signed 10 minutes ago, is refused with 401', async () => {
  const body = '{"id":"evt_2","type":"task.completed","data":{}}'
  assert.equal((await deliver('evt_2', body, newWebhookSecret())).status, 401)
  assert.equal((await deliver('evt_2', body, secret, Math.floor(Date.now() / 1000) - 600)).status, 401)
  assert.equal((await deliver('evt_2', body, secret)).status, 204)
})
