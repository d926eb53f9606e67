/** Idempotency keys: reserved before a trigger is recorded, completed by the statement that records it. */
import type { Queryable } from './database.ts'

export type Reservation =
  | { kind: 'reserved' }
  | { kind: 'replay'; response: unknown }
  | { kind: 'reused' }
  | { kind: 'in_use' }

/**
 * Reserves `key` for `token` (the id of the trigger to record) and a request
 * whose body hashes to `hash`, or says what the key already stands for. A key
 * whose 24 hours are over, or whose reservation was left by a process that
 * died or stalled (its lease ran out), counts as free.
 */
export async function reserveKey(
  db: Queryable,
  orgId: string,
  key: string,
  reservation: { hash: Buffer; token: string },
  now: number,
  leaseMs: number,
  keepMs: number,
): Promise<Reservation> {
  const rows = await db.query<{ reserved: boolean; request_hash: Buffer; status: 'in_flight' | 'done'; response: unknown }>(
    `WITH claimed AS (
       INSERT INTO idempotency_keys AS k (org_id, key, request_hash, token, status, locked_until, expires_at)
       VALUES ($1, $2, $3, $7, 'in_flight', $5, $6)
       ON CONFLICT (org_id, key) DO UPDATE
         SET request_hash = excluded.request_hash, token = excluded.token, status = 'in_flight', response = NULL,
             locked_until = excluded.locked_until, expires_at = excluded.expires_at
         WHERE k.expires_at <= $4 OR (k.status = 'in_flight' AND k.locked_until <= $4)
       RETURNING true AS reserved, request_hash, status, response)
     SELECT * FROM claimed
     UNION ALL
     SELECT false, request_hash, status, response FROM idempotency_keys
     WHERE org_id = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM claimed)`,
    [orgId, key, reservation.hash, new Date(now), new Date(now + leaseMs), new Date(now + keepMs), reservation.token],
  )
  const row = rows[0]
  // Another request holds it, reserved after this statement's snapshot (PostgreSQL): ask again in a moment.
  if (row === undefined) return { kind: 'in_use' }
  if (row.reserved) return { kind: 'reserved' }
  if (!Buffer.from(row.request_hash).equals(reservation.hash)) return { kind: 'reused' }
  return row.status === 'done' ? { kind: 'replay', response: row.response } : { kind: 'in_use' }
}

/** Gives a reservation up, if `token` still holds it: its request was not recorded, so the key may be used again. */
export async function releaseKey(db: Queryable, orgId: string, key: string, token: string): Promise<void> {
  await db.query(`DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2 AND token = $3 AND status = 'in_flight'`, [orgId, key, token])
}

/** Forgets keys whose 24 hours are over, a batch at a time. */
export async function deleteExpiredKeys(db: Queryable, now: number, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2) RETURNING key`,
    [new Date(now), limit],
  )
  return rows.length
}
