/** Logs: one structured line per request, carrying its request id, and never a secret or a phone number. */
import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, test } from 'node:test'
import { bearer, OPERATOR_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

let service: TestService

before(async () => {
  service = await startService()
})
after(() => service.close())

test('no API key, operator token or phone number reaches a log line', async () => {
  const org = await seedOrganization(service.app)
  const phones = ['+44 (0)20 7946 0958', '+1 (415) 555-2671']
  for (const phone of phones) {
    await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers?phone=' + encodeURIComponent(phone),
      headers: { ...bearer(org.key), 'content-type': 'application/json', 'x-request-id': 'log-check' },
      payload: { campaign: 'screening', contact: { phone } },
    })
    await service.app.inject({
      method: 'POST',
      url: '/api/v2/triggers',
      headers: { ...bearer(org.key), 'content-type': 'application/json' },
      payload: `{"campaign": "screening", "contact": {"phone": "${phone}"`,
    })
  }
  await service.app.inject({ method: 'POST', url: '/api/v2/triggers', headers: bearer(org.key.slice(0, -2) + 'xx') })
  assert.ok(service.logs.length >= 5)
  const text = service.logs.join('\n')
  // ctk_<prefix>_<secret>: the secret is base64url and may itself hold underscores.
  const secretPart = org.key.split('_').slice(2).join('_')
  for (const forbidden of [org.key, secretPart, OPERATOR_TOKEN, '2079460958', '4155552671', '7946', '555-2671']) {
    assert.ok(!text.includes(forbidden), `a log line contains ${forbidden}`)
  }
})

test('each request logs one line with its request id, method, route and status', async () => {
  service.logs.length = 0
  await service.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-me' } })
  const lines = service.logs.map((line) => JSON.parse(line))
  assert.equal(lines.length, 1)
  assert.equal(lines[0].request_id, 'trace-me')
  assert.equal(lines[0].method, 'GET')
  assert.equal(lines[0].route, '/healthz')
  assert.equal(lines[0].status, 200)
  assert.equal(typeof lines[0].ms, 'number')
})

test('a database error is logged without the statement or its parameters', async () => {
  const org = await seedOrganization(service.app)
  await service.db.exec('ALTER TABLE tasks RENAME TO tasks_moved')
  service.logs.length = 0
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v2/triggers',
    headers: { ...bearer(org.key), 'content-type': 'application/json' },
    payload: { campaign: 'screening', contact: { phone: '+44 20 7946 0958', email: 'ada@example.com' } },
  })
  await service.db.exec('ALTER TABLE tasks_moved RENAME TO tasks')
  assert.equal(response.statusCode, 500)
  assert.equal(JSON.parse(response.body).error.code, 'internal_error')
  const failure = service.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'request failed')
  assert.ok(failure, 'the failure is logged')
  assert.match(failure.err.message, /tasks/)
  const text = service.logs.join('\n')
  for (const forbidden of ['2079460958', 'ada@example.com', 'INSERT INTO']) assert.ok(!text.includes(forbidden), forbidden)
})

test('a client that goes away before its request is read is logged at info, not as an error', async () => {
  const org = await seedOrganization(service.app)
  await service.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = service.app.server.address() as net.AddressInfo
  service.logs.length = 0
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /api/v2/triggers HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${org.key}\r\nContent-Type: application/json\r\n` +
          'Content-Length: 100\r\nX-Request-ID: went-away\r\n\r\n{"campaign": "screening",',
      )
      setTimeout(() => socket.destroy(), 50)
    })
    socket.on('close', () => resolve())
    socket.on('error', reject)
  })
  for (let waited = 0; !service.logs.some((line) => line.includes('went-away')) && waited < 2_000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const lines = service.logs.map((line) => JSON.parse(line)).filter((line) => line.request_id === 'went-away')
  assert.deepEqual(
    lines.map(({ level, method, route, msg }) => ({ level, method, route, msg })),
    [{ level: 30, method: 'POST', route: '/api/v2/triggers', msg: 'request abandoned by the client' }],
  )
  assert.ok(!service.logs.some((line) => JSON.parse(line).level >= 50), 'nothing at error level')
})
