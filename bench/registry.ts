/**
 * A do-not-call registry of millions of numbers, for the law section
 * (bench/run.ts): a file of synthetic US numbers in the US registry's
 * download format (10 digits a line: area code, exchange, line), loaded as
 * an operator loads one, by `node dist/cli.js registry load --plan nanp`
 * (src/services/registries.ts loadRegistry: lines read, digests made,
 * sorted, copied in by COPY as a generation, put in force), timed, with the
 * database size it adds; and the statements the dispatcher's law checks run
 * each batch (src/services/lawChecks.ts), under EXPLAIN ANALYZE on the
 * database so loaded.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs'
import type pg from 'pg'
import { consentsOfNumbers } from '../src/store/consents.ts'
import type { Queryable } from '../src/store/database.ts'
import { lockLawAttempts, saveLawAttempts } from '../src/store/lawAttempts.ts'
import type { OrganizationNumber } from '../src/store/numberAttempts.ts'
import { phoneDigestOf } from '../src/store/phoneHashKey.ts'
import { listedIn, registryDigest } from '../src/store/registries.ts'
import { startChild } from './children.ts'
import { SERVICE_NODE_FLAGS, median, withClient } from './harness.ts'

/**
 * Area codes as the registry's file may hold them: 201-989, N0X-N8X (a middle digit of 9 is kept for the plan's
 * expansion), not N11 (service codes).
 */
const AREA_CODES = Array.from({ length: 989 - 201 + 1 }, (_, index) => 201 + index).filter((code) => Math.floor(code / 10) % 10 !== 9 && code % 100 !== 11)
/**
 * Exchanges 200-299 but 222-224: the law runs' US and Canadian numbers (bench/dispatcher.ts LAW_POOLS) are of
 * exchanges 222-224 and 777-779, so that no task's number is listed and every decision reads the registry and
 * still allows.
 */
const EXCHANGES = Array.from({ length: 100 }, (_, index) => 200 + index).filter((exchange) => exchange < 222 || exchange > 224)
const LINES_PER_WRITE = 100_000

/**
 * Writes `count` distinct numbers, one a line, in the US registry's format (`2012000000`): the i-th number's area
 * code is AREA_CODES[i mod A], and i div A (below 10,000 × the exchanges) gives its exchange and line, so that no
 * two lines are alike. Answers the file's bytes.
 */
export function writeRegistryFile(file: string, count: number): number {
  const perAreaCode = Math.ceil(count / AREA_CODES.length)
  if (perAreaCode > EXCHANGES.length * 10_000) throw new Error(`${count} numbers do not fit in ${AREA_CODES.length} area codes`)
  const fd = openSync(file, 'w')
  let bytes = 0
  try {
    const line = Buffer.alloc(11)
    line[10] = 0x0a
    const chunk = Buffer.alloc(LINES_PER_WRITE * 11)
    for (let first = 0; first < count; first += LINES_PER_WRITE) {
      const lines = Math.min(LINES_PER_WRITE, count - first)
      for (let offset = 0; offset < lines; offset++) {
        const index = first + offset
        const areaCode = AREA_CODES[index % AREA_CODES.length]!
        const rest = Math.floor(index / AREA_CODES.length)
        const digits = `${areaCode}${EXCHANGES[rest % EXCHANGES.length]}${String(Math.floor(rest / EXCHANGES.length)).padStart(4, '0')}`
        line.write(digits, 0, 'latin1')
        line.copy(chunk, offset * 11)
      }
      bytes += writeSync(fd, chunk, 0, lines * 11)
    }
  } finally {
    closeSync(fd)
  }
  return bytes
}

/** What the registry's tables take: the table's pages and its primary key's, of registry_numbers and registries. */
export interface RegistrySizes {
  numbersTable: number
  numbersIndex: number
  /** pg_total_relation_size of registry_numbers and registries together (with TOAST and free-space maps). */
  total: number
}

export async function registrySizes(db: Queryable): Promise<RegistrySizes> {
  const [row] = await db.query<{ table: string; index: string; total: string }>(
    `SELECT pg_relation_size('registry_numbers') AS table, pg_indexes_size('registry_numbers') AS index,
            pg_total_relation_size('registry_numbers') + pg_total_relation_size('registries') AS total`,
  )
  return { numbersTable: Number(row!.table), numbersIndex: Number(row!.index), total: Number(row!.total) }
}

