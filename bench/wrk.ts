/** Running wrk, pinned to its own CPU, and reading its report. */
import { fileURLToPath } from 'node:url'
import { startChild } from './children.ts'

const SCRIPT = fileURLToPath(new URL('./triggers.lua', import.meta.url))

/**
 * wrk counts a response slower than its timeout (2 s by default) as a socket
 * error and leaves it out of the latency figures, which would hide exactly
 * the tail a saturated server has. With a long timeout every answered request
 * is in the percentiles; one not answered within it still fails the run.
 */
export const TIMEOUT_SECONDS = 30

export interface WrkRun {
  url: string
  /** CPU that wrk is pinned to, away from the server's. */
  cpu: number
  durationSeconds: number
  connections: number
  bodiesFile: string
  apiKey: string
  /** Makes this run's request ids unique (see triggers.lua). */
  label: string
}

export interface WrkResult {
  requestsPerSecond: number
  requests: number
  /** Latency percentiles in milliseconds. */
  latencyMs: { p50: number; p75: number; p90: number; p99: number }
  non2xx: number
  socketErrors: { connect: number; read: number; write: number; timeout: number }
  /** wrk's report as printed, for the record when a run fails. */
  output: string
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const args = [
    '-c',
    String(run.cpu),
    'wrk',
    '-t1',
    `-c${run.connections}`,
    `-d${run.durationSeconds}s`,
    '--latency',
    '--timeout',
    `${TIMEOUT_SECONDS}s`,
    '-s',
    SCRIPT,
    run.url,
    '--',
    run.bodiesFile,
    run.apiKey,
    run.label,
  ]
  const child = startChild('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]))
  })
  if (code !== 0) throw new Error(`wrk failed (${signal ?? `exit ${code}`}):\n${stderr}${stdout}`)
  return parseWrkOutput(stdout)
}

/** Reads the figures out of wrk's report (run with --latency). */
export function parseWrkOutput(output: string): WrkResult {
  const number = (pattern: RegExp, what: string) => {
    const match = pattern.exec(output)
    if (match === null) throw new Error(`wrk's report has no ${what}:\n${output}`)
    return Number(match[1])
  }
  const percentile = (p: number) => {
    const match = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(output)
    if (match === null) throw new Error(`wrk's report has no ${p}% latency (was it run with --latency?):\n${output}`)
    return Number(match[1]) * MS_PER_UNIT[match[2]!]!
  }
  // wrk prints the error lines only when there were errors.
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  return {
    requestsPerSecond: number(/^Requests\/sec:\s+([\d.]+)/m, 'Requests/sec'),
    requests: number(/^\s*(\d+) requests in /m, 'request count'),
    latencyMs: { p50: percentile(50), p75: percentile(75), p90: percentile(90), p99: percentile(99) },
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: {
      connect: Number(socketErrors?.[1] ?? 0),
      read: Number(socketErrors?.[2] ?? 0),
      write: Number(socketErrors?.[3] ?? 0),
      timeout: Number(socketErrors?.[4] ?? 0),
    },
    output,
  }
}

const MS_PER_UNIT: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** Why a run does not count (a response other than 2xx, a socket error), or undefined when it counts. */
export function failureOf(result: WrkResult): string | undefined {
  const errors = Object.values(result.socketErrors).reduce((sum, count) => sum + count, 0)
  if (result.non2xx === 0 && errors === 0) return undefined
  const { connect, read, write, timeout } = result.socketErrors
  return `${result.non2xx} non-2xx responses; socket errors: connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`
}
