/**
 * The database port: the few operations the store needs, with one adapter for
 * a PostgreSQL server (`pg`) and one for the embedded PGlite. Both run the same
 * SQL; nothing above the store layer knows which one it has.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { from as copyFrom } from 'pg-copy-streams'
import { PGlite, types } from '@electric-sql/pglite'
import pg from 'pg'
import { type DataDirLock, lockDataDir } from './dataDirLock.ts'

/**
 * Every statement is prepared: parsed and planned once per connection (or,
 * on PGlite, once per session) and then only bound to its parameters.
 * Planning the pipeline's statements anew at each call took about an eighth
 * of PostgreSQL's time per trigger end to end (pg_stat_statements'
 * total_plan_time). The store's statements are fixed texts (but for the task
 * list's, one per combination of the filters given, a few hundred at most),
 * so their number, and the prepared statements a connection keeps, stays
 * small.
 *
 * A prepared statement keeps the plan it was given when its tables were as
 * they were then, often nearly empty (a new database; one where nothing runs
 * ANALYZE), and a plan that was cheap then may scan whole what has grown
 * since. Rows named by id are therefore looked up by primary key whatever
 * else is checked on them: a status that a partial index is defined by (the
 * pending tasks and deliveries, the running interactions) is checked as an
 * expression, `status || ''`, so that the planner cannot read that index whole
 * instead. Planned while it held a few rows, it did, and went on doing so: the
 * record of 30 deliveries' attempts read every pending delivery, and a
 * dispatch of 256 tasks every due task, at each call. A table that was
 * nearly empty when a connection planned a statement can still be scanned
 * whole by that connection's plan, until an ANALYZE (autovacuum runs one as
 * a table grows) has its statements planned again.
 */
export interface Queryable {
  /** Runs one parameterized statement and returns its rows. */
  query<Row>(sql: string, params?: readonly unknown[]): Promise<Row[]>
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>
}

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite'
  /**
   * How many statements the database can usefully run at once: the pool size
   * on a server, 1 on PGlite, which is a single session.
   */
  readonly concurrency: number
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Runs `COPY <target> FROM STDIN` with `chunks` of COPY's text format (a
   * row a line, columns tab-separated), read one after the other: a bulk
   * load of millions of rows a minute, where INSERTs of parameter arrays
   * manage a fraction of it.
   */
  copyIn(target: string, chunks: Iterable<string>): Promise<void>
  /** A server's pool of connections as it is now: all, idle, and the queries waiting for one. Undefined on PGlite, a single session. */
  readonly poolUse?: () => { total: number; idle: number; waiting: number }
  /**
   * Calls `onPayload` with each notification sent on `channel` (NOTIFY) until
   * the returned function is called. On a server it holds a connection of its
   * own, made again after a loss; notifications sent while it is down are lost.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>
  /**
   * How this database tells a process of work another wrote: `in_process`
   * (PGlite: one process), `listening` (LISTEN on a server connection), or
   * `polling` (behind a transaction-mode pooler with no direct connection:
   * listen() hears nothing, and workers find work at their polls).
   */
  readonly notifications: 'in_process' | 'listening' | 'polling'
  /** The embedded database's lock on its data directory (none in memory or on a server), released by close(). */
  readonly dataDirLock?: DataDirLock
  /** The embedded database's data directory as a tarball, what openDatabase's `loadDataDir` starts from (none on a server). */
  dumpDataDir?(): Promise<Blob>
  close(): Promise<void>
}

/**
 * How DATABASE_URL reaches PostgreSQL: straight or through a pooler in
 * session mode (a connection is one session), or through a pooler in
 * transaction mode (each transaction may run on another server session).
 */
export type PoolMode = 'session' | 'transaction'

export interface DatabaseOptions {
  databaseUrl: string | undefined
  /** The embedded database lives in `<dataDir>/pglite`; `memory://` keeps it in memory. */
  dataDir: string
  poolSize?: number
  poolMode?: PoolMode
  /** With poolMode `transaction`: a connection past the pooler for LISTEN; without one, no LISTEN. */
  databaseDirectUrl?: string
  /**
   * What this process does (`serve`, `org create`), recorded in the data
   * directory's lock and named to a process refused it; by default the name
   * of the script that runs.
   */
  command?: string
  /**
   * With `memory://`: the data directory to start from, a tarball made by
   * another in-memory database's dumpDataDir, in place of the empty one PGlite
   * makes (initdb). On this machine loading one takes 0.35 s and making one
   * 1.5 s: the tests start every embedded database from a migrated copy.
   */
  loadDataDir?: Blob
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl !== undefined) {
    return openPostgres(options.databaseUrl, { poolSize: options.poolSize ?? 10, poolMode: options.poolMode ?? 'session', directUrl: options.databaseDirectUrl })
  }
  if (options.dataDir === 'memory://') return openPglite(options.dataDir, undefined, options.loadDataDir)
  // PGlite takes no lock on its directory, and two processes on it lose each other's writes (see dataDirLock.ts).
  // Taken before anything there is read or written, so that a process refused it changes nothing.
  const lock = await lockDataDir(options.dataDir, options.command ?? path.basename(process.argv[1] ?? process.argv0))
  try {
    return await openPglite(path.join(options.dataDir, 'pglite'), lock)
  } catch (error) {
    lock.release()
    throw error
  }
}

