import type { Organization } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface OrganizationRow {
  id: string
  name: string
  created_at: Date
}

const toOrganization = (row: OrganizationRow): Organization => ({ id: row.id, name: row.name, createdAt: iso(row.created_at) })

export async function insertOrganization(db: Queryable, org: Organization): Promise<void> {
  await db.query('INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)', [org.id, org.name, org.createdAt])
}

export async function findOrganization(db: Queryable, id: string): Promise<Organization | undefined> {
  const rows = await db.query<OrganizationRow>('SELECT id, name, created_at FROM organizations WHERE id = $1', [id])
  return rows[0] && toOrganization(rows[0])
}

/** The newest organizations first, at most `limit`. */
export async function listOrganizations(db: Queryable, limit: number): Promise<Organization[]> {
  const rows = await db.query<OrganizationRow>('SELECT id, name, created_at FROM organizations ORDER BY created_at DESC, id DESC LIMIT $1', [limit])
  return rows.map(toOrganization)
}
