/**
 * The database port: the few operations the store needs, with one adapter for
 * a PostgreSQL server (`pg`) and one for the embedded PGlite. Both run the same
 * SQL; nothing above the store layer knows which one it has.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'

/**
 * A statement of the hot path, named so that the database parses and plans
 * it once and then only binds parameters to it. On PGlite its parameters must
 * be text.
 */
export interface PreparedStatement {
  name: string
  text: string
}

export interface Queryable {
  /** Runs one parameterized statement and returns its rows. */
  query<Row>(sql: string | PreparedStatement, params?: readonly unknown[]): Promise<Row[]>
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
   * Calls `onPayload` with each notification sent on `channel` (NOTIFY) until
   * the returned function is called. On a server it holds a connection of its
   * own, made again after a loss; notifications sent while it is down are lost.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

export interface DatabaseOptions {
  databaseUrl: string | undefined
  /** The embedded database lives in `<dataDir>/pglite`; `memory://` keeps it in memory. */
  dataDir: string
  poolSize?: number
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl === undefined
    ? openPglite(options.dataDir === 'memory://' ? options.dataDir : path.join(options.dataDir, 'pglite'))
    : openPostgres(options.databaseUrl, options.poolSize ?? 10)
}

function openPostgres(connectionString: string, poolSize: number): Database {
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
  const runOn = (client: pg.Pool | pg.PoolClient): Queryable => ({
    async query<Row>(sql: string | PreparedStatement, params?: readonly unknown[]) {
      const values = params as unknown[] | undefined
      const result = typeof sql === 'string' ? await client.query(sql, values) : await client.query({ ...sql, values })
      return result.rows as Row[]
    },
    async exec(sql: string) {
      await client.query(sql)
    },
  })
  return {
    kind: 'postgres',
    concurrency: poolSize,
    ...runOn(pool),
    async transaction(work) {
      const client = await pool.connect()
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
    listen: (channel, onPayload) => listenOnPostgres(connectionString, channel, onPayload),
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

async function openPglite(dataDir: string): Promise<Database> {
  if (dataDir !== 'memory://') await mkdir(dataDir, { recursive: true })
  const db = await PGlite.create(dataDir)
  // Statements are prepared once for the session, whatever transaction they
  // were first run in: PREPARE is not undone by a rollback.
  const prepared = new Set<string>()
  const runOn = (session: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<Row>(sql: string | PreparedStatement, params?: readonly unknown[]) {
      if (typeof sql === 'string') return (await session.query<Row>(sql, params as unknown[] | undefined)).rows
      // PGlite's protocol path has no named statements, so a statement of the
      // hot path is PREPAREd in SQL and run by EXECUTE, which takes its
      // parameters only as literals; planning it each time would cost more
      // than the work it plans.
      if (!prepared.has(sql.name)) {
        await session.exec(`PREPARE ${sql.name} AS ${sql.text}`)
        prepared.add(sql.name)
      }
      return (await session.query<Row>(`EXECUTE ${sql.name}(${(params ?? []).map(dollarQuoted).join(', ')})`)).rows
    },
    async exec(sql: string) {
      await session.exec(sql)
    },
  })
  return {
    kind: 'pglite',
    concurrency: 1,
    ...runOn(db),
    // PGlite queues statements and transactions on its one session itself.
    transaction: (work) => db.transaction((tx) => work(runOn(tx))),
    listen: async (channel, onPayload) => db.listen(channel, onPayload),
    close: () => db.close(),
  }
}

/**
 * A text parameter as a dollar-quoted literal, which has no escapes whatever
 * the session's settings: its tag is chosen so that the first place it
 * appears after the opening one is the closing one (not inside the value,
 * nor across the value's end).
 */
function dollarQuoted(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError('parameters of prepared statements on PGlite must be text')
  let tag = '$p$'
  for (let n = 0; (value + tag).indexOf(tag) !== value.length; n++) tag = `$p${n}$`
  return tag + value + tag
}
