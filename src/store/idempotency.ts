/** Idempotency keys: reserved before a trigger is recorded, completed by the statement that records it. */
import type { Queryable } from './database.ts'

export type Reservation =
  | { kind: 'reserved' }
  | { kind: 'replay'; response: unknown }
  | { kind: 'reused' }
  | { kind: 'in_use' }

/** A key to reserve, for the trigger to be recorded under `token` and a request whose body hashes to `hash`. */
export interface KeyReservation {
  key: string
  hash: Buffer
  token: string
}

/**
 * Reserves each key (distinct keys) for its token and request, in one
 * statement, or says what the key already stands for. A key whose 24 hours
 * are over, or whose reservation was left by a process that died or stalled
 * (its lease ran out), counts as free. Answers in the order given.
 */
export async function reserveKeys(
  db: Queryable,
  orgId: string,
  reservations: readonly KeyReservation[],
  now: number,
  leaseMs: number,
  keepMs: number,
): Promise<Reservation[]> {
  const rows = await db.query<{ key: string; reserved: boolean; request_hash: Buffer; status: 'in_flight' | 'done'; response: unknown }>(
    // In key order, so that two requests reserving overlapping keys never wait for each other in a circle.
    `WITH input AS (
       SELECT key, decode(hash, 'hex') AS request_hash, token FROM unnest($2::text[], $3::text[], $4::text[]) AS i(key, hash, token)
     ), claimed AS (
       INSERT INTO idempotency_keys AS k (org_id, key, request_hash, token, status, locked_until, expires_at)
       SELECT $1, key, request_hash, token, 'in_flight', $6, $7 FROM input ORDER BY key
       ON CONFLICT (org_id, key) DO UPDATE
         SET request_hash = excluded.request_hash, token = excluded.token, status = 'in_flight', response = NULL,
             locked_until = excluded.locked_until, expires_at = excluded.expires_at
         WHERE k.expires_at <= $5 OR (k.status = 'in_flight' AND k.locked_until <= $5)
       RETURNING k.key, true AS reserved, request_hash, status, response)
     SELECT * FROM claimed
     UNION ALL
     SELECT k.key, false, k.request_hash, k.status, k.response FROM idempotency_keys k
     WHERE k.org_id = $1 AND k.key = ANY($2::text[]) AND k.key NOT IN (SELECT key FROM claimed)`,
    [
      orgId,
      reservations.map((r) => r.key),
      reservations.map((r) => r.hash.toString('hex')),
      reservations.map((r) => r.token),
      new Date(now),
      new Date(now + leaseMs),
      new Date(now + keepMs),
    ],
  )
  const byKey = new Map(rows.map((row) => [row.key, row]))
  return reservations.map(({ key, hash }): Reservation => {
    const row = byKey.get(key)
    // Another request holds it, reserved after this statement's snapshot (PostgreSQL): ask again in a moment.
    if (row === undefined) return { kind: 'in_use' }
    if (row.reserved) return { kind: 'reserved' }
    if (!Buffer.from(row.request_hash).equals(hash)) return { kind: 'reused' }
    return row.status === 'done' ? { kind: 'replay', response: row.response } : { kind: 'in_use' }
  })
}

/** Gives reservations up, those that their tokens still hold: their triggers were not recorded, so the keys may be used again. */
export async function releaseKeys(db: Queryable, orgId: string, reservations: readonly { key: string; token: string }[]): Promise<void> {
  if (reservations.length === 0) return
  await db.query(
    `DELETE FROM idempotency_keys k USING unnest($2::text[], $3::text[]) AS r(key, token)
     WHERE k.org_id = $1 AND k.key = r.key AND k.token = r.token AND k.status = 'in_flight'`,
    [orgId, reservations.map((r) => r.key), reservations.map((r) => r.token)],
  )
}

/** Forgets keys whose 24 hours are over, a batch at a time. */
export async function deleteExpiredKeys(db: Queryable, now: number, limit: number): Promise<number> {
  const rows = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2) RETURNING key`,
    [new Date(now), limit],
  )
  return rows.length
}