export interface RegistryLoadResult {
  numbers: number
  refused: number
  /** From the command's start to its exit: the process's start, the schema's check, the load. */
  wallSeconds: number
  /** What the command reports of the load itself (loadRegistry's `seconds`: reading to putting in force). */
  loadSeconds: number
  /** The command's peak resident memory (VmHWM, read every half second), MB. */
  peakMemoryMb: number
  registryId: string
}

/**
 * Loads the file through the command line, as an operator would (`registry load --plan nanp`), pinned to `cpu`,
 * with the database's phone hash key; fails unless every line was a number.
 */
export async function loadRegistryThroughCli(options: {
  databaseUrl: string
  phoneHashKey: string
  file: string
  lines: number
  name: string
  purposes: readonly string[]
  root: string
  cpu: number
}): Promise<RegistryLoadResult> {
  const started = performance.now()
  const child = startChild(
    'taskset',
    [
      '-c',
      String(options.cpu),
      process.execPath,
      ...SERVICE_NODE_FLAGS,
      'dist/cli.js',
      'registry',
      'load',
      '--name',
      options.name,
      '--file',
      options.file,
      '--purposes',
      options.purposes.join(','),
      '--plan',
      'nanp',
    ],
    { cwd: options.root, env: { ...process.env, DATABASE_URL: options.databaseUrl, PHONE_HASH_KEY: options.phoneHashKey, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  let peakKb = 0
  const readPeak = () => {
    try {
      peakKb = Math.max(peakKb, Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0))
    } catch {
      // Gone: the last reading stands.
    }
  }
  const timer = setInterval(readPeak, 500)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)))
  clearInterval(timer)
  const wallSeconds = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`registry load exited ${code}:\n${stderr}${stdout}`)
  const report = JSON.parse(stdout) as { id: string; numbers_read: number; refused: number; seconds: number }
  if (report.numbers_read !== options.lines || report.refused !== 0) {
    throw new Error(`registry load read ${report.numbers_read} numbers of ${options.lines} lines, refused ${report.refused}: ${stdout}`)
  }
  return { numbers: report.numbers_read, refused: report.refused, wallSeconds, loadSeconds: report.seconds, peakMemoryMb: peakKb / 1024, registryId: report.id }
}

/** A statement as the store sends it. */
export interface Statement {
  sql: string
  params: readonly unknown[]
}

/**
 * The statements a store function sends, recorded instead of run (each answered with no rows): what the law checks
 * send for a batch, to be explained on the real database.
 */
export async function statementsOf(call: (db: Queryable) => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = []
  const recorder: Queryable = {
    async query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]> {
      sent.push({ sql, params: params ?? [] })
      return []
    },
    async exec() {
      throw new Error('not a script')
    },
  }
  await call(recorder)
  return sent
}

/** A parameter written as a literal of PostgreSQL's text form, for EXECUTE: arrays as array literals, bytes as hex. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  const text = (raw: string) => `'${raw.replaceAll("'", "''")}'`
  const element = (item: unknown): string =>
    item === null || item === undefined ? 'NULL' : `"${(item instanceof Date ? item.toISOString() : String(item)).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
  if (Array.isArray(value)) return text(`{${value.map(element).join(',')}}`)
  if (Buffer.isBuffer(value)) return text(`\\x${value.toString('hex')}`)
  if (value instanceof Date) return text(value.toISOString())
  return text(String(value))
}

export interface Explained {
  plan: 'custom' | 'generic'
  /** Median over the runs, ms: PostgreSQL's own Planning Time and Execution Time. */
  planningMs: number
  executionMs: number
  /** Shared buffers hit and read, of the last run. */
  hit: number
  read: number
  /** The plan's nodes, indented, with their loops and rows (of the last run). */
  outline: string
}

/**
 * The statement prepared as the service prepares it, then `runs` times EXPLAIN (ANALYZE, BUFFERS) EXECUTE with
 * its parameters, under a custom plan and under a generic one (what a prepared statement is given after its first
 * five runs when it costs no more), each run in a transaction rolled back (a write changes nothing); the medians of
 * the times. JIT off, as the service's sessions.
 */
