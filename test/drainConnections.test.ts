/**
 * The drain and kept-alive connections: the server's close waits for every
 * open connection, so an answer sent once the drain has begun closes its
 * connection, and a client that keeps its socket open cannot hold the drain.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { test } from 'node:test'
import { OPERATOR_TOKEN, startService } from './support/service.ts'

test('a request in progress when the drain begins is answered with Connection: close, and the close does not wait for its client', async () => {
  const service = await startService({ workers: false })
  try {
    await service.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = service.app.server.address() as net.AddressInfo
    const socket = net.connect(port, '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk) => (answer += chunk))
    const body = JSON.stringify({ name: 'Drained' })
    // Headers and half the body: the request has begun, as the drain does.
    await new Promise<void>((resolve) => socket.once('connect', resolve))
    socket.write(`POST /admin/v1/organizations HTTP/1.1\r\nHost: service.test\r\nAuthorization: Bearer ${OPERATOR_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    // The client never closes its side: only the server's closing of the connection can end the wait.
    const ended = new Promise<void>((resolve) => socket.once('end', resolve))
    const began = performance.now()
    const closed = service.app.close()
    socket.write(body.slice(10))
    const bound = new Promise((_, reject) => setTimeout(() => reject(new Error('the close still waits after 10 s')), 10_000).unref())
    await Promise.race([Promise.all([closed, ended]), bound])
    const elapsed = performance.now() - began
    assert.match(answer, /^HTTP\/1\.1 201 /)
    assert.match(answer, /\r\nconnection: close\r\n/i)
    assert.ok(elapsed < 5000, `the close took ${Math.round(elapsed)} ms`)
    socket.destroy()
  } finally {
    await service.close()
  }
})
