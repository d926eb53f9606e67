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
 * A statement of the hot path, named so that a server connection parses and
 * plans it once and then only binds parameters to it.
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
    close: () => pool.end(),
  }
}

async function openPglite(dataDir: string): Promise<Database> {
  if (dataDir !== 'memory://') await mkdir(dataDir, { recursive: true })
  const db = await PGlite.create(dataDir)
  const runOn = (session: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    // PGlite has no named statements (SQL EXECUTE would need its parameters
    // written into the text), so it parses and plans the text each time.
    async query<Row>(sql: string | PreparedStatement, params?: readonly unknown[]) {
      const result = await session.query<Row>(typeof sql === 'string' ? sql : sql.text, params as unknown[] | undefined)
      return result.rows
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
    close: () => db.close(),
  }
}
