/**
 * A webhook receiver for tests: a real HTTP server that records every
 * request it gets (headers and raw body) and answers as the test scripts it:
 * a status (with headers, after a delay), or hanging until released. It
 * counts the connections made to it and the most requests it held at once.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang'

export interface Receiver {
  url: string
  received: Received[]
  /** Connections made to it so far. */
  readonly connections: number
  /** The most requests it has held unanswered at once. */
  readonly peakInFlight: number
  /** Answers the next requests, in order; afterwards 200, or as answerAll says. */
  answer(...answers: Answer[]): void
  /** How to answer once the script is used up. */
  answerAll(answer: Answer): void
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
  let otherwise: Answer = { status: 200 }
  const hanging = new Set<ServerResponse>()
  const waiters: { count: number; resolve: () => void }[] = []
  let connections = 0
  let inFlight = 0
  let peakInFlight = 0
  const server = createServer((req, res) => {
    peakInFlight = Math.max(peakInFlight, ++inFlight)
    res.once('close', () => inFlight--)
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      for (const waiter of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
      const answer = script.shift() ?? otherwise
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      if (answer.delayMs === undefined) res.writeHead(answer.status, answer.headers).end()
      else setTimeout(() => res.writeHead(answer.status, answer.headers).end(), answer.delayMs)
    })
  })
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    get connections() {
      return connections
    },
    get peakInFlight() {
      return peakInFlight
    },
    answer: (...answers) => script.push(...answers),
    answerAll(answer) {
      otherwise = answer
    },
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
