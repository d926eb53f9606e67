/**
 * Counts kept as changes (daily_counts, reach_counts): each statement that
 * writes events adds its counts as rows of their own to a `*_changes` table,
 * so that concurrent settlements never meet on a counter's row, and the
 * history sweep moves them into the counts table, added to the counts there.
 */
import type { Queryable } from './database.ts'

export interface CountedTable {
  changes: string
  counts: string
  /** The counts table's primary key. */
  key: readonly string[]
  /** The columns added up. */
  sums: readonly string[]
  /** A statement that also adds the moved rows (the CTE `moved`) to a coarser table, in the same statement. */
  alsoAdd?: string
}

/**
 * A mover of up to `limit` changes of `table` into its counts, answering how
 * many it moved. Two sweeps moving at once never move one twice: the second
 * waits on the rows the first deletes, and then finds them gone.
 */
export function changesMover(table: CountedTable): (db: Queryable, limit: number) => Promise<number> {
  const key = table.key.join(', ')
  const sql = `WITH moved AS (
       DELETE FROM ${table.changes} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table.changes} LIMIT $1))
       RETURNING *
     ), added AS (
       INSERT INTO ${table.counts} AS t (${key}, ${table.sums.join(', ')})
       SELECT ${key}, ${table.sums.map((column) => `sum(${column})`).join(', ')}
       FROM moved GROUP BY ${key}
       ON CONFLICT (${key})
       DO UPDATE SET ${table.sums.map((column) => `${column} = t.${column} + excluded.${column}`).join(', ')}
     )${table.alsoAdd === undefined ? '' : `, also_added AS (${table.alsoAdd})`}
     SELECT count(*) AS moved FROM moved`
  return async (db, limit) => Number((await db.query<{ moved: string }>(sql, [limit]))[0]!.moved)
}
