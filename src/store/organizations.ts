import type { Organization } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface OrganizationRow {
  id: string
  name: string
  created_at: Date
  rate_limit_per_s: number | null
  rate_limit_burst: number | null
  retention_days: number | null
  contact_cap_per_24h: number | null
  contact_cap_per_local_day: number | null
  callback_window_days: number
}

const COLUMNS = 'id, name, created_at, rate_limit_per_s, rate_limit_burst, retention_days, contact_cap_per_24h, contact_cap_per_local_day, callback_window_days'

const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  name: row.name,
  createdAt: iso(row.created_at),
  rateLimit: { perSecond: row.rate_limit_per_s, burst: row.rate_limit_burst },
  retentionDays: row.retention_days,
  contactCap: { per_24h: row.contact_cap_per_24h, per_local_day: row.contact_cap_per_local_day },
  callbackWindowDays: row.callback_window_days,
})

export async function insertOrganization(db: Queryable, org: Organization): Promise<void> {
  await db.query(`INSERT INTO organizations (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
    org.id,
    org.name,
    org.createdAt,
    org.rateLimit.perSecond,
    org.rateLimit.burst,
    org.retentionDays,
    org.contactCap.per_24h,
    org.contactCap.per_local_day,
    org.callbackWindowDays,
  ])
}

export async function findOrganization(db: Queryable, id: string): Promise<Organization | undefined> {
  const rows = await db.query<OrganizationRow>(`SELECT ${COLUMNS} FROM organizations WHERE id = $1`, [id])
  return rows[0] && toOrganization(rows[0])
}

/**
 * Changes what is given of an organization; undefined when there is none. A
 * new retention has the history sweep look at it again at once: its history
 * may be due sooner. A new cap applies from the dispatchers' next batch.
 */
export async function updateOrganization(
  db: Queryable,
  id: string,
  changes: { name?: string; rateLimit?: Organization['rateLimit']; retentionDays?: number; contactCap?: Organization['contactCap']; callbackWindowDays?: number },
): Promise<Organization | undefined> {
  const rows = await db.query<OrganizationRow>(
    `UPDATE organizations SET name = COALESCE($2, name),
       rate_limit_per_s = CASE WHEN $3 THEN $4::int ELSE rate_limit_per_s END,
       rate_limit_burst = CASE WHEN $3 THEN $5::int ELSE rate_limit_burst END,
       retention_days = CASE WHEN $6 THEN $7::int ELSE retention_days END,
       history_due_at = CASE WHEN $6 THEN NULL ELSE history_due_at END,
       contact_cap_per_24h = CASE WHEN $8 THEN $9::int ELSE contact_cap_per_24h END,
       contact_cap_per_local_day = CASE WHEN $8 THEN $10::int ELSE contact_cap_per_local_day END,
       callback_window_days = COALESCE($11::int, callback_window_days)
     WHERE id = $1
     RETURNING ${COLUMNS}`,
    [
      id,
      changes.name ?? null,
      changes.rateLimit !== undefined,
      changes.rateLimit?.perSecond ?? null,
      changes.rateLimit?.burst ?? null,
      changes.retentionDays !== undefined,
      changes.retentionDays ?? null,
      changes.contactCap !== undefined,
      changes.contactCap?.per_24h ?? null,
      changes.contactCap?.per_local_day ?? null,
      changes.callbackWindowDays ?? null,
    ],
  )
  return rows[0] && toOrganization(rows[0])
}

/** The newest organizations first, at most `limit`. */
export async function listOrganizations(db: Queryable, limit: number): Promise<Organization[]> {
  const rows = await db.query<OrganizationRow>(`SELECT ${COLUMNS} FROM organizations ORDER BY created_at DESC, id DESC LIMIT $1`, [limit])
  return rows.map(toOrganization)
}
