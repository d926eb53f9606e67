/**
 * The distinct values of a partial index's first column, one probe of the
 * index each: a loose index scan, which PostgreSQL (15, and PGlite's) does
 * not plan by itself.
 *
 * The workers read each queue (due tasks, running interactions, pending
 * deliveries) campaign by campaign or endpoint by endpoint, from a partial
 * index led by that id, so that a paused campaign's or a held endpoint's
 * queue is never read. Walked from the campaigns or endpoints table, that was
 * one probe for every campaign or endpoint of every organization, queued or
 * not: a cost that grew with the organizations rather than with the work
 * (202 campaigns, nothing due: nextDueAt 0.16 ms, 0.02 ms this way; each
 * worker runs such statements several times a round).
 */

/**
 * A recursive CTE named `name`, of one column `id`: the distinct `column`
 * values of `table`'s rows matching `where` (which a partial index led by
 * `column` covers), in order, and a NULL row last. Used after `WITH RECURSIVE`
 * and joined on its id, which drops the NULL.
 */
export function distinctKeys(name: string, index: { table: string; column: string; where: string }): string {
  const { table, column, where } = index
  return `${name}(id) AS (
    (SELECT ${column} FROM ${table} WHERE ${where} ORDER BY ${column} LIMIT 1)
    UNION ALL
    SELECT (SELECT next.${column} FROM ${table} next WHERE ${where} AND next.${column} > previous.id ORDER BY next.${column} LIMIT 1)
    FROM ${name} previous WHERE previous.id IS NOT NULL)`
}
