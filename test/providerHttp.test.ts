/**
 * requestProvider, the agent platforms' one way to their REST APIs: an
 * answer of any status comes back with its JSON and Retry-After; no answer in
 * time, a connection refused or a redirect throws (the provider may have
 * acted), naming the request without its URL.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { requestProvider } from '../src/channels/providerHttp.ts'

describe('requestProvider', () => {
  let server: http.Server
  let base: string
  const seen: { method?: string; headers: http.IncomingHttpHeaders; body: string }[] = []

  before(async () => {
    server = http.createServer((request, response) => {
      let body = ''
      request.on('data', (chunk) => (body += chunk))
      request.on('end', () => {
        seen.push({ method: request.method, headers: request.headers, body })
        if (request.url === '/slow') return // never answered
        if (request.url === '/moved') return response.writeHead(307, { location: 'https://elsewhere.test/' }).end()
        if (request.url === '/busy') return response.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' }).end('{"message":"Too many"}')
        if (request.url === '/text') return response.writeHead(200).end('not json')
        response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'call_1', echo: JSON.parse(body || 'null') }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  const options = { headers: { authorization: 'Bearer key' }, timeoutMs: 2_000, label: 'Test POST /call' }

  test('a JSON body is sent with its headers, and the answer read as JSON', async () => {
    const answer = await requestProvider(`${base}/call`, { ...options, method: 'POST', body: { to: '+15550100' } })
    assert.deepEqual(answer, { status: 201, body: { id: 'call_1', echo: { to: '+15550100' } }, retryAfter: null })
    const request = seen.at(-1)!
    assert.equal(request.method, 'POST')
    assert.equal(request.headers.authorization, 'Bearer key')
    assert.equal(request.headers['content-type'], 'application/json')
    assert.equal(request.headers.accept, 'application/json')
  })

  test('a refusal comes back with its status and Retry-After; a body that is not JSON as undefined', async () => {
    assert.deepEqual(await requestProvider(`${base}/busy`, { ...options, method: 'GET' }), { status: 429, body: { message: 'Too many' }, retryAfter: '7' })
    assert.deepEqual(await requestProvider(`${base}/text`, { ...options, method: 'GET' }), { status: 200, body: undefined, retryAfter: null })
    assert.equal(seen.at(-1)!.headers['content-type'], undefined)
  })

  test('no answer within the deadline, a redirect and a refused connection throw, naming the request', async () => {
    await assert.rejects(requestProvider(`${base}/slow`, { ...options, method: 'GET', timeoutMs: 100 }), /^Error: Test POST \/call: no answer within 100 ms$/)
    await assert.rejects(requestProvider(`${base}/moved`, { ...options, method: 'POST', body: {} }), /^Error: Test POST \/call: answered HTTP 307, a redirect$/)
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    await assert.rejects(requestProvider(`http://127.0.0.1:${port}/call`, { ...options, method: 'GET' }), /^Error: Test POST \/call: connection failed$/)
  })
})