/**
 * The service's sessions run without JIT compilation. It is only ever worth
 * it for statements that read many rows, which none of the service's should;
 * it was chosen by the cost of a few statements' custom plans (the first five
 * runs of a prepared statement on a connection), whose estimates on a large
 * history were far above what they read: each cost about 170 ms of
 * compiling for 1 ms of work. Set by a statement as each connection opens,
 * not in the startup packet's `options`: PgBouncer refuses a connection whose
 * options set a parameter it does not track (1.20 and later) or that has
 * options at all (before). Behind a transaction-mode pooler a session setting
 * would hold for whichever server session ran it: there the pooler sets it on
 * each server connection it makes (PgBouncer's `connect_query`, docs/deploying.md).
 */
const SESSION_SETTINGS = 'SET jit = off'

/**
 * Behind a transaction-mode pooler (poolMode `transaction`) nothing may rely
 * on the session: each transaction, and each statement outside one, may run
 * on another server session. Statements are then sent unnamed (parsed and
 * planned at each run: about an eighth more of PostgreSQL's time per trigger,
 * the price of the pooler's mode), the session is not set, and LISTEN goes
 * through `directUrl` or not at all.
 */
function openPostgres(connectionString: string, options: { poolSize: number; poolMode: PoolMode; directUrl: string | undefined }): Database {
  const { poolSize, poolMode } = options
  const sessionKept = poolMode === 'session'
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    // A half-dead connection must fail its statements rather than hold them forever.
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
  })
  // An idle client that loses its connection must not crash the process; the
  // pool replaces it and the next query reports any lasting problem.
  pool.on('error', () => {})
  const withSessionSet = new WeakSet<pg.PoolClient>()
  /** A connection of the pool, its session set as the service's before its first use. */
  const checkOut = async (): Promise<pg.PoolClient> => {
    const client = await pool.connect()
    if (!sessionKept || withSessionSet.has(client)) return client
    try {
      await client.query(SESSION_SETTINGS)
    } catch (error) {
      client.release(error as Error)
      throw error
    }
    withSessionSet.add(client)
    return client
  }
  /** `work` on a connection of the pool, outside any transaction of the caller's. */
  const onConnection = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await checkOut()
    try {
      return await work(client)
    } finally {
      client.release()
    }
  }
  const statements = new StatementNames()
  const listenUrl = sessionKept ? connectionString : options.directUrl
  const runOn = (client: pg.PoolClient): Queryable => ({
    async query<Row>(sql: string, params?: readonly unknown[]) {
      // pg parses a named statement on each connection the first time the connection runs it.
      const name = sessionKept ? statements.of(sql) : undefined
      const result = await client.query({ name, text: sql, values: params as unknown[] | undefined })
      return result.rows as Row[]
    },
    async exec(sql: string) {
      await client.query(sql)
    },
  })
  return {
    kind: 'postgres',
    concurrency: poolSize,
    query: (sql, params) => onConnection((client) => runOn(client).query(sql, params)),
    exec: (sql) => onConnection((client) => runOn(client).exec(sql)),
    async transaction(work) {
      const client = await checkOut()
      try {
        await client.query('BEGIN')
        const result = await work(runOn(client))
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        throw error
      } finally {
        client.release()
      }
    },
    copyIn: (target, chunks) =>
      onConnection(async (client) => {
        const stream = client.query(copyFrom(`COPY ${target} FROM STDIN`))
        await pipeline(Readable.from(chunks), stream)
      }),
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    listen: async (channel, onPayload) => {
      if (listenUrl === undefined) return async () => {}
      return listenOnPostgres(listenUrl, channel, onPayload)
    },
    notifications: listenUrl === undefined ? 'polling' : 'listening',
    close: () => pool.end(),
  }
}

/** How long a lost listening connection waits before it is made again. */
const RELISTEN_AFTER_MS = 1_000

