/** Webhook endpoints. Their secrets are read only to sign, or to show a new one once. */
import type { EventType, WebhookEndpoint } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface EndpointRow {
  id: string
  org_id: string
  url: string
  events: EventType[]
  enabled: boolean
  disabled_reason: string | null
  max_in_flight: number
  created_at: Date
  updated_at: Date
}

const COLUMNS = 'id, org_id, url, events, enabled, disabled_reason, max_in_flight, created_at, updated_at'

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  orgId: row.org_id,
  url: row.url,
  events: row.events,
  enabled: row.enabled,
  disabledReason: row.disabled_reason,
  maxInFlight: row.max_in_flight,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
})

export async function insertEndpoint(db: Queryable, endpoint: WebhookEndpoint, secret: string): Promise<void> {
  await db.query(
    `INSERT INTO webhook_endpoints (id, org_id, url, events, enabled, max_in_flight, secret, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [endpoint.id, endpoint.orgId, endpoint.url, endpoint.events, endpoint.enabled, endpoint.maxInFlight, secret, endpoint.createdAt, endpoint.updatedAt],
  )
}

export async function listEndpoints(db: Queryable, orgId: string): Promise<WebhookEndpoint[]> {
  const rows = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND deleted_at IS NULL ORDER BY id`,
    [orgId],
  )
  return rows.map(toEndpoint)
}

export async function findEndpoint(db: Queryable, orgId: string, id: string): Promise<WebhookEndpoint | undefined> {
  const rows = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [orgId, id],
  )
  return rows[0] && toEndpoint(rows[0])
}

/** Replaces url, events, enabled and the cap; enabling clears the reason the service disabled it for. */
export async function updateEndpoint(db: Queryable, endpoint: WebhookEndpoint): Promise<void> {
  await db.query(
    `UPDATE webhook_endpoints SET url = $3, events = $4, enabled = $5, disabled_reason = CASE WHEN $5 THEN NULL ELSE disabled_reason END,
            max_in_flight = $6, updated_at = $7
     WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [endpoint.orgId, endpoint.id, endpoint.url, endpoint.events, endpoint.enabled, endpoint.maxInFlight, endpoint.updatedAt],
  )
}

/** Deletes the endpoint (kept for the delivery log). */
export async function deleteEndpoint(tx: Queryable, orgId: string, id: string, now: number): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE webhook_endpoints SET deleted_at = $3, enabled = false, updated_at = $3
     WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id`,
    [orgId, id, new Date(now)],
  )
  return rows.length === 1
}

/**
 * A new secret; the current one keeps signing beside it until `previousUntil`.
 * Refused (false) while a previous rotation's secret still signs: a second
 * rotation would drop it before its receivers had moved on.
 */
export async function rotateSecret(db: Queryable, orgId: string, id: string, secret: string, previousUntil: number, now: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $4, secret = $3, updated_at = $5
     WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL AND (previous_secret_until IS NULL OR previous_secret_until <= $5)
     RETURNING id`,
    [orgId, id, secret, new Date(previousUntil), new Date(now)],
  )
  return rows.length === 1
}

/** The receiver said 410 Gone: nothing more is sent to it until its owner enables it again. */
export async function disableEndpoint(tx: Queryable, id: string, reason: string, now: number): Promise<void> {
  await tx.query(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND enabled`,
    [id, reason, new Date(now)],
  )
}

/** Endpoints the service disabled (after a 410) and nobody has enabled or deleted since: a table of configuration, a few rows an organization. */
export async function disabledEndpointCount(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhook_endpoints WHERE NOT enabled AND deleted_at IS NULL AND disabled_reason IS NOT NULL',
  )
  return row!.n
}
