/**
 * What the benchmark's sections share: the servers under measurement, each
 * started pinned to its CPU with its output going to a file; the admin API
 * that provisions them; throw-away PostgreSQL databases; and the log.
 */
import { type ChildProcess, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import { type AddressInfo, createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { hasExited, startChild } from './children.ts'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** The servers' CPU; the load generators (wrk, the end-to-end clients and receiver) run on the other, LOAD_CPU. */
export const SERVER_CPU = 0
export const LOAD_CPU = 1
export const OPERATOR_TOKEN = `bench-operator-${randomBytes(16).toString('hex')}`
export const PHONE_HASH_KEY = randomBytes(32).toString('hex')
/** PGlite's first start initialises its data directory, which takes seconds. */
const READY_TIMEOUT_MS = 60_000
/** The server the benchmark makes its databases on; BENCH_POSTGRES_URL names another (one with pg_stat_statements loaded, say). */
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export interface Server {
  /** As the report names the target. */
  name: string
  /** The name in lower case, for file names and request ids. */
  label: string
  child: ChildProcess
  baseUrl: string
  logFile: string
}

/**
 * The node flags `npm start` runs the service with (package.json's start
 * script): every process of the service the benchmark starts gets them too,
 * so that what is measured is what runs.
 */
export const SERVICE_NODE_FLAGS = nodeFlagsOfStartScript()

function nodeFlagsOfStartScript(): string[] {
  const start: string = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start
  const flags = /^exec node (.*?) ?dist\/cli\.js serve$/.exec(start)?.[1]
  if (flags === undefined) throw new Error(`package.json's start script is not 'exec node [flags] dist/cli.js serve' but: ${start}`)
  return flags.split(' ').filter((flag) => flag !== '')
}

/**
 * Extra node flags for every server the benchmark starts, from
 * BENCH_SERVER_NODE_FLAGS (space-separated), e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof` to profile the service under the load it measures
 * (NODE_OPTIONS may not carry --cpu-prof).
 */
const SERVER_NODE_FLAGS = (process.env.BENCH_SERVER_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '')

/**
 * Starts a server pinned to SERVER_CPU, with the service's node flags (the
 * bare route's too, so that the ratio to it compares like with like), its
 * output (the request log) going to a file; on `port` when given (a service
 * told its own address, PUBLIC_BASE_URL, before it starts), else one free now.
 */
export async function startServer(name: string, args: string[], env: Record<string, string>, workDir: string, port?: number): Promise<Server> {
  const label = name.toLowerCase().replaceAll(' ', '-')
  port ??= await freePort()
  const logFile = path.join(workDir, `${label}.log`)
  const output = openSync(logFile, 'w')
  try {
    const child = startChild('taskset', ['-c', String(SERVER_CPU), process.execPath, ...SERVICE_NODE_FLAGS, ...SERVER_NODE_FLAGS, ...args], {
      cwd: ROOT,
      // PORT for `serve`, METRICS_PORT for a `worker`: whichever the process listens on.
      env: { ...process.env, ...env, PORT: String(port), METRICS_PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', output, output],
    })
    return { name, label, child, baseUrl: `http://127.0.0.1:${port}`, logFile }
  } finally {
    closeSync(output)
  }
}

/** A port nothing listens on now, as the system picks one. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

export async function waitUntilReady(server: Server, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (hasExited(server.child)) throw new Error(`${server.name} exited before it was ready:\n${await tail(server.logFile)}`)
    if (await probe().catch(() => false)) return
    await sleep(250)
  }
  throw new Error(`${server.name} was not ready after ${READY_TIMEOUT_MS / 1000} s:\n${await tail(server.logFile)}`)
}

/** An organization with one API key (of `scopes`, the default ones if left out) and `campaigns`, through the admin API. */
/** The bench organization's rate limit: requests a second and burst, far beyond what the service can take here. */
const BENCH_RATE_LIMIT = 1_000_000

export async function provision(
  baseUrl: string,
  campaigns: readonly Record<string, unknown>[],
  scopes?: readonly string[],
): Promise<{ orgId: string; apiKey: string }> {
  const org = await adminPost(baseUrl, '/admin/v1/organizations', { name: 'Bench Org' })
  const orgPath = `/admin/v1/organizations/${org.data.id}`
  // A client the operator lets send as fast as the service takes: the limit is applied (each request takes its
  // token, leased a tenth of a second's worth at a time) and never refuses.
  const limited = await fetch(`${baseUrl}${orgPath}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ rate_limit: { per_second: BENCH_RATE_LIMIT, burst: BENCH_RATE_LIMIT } }),
  })
  if (limited.status !== 200) throw new Error(`PATCH ${orgPath} answered ${limited.status}: ${await limited.text()}`)
  const key = await adminPost(baseUrl, `${orgPath}/api-keys`, { name: 'bench', ...(scopes === undefined ? {} : { scopes }) })
  for (const campaign of campaigns) await adminPost(baseUrl, `${orgPath}/campaigns`, campaign)
  return { orgId: org.data.id as string, apiKey: key.data.key as string }
}

export function adminPost(baseUrl: string, route: string, body: unknown): Promise<{ data: Record<string, unknown> }> {
  return postCreating(baseUrl, route, OPERATOR_TOKEN, body)
}

/** A POST that must create what it posts (201), with the operator token or an organization's key. */
export async function postCreating(baseUrl: string, route: string, token: string, body: unknown): Promise<{ data: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST ${route} answered ${response.status}: ${text}`)
  return JSON.parse(text)
}

/** A throw-away PostgreSQL database for one run, dropped afterwards whatever happens. */
export async function withPostgresDatabase<T>(work: (databaseUrl: string) => Promise<T>): Promise<T> {
  const name = `bench_${Date.now()}`
  await onPostgres((client) => client.query(`CREATE DATABASE ${name}`))
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  try {
    return await work(url.toString())
  } finally {
    // FORCE: a server killed mid-run may leave connections that would block the drop.
    await onPostgres((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}

/** The PostgreSQL server's version, and its synchronous_commit: whether each commit waits for its WAL flush. */
export function postgresSettings(): Promise<{ version: string; synchronousCommit: string }> {
  return onPostgres(async (client) => {
    const version = (await client.query<{ version: string }>('SELECT version()')).rows[0]!.version
    const synchronousCommit = (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit
    return { version, synchronousCommit }
  })
}

function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(POSTGRES_ADMIN_URL, work)
}

/** `work` on a connection of its own to the database at `url`, closed after. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

export async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

/** The middle value; of an even count, the mean of the middle two. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** One POST /api/v2/triggers through `agent` (kept-alive connections, or a new one each time), with its status and body. */
export function postTriggerWith(agent: http.Agent, url: URL, apiKey: string, body: string, requestId: string): Promise<{ status: number; text: string }> {
  return requestWith(agent, url, 'POST', apiKey, requestId, body)
}

/** One request through `agent` with the API key and request id, a JSON body if any (`headers` over those), its answer read whole. */
export function requestWith(
  agent: http.Agent,
  url: URL | string,
  method: 'GET' | 'POST',
  apiKey: string,
  requestId: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${apiKey}`,
          'x-request-id': requestId,
          ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
          ...headers,
        },
      },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode!, text }))
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}

/**
 * Runs `work` with every thread of this process (the clients, the receiver,
 * libuv's pool) on `cpu`, away from the service's, then puts them back on the
 * CPUs they had. Children started meanwhile pin themselves with taskset.
 */
export async function pinnedTo<T>(cpu: number, work: () => Promise<T>): Promise<T> {
  const pid = String(process.pid)
  const current = execFileSync('taskset', ['-c', '-p', pid], { encoding: 'utf8' })
  const cpus = /list: (\S+)/.exec(current)?.[1]
  if (cpus === undefined) throw new Error(`cannot read this process's CPU affinity from: ${current}`)
  const pin = (list: string) => execFileSync('taskset', ['-a', '-c', '-p', list, pid], { stdio: 'ignore' })
  pin(String(cpu))
  try {
    return await work()
  } finally {
    pin(cpus)
  }
}

/** Nearest rank. */
export function percentile(values: Float64Array, p: number): number {
  const sorted = values.slice().sort()
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A whole number from the environment variable `name`, `fallback` when it is unset or empty. */
export function wholeNumber(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

/** As wholeNumber, above zero. */
export function positiveInteger(name: string, fallback: number): number {
  const value = wholeNumber(name, fallback)
  if (value === 0) throw new Error(`${name} must be a positive whole number, got 0`)
  return value
}

/** The names the comma-separated environment variable lists, in `all`'s order; all of them when it is unset or empty. */
export function namedIn<Name extends string>(variable: string, all: readonly Name[]): Name[] {
  const raw = process.env[variable]
  if (raw === undefined || raw === '') return [...all]
  const named = raw.split(',').map((name) => name.trim())
  const unknown = named.filter((name) => !(all as readonly string[]).includes(name))
  if (unknown.length > 0) throw new Error(`${variable} names no ${unknown.join(', ')}; it takes ${all.join(', ')}`)
  return all.filter((name) => named.includes(name))
}

export function log(message: string) {
  process.stderr.write(`[bench] ${message}\n`)
}