async function listenOnPostgres(connectionString: string, channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
  let client: pg.Client | undefined
  let stopped = false
  let retry: NodeJS.Timeout | undefined
  const connect = async () => {
    const next = new pg.Client({ connectionString, keepAlive: true })
    next.on('notification', (message) => {
      if (message.channel === channel) onPayload(message.payload ?? '')
    })
    // A lost connection is made again; meanwhile the workers' poll finds the work.
    next.on('error', () => {})
    next.on('end', () => {
      if (!stopped && client === next) retry = setTimeout(() => void connect().catch(() => {}), RELISTEN_AFTER_MS)
    })
    client = next
    try {
      await next.connect()
      await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    } catch (error) {
      void next.end().catch(() => {})
      throw error
    }
  }
  await connect()
  return async () => {
    stopped = true
    clearTimeout(retry)
    await client?.end().catch(() => {})
  }
}

async function openPglite(dataDir: string, lock: DataDirLock | undefined, loadDataDir?: Blob): Promise<Database> {
  if (dataDir !== 'memory://') await mkdir(dataDir, { recursive: true })
  const db = await PGlite.create(dataDir, { loadDataDir })
  // Statements are prepared once for the session, whatever transaction they
  // were first run in: PREPARE is not undone by a rollback.
  const statements = new StatementNames()
  const preparation = new Map<string, 'under way' | 'done'>()
  const runOn = (session: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<Row>(sql: string, params?: readonly unknown[]) {
      // PGlite's protocol path has no named statements, so a statement is
      // PREPAREd in SQL and run by EXECUTE, which takes its parameters only
      // as literals.
      const name = statements.of(sql)
      const state = preparation.get(name)
      // Another caller's PREPARE may be queued behind a transaction that is waiting for this very statement: it is not waited for.
      if (state === 'under way') return (await session.query<Row>(sql, params as unknown[] | undefined)).rows
      if (state === undefined) {
        preparation.set(name, 'under way')
        try {
          await session.exec(`PREPARE ${name} AS ${sql}`)
        } catch (error) {
          preparation.delete(name)
          throw error
        }
        preparation.set(name, 'done')
      }
      const values = params === undefined || params.length === 0 ? '' : `(${params.map(literal).join(', ')})`
      await nextTurnOfTheEventLoop()
      return (await session.query<Row>(`EXECUTE ${name}${values}`)).rows
    },
    async exec(sql: string) {
      await nextTurnOfTheEventLoop()
      await session.exec(sql)
    },
  })
  return {
    kind: 'pglite',
    concurrency: 1,
    ...runOn(db),
    // PGlite queues statements and transactions on its one session itself.
    transaction: (work) => db.transaction((tx) => work(runOn(tx))),
    // PGlite reads COPY's data from a blob it is handed, in place of a stream.
    copyIn: async (target, chunks) => {
      await nextTurnOfTheEventLoop()
      await db.query(`COPY ${target} FROM '/dev/blob'`, [], { blob: new Blob([...chunks]) })
    },
    listen: async (channel, onPayload) => db.listen(channel, onPayload),
    notifications: 'in_process',
    dataDirLock: lock,
    async dumpDataDir() {
      // What the buffers hold is written to the files first, so that the tarball holds every committed row.
      await db.exec('CHECKPOINT')
      return db.dumpDataDir('none')
    },
    async close() {
      try {
        await db.close()
      } finally {
        lock?.release()
      }
    },
  }
}

/**
 * PGlite runs each statement synchronously in this thread, and the statements
 * queued on its session follow one another through promise callbacks alone,
 * so without a break they run in one turn of the event loop, which accepts
 * one new connection per turn. Under 32 clients, turns of about 40 ms let a
 * new connection wait for every one queued before it: the first request of a
 * client arriving just after 32 others waited 1.3 s. A statement now waits for
 * the next turn, after the poll for I/O.
 */
function nextTurnOfTheEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** A name for each statement text, the same for the life of the process. */
class StatementNames {
  readonly #names = new Map<string, string>()

  of(sql: string): string {
    let name = this.#names.get(sql)
    if (name === undefined) this.#names.set(sql, (name = `s${this.#names.size + 1}`))
    return name
  }
}

/**
 * A parameter as a literal of EXECUTE, written as pg writes parameters for
 * the wire (arrays as array literals, dates in ISO 8601, bytes in hex,
 * objects as JSON); the prepared statement's parameter type reads it.
 */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  return dollarQuoted(Array.isArray(value) ? types.arraySerializer(value, parameterText, 0) : parameterText(value))
}

function parameterText(value: unknown): string {
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array) return `\\x${Buffer.from(value).toString('hex')}`
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

/**
 * A text as a dollar-quoted literal, which has no escapes whatever
 * the session's settings: its tag is chosen so that the first place it
 * appears after the opening one is the closing one (not inside the value,
 * nor across the value's end).
 */
function dollarQuoted(value: string): string {
  let tag = '$p$'
  for (let n = 0; (value + tag).indexOf(tag) !== value.length; n++) tag = `$p${n}$`
  return tag + value + tag
}
