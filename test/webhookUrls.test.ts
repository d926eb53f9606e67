/** Webhook URLs are checked at registration and every resolved address again at delivery, so no client can make us call inward. */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { DeliveryError, type PosterOptions, type PostResult, WebhookPoster } from '../src/webhooks/httpPoster.ts'
import { isPublicAddress, webhookUrlProblem } from '../src/webhooks/urlSafety.ts'

const ADDRESSES: [string, boolean][] = [
  ['8.8.8.8', true],
  ['1.1.1.1', true],
  ['93.184.216.34', true],
  ['0.0.0.0', false],
  ['0.255.255.255', false],
  ['9.255.255.255', true],
  ['10.0.0.1', false],
  ['11.0.0.0', true],
  ['100.63.255.255', true],
  ['100.64.0.1', false],
  ['100.127.255.255', false],
  ['100.128.0.0', true],
  ['127.0.0.1', false],
  ['127.255.255.254', false],
  ['169.254.169.254', false],
  ['169.255.0.1', true],
  ['172.15.255.255', true],
  ['172.16.0.1', false],
  ['172.31.255.255', false],
  ['172.32.0.0', true],
  ['192.0.0.9', false],
  ['192.0.2.1', false],
  ['192.88.99.1', false],
  ['192.167.255.255', true],
  ['192.168.1.1', false],
  ['198.18.0.1', false],
  ['198.19.255.255', false],
  ['198.20.0.0', true],
  ['198.51.100.7', false],
  ['203.0.113.9', false],
  ['223.255.255.255', true],
  ['224.0.0.1', false],
  ['239.255.255.255', false],
  ['240.0.0.1', false],
  ['255.255.255.255', false],
  ['2606:4700:4700::1111', true],
  ['2001:4860:4860::8888', true],
  ['2a00:1450:4001:80b::200e', true],
  ['::', false],
  ['::1', false],
  ['0:0:0:0:0:0:0:1', false],
  ['fc00::1', false],
  ['fd12:3456:789a::1', false],
  ['fe80::1', false],
  ['febf:ffff::1', false],
  ['fec0::1', false],
  ['ff02::1', false],
  ['2001:db8::1', false],
  ['2001:db8:ffff::1', false],
  ['100::1', false],
  ['2001::1', false],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false],
  ['2001:1ff:ffff::1', false],
  ['2001:200::1', true],
  ['3fff::1', false],
  ['::ffff:127.0.0.1', false],
  ['::ffff:7f00:1', false],
  ['::ffff:10.1.2.3', false],
  ['::ffff:8.8.8.8', true],
  ['::FFFF:808:808', true],
  ['::ffff:0:169.254.169.254', false],
  ['64:ff9b::8.8.8.8', true],
  ['64:ff9b::192.168.0.1', false],
  ['64:ff9b::a9fe:a9fe', false],
  ['64:ff9b:1::8.8.8.8', false],
  ['::127.0.0.1', false],
  ['::8.8.8.8', false],
  ['2002:808:808::1', true],
  ['2002:7f00:1::1', false],
  ['fe80::1%eth0', false],
  ['fe80::1%25eth0', false],
  ['2606:4700:4700::1111%eth0', false],
  ['', false],
  ['localhost', false],
  ['010.0.0.1', false],
  ['1.2.3', false],
  ['[::1]', false],
  ['::ffff:1.2.3.256', false],
]

test(`isPublicAddress over ${ADDRESSES.length} addresses`, () => {
  const wrong = ADDRESSES.filter(([ip, expected]) => isPublicAddress(ip) !== expected)
  assert.deepEqual(wrong, [])
})

