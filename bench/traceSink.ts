/**
 * `BENCH_TRACES=on`: the service's processes run with traces on, exporting
 * them over OTLP/HTTP, with the SDK's batching processor as in production, to
 * this sink: a local HTTP server that reads each export and answers 200, so
 * that the figures include everything tracing costs the service (spans, their
 * serialization, the exports) and nothing a collector would.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { log } from './harness.ts'

export interface TraceSink {
  /** What to add to the service's environment. */
  environment: Record<string, string>
  /** Exports received and their bytes so far: proof that spans went out. */
  readonly received: { exports: number; bytes: number }
  close(): Promise<void>
}

export async function startTraceSink(): Promise<TraceSink> {
  const received = { exports: 0, bytes: 0 }
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received.bytes += chunk.length))
    req.on('end', () => {
      received.exports++
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  log(`traces on: exported over OTLP/HTTP to a sink on port ${port}`)
  return {
    environment: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` },
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
