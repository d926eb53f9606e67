/**
 * A webhook receiver for tests: a real HTTP server that records every
 * request it gets (headers and raw body) and answers as the test scripts it:
 * a status (with headers), or hanging until released.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

export type Answer = { status: number; headers?: Record<string, string> } | 'hang'

export interface Receiver {
  url: string
  received: Received[]
  /** Answers the next requests, in order; afterwards 200. */
  answer(...answers: Answer[]): void
  /** Answers every hanging request with 200. */
  release(): void
  /** Resolves when `count` requests have been received. */
  waitFor(count: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** `port`: a fixed one (to come up where a receiver was down); any free one by default. */
export async function startReceiver(options: { port?: number } = {}): Promise<Receiver> {
  const received: Received[] = []
  const script: Answer[] = []
  const hanging = new Set<ServerResponse>()
  const waiters: { count: number; resolve: () => void }[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      for (const waiter of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
      const answer = script.shift() ?? { status: 200 }
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      res.writeHead(answer.status, answer.headers).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answer: (...answers) => script.push(...answers),
    release() {
      for (const res of hanging) res.writeHead(200).end()
      hanging.clear()
    },
    waitFor(count, timeoutMs = 5000) {
      if (received.length >= count) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`received ${received.length} of ${count} requests`)), timeoutMs)
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer)
            resolve()
          },
        })
      })
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