const PRIVATE = 'url must not point to a private, loopback or link-local address'
const URLS: [url: string, allowPrivate: boolean, problem: string | undefined][] = [
  ['https://hooks.example.com/conversations?tenant=7', false, undefined],
  ['https://hooks.example.com:8443/x', false, undefined],
  ['https://8.8.8.8/hook', false, undefined],
  ['https://[2606:4700:4700::1111]/hook', false, undefined],
  ['https://bücher.example/hook', false, undefined],
  ['http://hooks.example.com/', false, 'url must use https'],
  ['ftp://hooks.example.com/', false, 'url must use https'],
  ['ftp://hooks.example.com/', true, 'url must use https'],
  ['hooks.example.com/path', false, 'url must be an absolute URL'],
  ['/relative', false, 'url must be an absolute URL'],
  ['https://', false, 'url must be an absolute URL'],
  ['https://user:secret@hooks.example.com/', false, 'url must not contain a username or password'],
  ['https://user@hooks.example.com/', true, 'url must not contain a username or password'],
  ['https://hooks.example.com/#section', false, 'url must not have a fragment'],
  ['https://hooks.example.com/#', false, 'url must not have a fragment'],
  [`https://hooks.example.com/${'a'.repeat(2048)}`, false, 'url must be at most 2048 characters long'],
  ['https://10.0.0.1/', false, PRIVATE],
  ['https://127.0.0.1:8443/', false, PRIVATE],
  ['https://169.254.169.254/latest/meta-data/', false, PRIVATE],
  ['https://[::1]/', false, PRIVATE],
  ['https://[::ffff:127.0.0.1]/', false, PRIVATE],
  ['https://[fe80::1]/', false, PRIVATE],
  ['https://[fd00::1]/', false, PRIVATE],
  ['https://0x7f000001/', false, PRIVATE],
  ['https://2130706433/', false, PRIVATE],
  ['https://0177.0.0.1/', false, PRIVATE],
  ['https://127.1/', false, PRIVATE],
  ['https://127.0.0.1./', false, PRIVATE],
  ['https://0/', false, PRIVATE],
  ['https://localhost/', false, 'url must not point to a local or internal host name'],
  ['https://LOCALHOST./', false, 'url must not point to a local or internal host name'],
  ['https://app.localhost/', false, 'url must not point to a local or internal host name'],
  ['https://printer.local/', false, 'url must not point to a local or internal host name'],
  ['https://foo.internal/', false, 'url must not point to a local or internal host name'],
  ['https://metadata.google.internal/computeMetadata/v1/', false, 'url must not point to a local or internal host name'],
  ['https://intranet/', false, 'url host must be a fully qualified domain name'],
  ['https://intranet./', false, 'url host must be a fully qualified domain name'],
  ['https://10.0.0.1/', true, undefined],
  ['https://[::1]/', true, undefined],
  ['https://0x7f000001/', true, undefined],
  ['https://localhost/', true, undefined],
  ['https://foo.internal/', true, undefined],
  ['https://intranet/', true, undefined],
  ['http://127.0.0.1:9000/hooks', true, undefined],
  ['http://localhost:9000/hooks', true, undefined],
]

for (const [url, allowPrivate, problem] of URLS) {
  test(`webhookUrlProblem(${url.length > 80 ? `${url.slice(0, 40)}…` : url}, allowPrivate ${allowPrivate})`, () => {
    assert.equal(webhookUrlProblem(url, allowPrivate), problem)
  })
}

interface Received {
  method: string | undefined
  url: string | undefined
  headers: http.IncomingHttpHeaders
  body: string
}

/** A receiver on 127.0.0.1 that records what reaches it; closed, with every connection, after `use`. */
async function withReceiver(
  handler: (request: http.IncomingMessage, response: http.ServerResponse) => void,
  use: (port: number, received: Received[], connections: () => number) => Promise<void>,
  host = '127.0.0.1',
  port = 0,
): Promise<void> {
  const received: Received[] = []
  let connections = 0
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      received.push({ method: request.method, url: request.url, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') })
      handler(request, response)
    })
  })
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  try {
    await use((server.address() as AddressInfo).port, received, () => connections)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

const base = { headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: true, userAgent: 'trigger-service-test/1' }

/** One POST, by a poster of its own that is closed afterwards. */
async function postOnce(options: PosterOptions & { url: string; headers: Record<string, string>; body: string }): Promise<PostResult> {
  const poster = new WebhookPoster(options)
  try {
    return await poster.post({ endpointId: 'whe_test', maxConnections: 1, url: options.url, headers: options.headers, body: options.body })
  } finally {
    await poster.close()
  }
}

async function deliveryError(promise: Promise<unknown>): Promise<DeliveryError> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof DeliveryError, `expected a DeliveryError, got ${String(error)}`)
    return error
  }
  assert.fail('expected the delivery to fail')
}

