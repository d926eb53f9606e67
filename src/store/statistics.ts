/**
 * Planner statistics where nothing else keeps them. PGlite runs no
 * autovacuum, and a server may be run without it: there,
 * no ANALYZE ever runs, and each prepared statement keeps the plan it was
 * given on the nearly empty tables of a new database (see Queryable). Over
 * three rounds of 5,000 triggers end to end, the embedded service fell from
 * 523 to 437 to 385 triggers a second as its tables grew.
 */
import type { Database } from './database.ts'

/** Whether the service must analyze its tables itself: on PGlite, and on a server whose autovacuum is off. */
export async function keepsOwnStatistics(db: Database): Promise<boolean> {
  if (db.kind === 'pglite') return true
  const [row] = await db.query<{ autovacuum: string }>(`SELECT current_setting('autovacuum') AS autovacuum`)
  return row!.autovacuum === 'off'
}

/**
 * Analyzes the tables of the current schema that have doubled, and grown by
 * 8 pages, since they were last analyzed, and returns their names. An
 * ANALYZE has every prepared statement that reads a table planned again at
 * its next run (on every connection), with the table as it is now: a plan
 * goes wrong as a table grows by orders of magnitude, not by a tenth.
 * (Autovacuum's threshold, rows changed since, 50 and a tenth, which PGlite
 * does not count, analyzed the busiest tables every few seconds in a run
 * end to end, and their statements were planned again as often: in a pair
 * of runs side by side, PostgreSQL's CPU per trigger was 0.78 ms against
 * 0.60 without it.)
 *
 * A tenth of the default statistics target is enough for what the plans
 * read (table sizes, a status's few values, the keys' spread) and samples a
 * tenth of the rows: the pipeline's tables at 20,000 triggers took about
 * 0.7 s to analyze rather than 2.3 s, under load.
 */
export async function analyzeGrownTables(db: Database): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.oid::regclass::text AS name FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
       AND pg_relation_size(c.oid) / current_setting('block_size')::int > c.relpages * 2 + 8
     ORDER BY c.relname`,
  )
  const names = rows.map((row) => row.name)
  if (names.length > 0) {
    await db.transaction(async (tx) => {
      await tx.exec('SET LOCAL default_statistics_target = 10')
      await tx.exec(`ANALYZE ${names.join(', ')}`)
    })
  }
  return names
}

/** The tables a task's history is written to, which the history sweep deletes from (store/history.ts). */
export const HISTORY_TABLES = ['triggers', 'tasks', 'interactions', 'events', 'deliveries', 'delivery_attempts', 'provider_messages', 'contacts', 'contact_ids'] as const
export type HistoryTable = (typeof HISTORY_TABLES)[number]

/**
 * Where nothing vacuums: the daily and reach counts' changes, which are
 * written with every event and deleted every second, and `historyTable`, one the history
 * sweep has deleted many rows from, so that its space is used again rather
 * than its file growing for ever.
 */
export async function vacuumSweptTables(db: Database, historyTable: HistoryTable | undefined): Promise<void> {
  await db.exec(`VACUUM ${['daily_count_changes', 'reach_count_changes', ...(historyTable === undefined ? [] : [historyTable])].join(', ')}`)
}