export async function explainStatement(databaseUrl: string, statement: Statement, runs: number): Promise<Explained[]> {
  return withClient(databaseUrl, async (client: pg.Client) => {
    await client.query('SET jit = off')
    await client.query(`PREPARE law_check AS ${statement.sql}`)
    const results: Explained[] = []
    for (const plan of ['custom', 'generic'] as const) {
      await client.query(`SET plan_cache_mode = force_${plan}_plan`)
      const planning: number[] = []
      const execution: number[] = []
      let last: ExplainNode | undefined
      for (let run = 0; run < runs; run++) {
        await client.query('BEGIN')
        try {
          const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: ExplainNode; 'Planning Time': number; 'Execution Time': number }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE law_check(${statement.params.map(literal).join(', ')})`,
          )
          const explained = rows[0]!['QUERY PLAN'][0]
          planning.push(explained['Planning Time'])
          execution.push(explained['Execution Time'])
          last = explained.Plan
        } finally {
          await client.query('ROLLBACK')
        }
      }
      results.push({
        plan,
        planningMs: median(planning),
        executionMs: median(execution),
        hit: last!['Shared Hit Blocks'] ?? 0,
        read: last!['Shared Read Blocks'] ?? 0,
        outline: outline(last!),
      })
    }
    await client.query('DEALLOCATE law_check')
    return results
  })
}

interface ExplainNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Function Name'?: string
  'Actual Loops': number
  'Actual Rows': number
  'Actual Total Time'?: number
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  Plans?: ExplainNode[]
}

function outline(node: ExplainNode, depth = 0): string {
  const on = node['Index Name'] ?? node['Relation Name'] ?? node['Function Name']
  const line = `${'  '.repeat(depth)}${node['Node Type']}${on === undefined ? '' : ` on ${on}`} (loops ${node['Actual Loops']}, rows ${node['Actual Rows']}${node['Actual Total Time'] === undefined ? '' : `, ${node['Actual Total Time'].toFixed(3)} ms`})`
  return [line, ...(node.Plans ?? []).map((child) => outline(child, depth + 1))].join('\n')
}

/**
 * The statements the law checks send for one dispatch batch (src/services/lawChecks.ts), each explained as
 * explainStatement does: the registries listing the batch's numbers (every registry in force), their consents, and,
 * for the numbers a cap binds, their past attempts locked (`fresh`: numbers with none yet, as each round's are) and
 * written back (`capped`: numbers whose row is there).
 */
export async function explainLawChecks(options: {
  databaseUrl: string
  db: Queryable
  phoneHashKey: Buffer
  batch: readonly OrganizationNumber[]
  capped: readonly OrganizationNumber[]
  fresh: readonly OrganizationNumber[]
  subject: string
  now: number
  runs: number
}): Promise<{ name: string; plans: Explained[] }[]> {
  const { phoneHashKey: key, batch, capped, fresh, now } = options
  const generations = (await options.db.query<{ generation: string }>('SELECT generation FROM registries')).map((row) => Number(row.generation))
  const statements: { name: string; call: (db: Queryable) => Promise<unknown> }[] = [
    {
      name: `registries listing the numbers (listedIn: ${batch.length} digests, ${generations.length} generation${generations.length === 1 ? '' : 's'})`,
      call: (db) => listedIn(db, generations, batch.map((number) => registryDigest(key, number.phone))),
    },
    { name: `consents of the numbers (consentsOfNumbers: ${batch.length} numbers)`, call: (db) => consentsOfNumbers(db, batch.map((number) => ({ ...number, digest: phoneDigestOf(key, number.phone) }))) },
  ]
  if (fresh.length > 0) statements.push({ name: `past attempts locked (lockLawAttempts: ${fresh.length} capped numbers, none on file)`, call: (db) => lockLawAttempts(db, key, fresh, now) })
  if (capped.length > 0) {
    const attempts = capped.map((number) => ({ ...number, attempts: [{ at: now, subject: options.subject }], keepHours: 720 }))
    statements.push({ name: `attempts written (saveLawAttempts: ${capped.length} capped numbers)`, call: (db) => saveLawAttempts(db, key, attempts, now) })
  }
  const explained = []
  for (const statement of statements) {
    for (const sent of await statementsOf(statement.call)) explained.push({ name: statement.name, plans: await explainStatement(options.databaseUrl, sent, options.runs) })
  }
  return explained
}

/** The number of index scans (probes) PostgreSQL has counted on the registry's primary key. */
export async function registryProbes(db: Queryable): Promise<number> {
  const [row] = await db.query<{ scans: string }>(`SELECT coalesce(sum(idx_scan), 0) AS scans FROM pg_stat_user_indexes WHERE relname = 'registry_numbers'`)
  return Number(row!.scans)
}