test('posts the body with the given headers, user-agent and content-length', async () => {
  await withReceiver(
    (_request, response) => response.writeHead(204).end(),
    async (port, received) => {
      const body = JSON.stringify({ type: 'task.completed', note: 'café' })
      const result = await postOnce({
        ...base,
        url: `http://127.0.0.1:${port}/hooks/in?tenant=7`,
        body,
        headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'Content-Length': '1', 'User-Agent': 'spoofed' },
      })
      assert.equal(result.status, 204)
      assert.equal(result.retryAfterMs, undefined)
      assert.ok(result.latencyMs > 0 && result.latencyMs < 2000)
      assert.equal(received.length, 1)
      const [request] = received
      assert.equal(request?.method, 'POST')
      assert.equal(request?.url, '/hooks/in?tenant=7')
      assert.equal(request?.body, body)
      assert.equal(request?.headers['content-type'], 'application/json')
      assert.equal(request?.headers['webhook-id'], 'msg_1')
      assert.equal(request?.headers['user-agent'], 'trigger-service-test/1')
      assert.equal(request?.headers['content-length'], String(Buffer.byteLength(body)))
      assert.equal(request?.headers.host, `127.0.0.1:${port}`)
    },
  )
})

test('503 with Retry-After in seconds', async () => {
  await withReceiver(
    (_request, response) => response.writeHead(503, { 'retry-after': '120' }).end('busy'),
    async (port) => {
      const result = await postOnce({ ...base, url: `http://127.0.0.1:${port}/` })
      assert.deepEqual([result.status, result.retryAfterMs], [503, 120_000])
    },
  )
})

for (const [header, expected] of [
  ['Wed, 01 Jan 2025 00:02:00 GMT', 120_000],
  ['Wednesday, 01-Jan-25 00:02:00 GMT', 120_000],
  ['Wed Jan  1 00:02:00 2025', 120_000],
  ['Tue, 31 Dec 2024 23:00:00 GMT', 0],
  ['999999', 86_400_000],
  ['Fri, 01 Jan 2027 00:00:00 GMT', 86_400_000],
  ['soon', undefined],
  ['-5', undefined],
  ['1.5', undefined],
  ['Wed, 31 Feb 2025 00:00:00 GMT', undefined],
] as const) {
  test(`429 with Retry-After: ${header}`, async () => {
    await withReceiver(
      (_request, response) => response.writeHead(429, { 'retry-after': header }).end(),
      async (port) => {
        const result = await postOnce({ ...base, url: `http://127.0.0.1:${port}/`, now: () => Date.UTC(2025, 0, 1) })
        assert.deepEqual([result.status, result.retryAfterMs], [429, expected])
      },
    )
  })
}

test('a redirect is an answer, not followed', async () => {
  await withReceiver(
    () => assert.fail('the redirect target must not be called'),
    async (targetPort, targetReceived, targetConnections) => {
      await withReceiver(
        (_request, response) => response.writeHead(302, { location: `http://127.0.0.1:${targetPort}/elsewhere` }).end(),
        async (port) => {
          const result = await postOnce({ ...base, url: `http://127.0.0.1:${port}/` })
          assert.equal(result.status, 302)
          assert.equal(targetReceived.length, 0)
          assert.equal(targetConnections(), 0)
        },
      )
    },
  )
})

test('a receiver that never answers times out within timeoutMs', async () => {
  await withReceiver(
    () => {},
    async (port) => {
      const started = performance.now()
      const error = await deliveryError(postOnce({ ...base, url: `http://127.0.0.1:${port}/`, timeoutMs: 300 }))
      const elapsed = performance.now() - started
      assert.equal(error.kind, 'timeout')
      assert.ok(elapsed >= 290 && elapsed < 1000, `took ${elapsed} ms`)
    },
  )
})

test('a receiver that stops in the middle of its body times out too', async () => {
  await withReceiver(
    (_request, response) => {
      response.writeHead(200, { 'content-length': '1000' })
      response.write('partial')
    },
    async (port) => {
      const error = await deliveryError(postOnce({ ...base, url: `http://127.0.0.1:${port}/`, timeoutMs: 300 }))
      assert.equal(error.kind, 'timeout')
    },
  )
})

test('a DNS lookup that never answers times out', async () => {
  const error = await deliveryError(
    postOnce({ ...base, url: 'http://receiver.test/', timeoutMs: 300, lookup: () => new Promise(() => {}) }),
  )
  assert.equal(error.kind, 'timeout')
})

test('an endless body is read only up to the limit', async () => {
  let sent = 0
  await withReceiver(
    (_request, response) => {
      response.writeHead(200)
      const chunk = Buffer.alloc(16 * 1024, 'x')
      const pump = () => {
        while (!response.destroyed && response.write(chunk)) sent += chunk.length
        if (!response.destroyed) response.once('drain', pump)
      }
      response.on('error', () => {})
      pump()
    },
    async (port) => {
      const started = performance.now()
      const result = await postOnce({ ...base, url: `http://127.0.0.1:${port}/`, timeoutMs: 5000 })
      assert.equal(result.status, 200)
      assert.ok(performance.now() - started < 2000)
    },
  )
  // Socket buffers let the receiver get somewhat ahead of us, but not stream without end.
  assert.ok(sent < 16 * 1024 * 1024, `receiver sent ${sent} bytes`)
})

test('a receiver that hangs up mid-answer is a network error', async () => {
  await withReceiver(
    (_request, response) => {
      response.writeHead(200, { 'content-length': '1000' })
      response.write('partial', () => response.socket?.destroy())
    },
    async (port) => {
      const error = await deliveryError(postOnce({ ...base, url: `http://127.0.0.1:${port}/` }))
      assert.equal(error.kind, 'network')
    },
  )
})

test('connection refused is a network error', async () => {
  let closedPort = 0
  await withReceiver(
    () => {},
    async (port) => {
      closedPort = port
    },
  )
  const error = await deliveryError(postOnce({ ...base, url: `http://127.0.0.1:${closedPort}/` }))
  assert.equal(error.kind, 'network')
  assert.match(error.message, /ECONNREFUSED/)
})

test('a failed DNS lookup is a dns error', async () => {
  const lookup = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND receiver.test'), { code: 'ENOTFOUND' }))
  const error = await deliveryError(postOnce({ ...base, url: 'http://receiver.test/', lookup }))
  assert.equal(error.kind, 'dns')
  assert.match(error.message, /ENOTFOUND/)
  const empty = await deliveryError(postOnce({ ...base, url: 'http://receiver.test/', lookup: async () => [] }))
  assert.equal(empty.kind, 'dns')
})

test('without a lookup stub, the system resolver is used', async () => {
  await withReceiver(
    (_request, response) => response.end(),
    async (port) => {
      // Even where localhost resolves to ::1 first, the client falls back to the next vetted address, 127.0.0.1.
      assert.equal((await postOnce({ ...base, url: `http://localhost:${port}/` })).status, 200)
    },
  )
})

test('a private resolved address is refused before any connection', async () => {
  const error = await deliveryError(
    postOnce({
      ...base,
      allowPrivate: false,
      url: 'https://hooks.example.com/in',
      lookup: async () => [{ address: '10.0.0.5', family: 4 }],
    }),
  )
  assert.equal(error.kind, 'address_refused')
  assert.match(error.message, /10\.0\.0\.5/)

  await withReceiver(
    () => assert.fail('nothing may reach a refused address'),
    async (port, received, connections) => {
      const refused = await deliveryError(
        postOnce({
          ...base,
          allowPrivate: false,
          url: `https://hooks.example.com:${port}/in`,
          lookup: async () => [{ address: '127.0.0.1', family: 4 }],
        }),
      )
      assert.equal(refused.kind, 'address_refused')
      assert.equal(connections(), 0)
      assert.equal(received.length, 0)
    },
  )
})

test('one private address among public ones is enough to refuse', async () => {
  const error = await deliveryError(
    postOnce({
      ...base,
      allowPrivate: false,
      url: 'https://hooks.example.com/in',
      lookup: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '::ffff:169.254.169.254', family: 6 },
      ],
    }),
  )
  assert.equal(error.kind, 'address_refused')
  assert.match(error.message, /169\.254\.169\.254/)
})

test('private IP literals and names are refused at delivery as at registration', async () => {
  for (const url of ['https://10.0.0.1/', 'https://[::1]/', 'https://0x7f000001/', 'http://hooks.example.com/', 'https://localhost/']) {
    const error = await deliveryError(postOnce({ ...base, allowPrivate: false, url, lookup: () => assert.fail('no lookup for a refused URL') }))
    assert.equal(error.kind, 'address_refused', url)
  }
})

test('connects to the vetted address, not to whatever DNS says next (rebinding)', async () => {
  await withReceiver(
    (_request, response) => response.end('ok'),
    async (port, received) => {
      const answers = ['127.0.0.1', '127.0.0.2']
      const asked: string[] = []
      const lookup = async (hostname: string) => {
        asked.push(hostname)
        return [{ address: answers.shift() ?? '127.0.0.3', family: 4 as const }]
      }
      // A second receiver on the address a second lookup would give: it must hear nothing.
      await withReceiver(
        () => assert.fail('the request went to a re-resolved address'),
        async (_port, rebound, reboundConnections) => {
          const result = await postOnce({ ...base, url: `http://receiver.test:${port}/in`, lookup })
          assert.equal(result.status, 200)
          assert.deepEqual(asked, ['receiver.test'])
          assert.equal(received.length, 1)
          assert.equal(received[0]?.headers.host, `receiver.test:${port}`)
          assert.equal(rebound.length, 0)
          assert.equal(reboundConnections(), 0)
        },
        '127.0.0.2',
        port,
      )
    },
  )
})

test('posts to one endpoint share kept-alive connections, at most its cap of them; another endpoint has its own', async () => {
  await withReceiver(
    (_request, response) => response.end('ok'),
    async (port, received, connections) => {
      const poster = new WebhookPoster(base)
      const post = (endpointId: string) => poster.post({ endpointId, maxConnections: 2, url: `http://127.0.0.1:${port}/in`, headers: {}, body: '{}' })
      try {
        for (let round = 0; round < 5; round++) await Promise.all([post('whe_a'), post('whe_a')])
        assert.equal(received.length, 10)
        assert.equal(connections(), 2)
        await post('whe_b')
        assert.equal(connections(), 3)
      } finally {
        await poster.close()
      }
    },
  )
})

test('each new connection of a pooled endpoint is resolved and vetted again; a kept-alive one stays where it was vetted', async () => {
  const answers = ['127.0.0.1', '127.0.0.2', '10.0.0.5']
  const asked: string[] = []
  const lookup = async (hostname: string) => {
    asked.push(hostname)
    return [{ address: answers.shift()!, family: 4 as const }]
  }
  let closeAfterAnswer = false
  await withReceiver(
    (_request, response) => response.writeHead(200, closeAfterAnswer ? { connection: 'close' } : {}).end(),
    async (port, first) => {
      await withReceiver(
        (_request, response) => response.end(),
        async (_port, second, secondConnections) => {
          const poster = new WebhookPoster({ ...base, lookup })
          const post = () => poster.post({ endpointId: 'whe_a', maxConnections: 1, url: `http://receiver.test:${port}/in`, headers: {}, body: '{}' })
          try {
            // Kept alive: DNS is not asked again, so an answer that has changed meanwhile cannot move the connection.
            await post()
            await post()
            assert.deepEqual([asked.length, first.length, second.length], [1, 2, 0])
            // Once that connection closes, the next is made to the address DNS gives now, and only there.
            closeAfterAnswer = true
            await post()
            await post()
            assert.deepEqual([asked.length, first.length, second.length, secondConnections()], [2, 3, 1, 1])
          } finally {
            await poster.close()
          }
        },
        '127.0.0.2',
        port,
      )
    },
  )
  // The vetting is that same lookup's: where private addresses are not allowed, a new connection told one is refused before it dials.
  const strict = new WebhookPoster({ ...base, allowPrivate: false, lookup })
  try {
    const refused = await deliveryError(strict.post({ endpointId: 'whe_a', maxConnections: 1, url: 'https://hooks.example.com/in', headers: {}, body: '{}' }))
    assert.equal(refused.kind, 'address_refused')
    assert.match(refused.message, /10\.0\.0\.5/)
    assert.equal(asked.length, 3)
  } finally {
    await strict.close()
  }
})
