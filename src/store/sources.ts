import type { Source } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface SourceRow {
  org_id: string
  name: string
  id_types: string[]
  contact: Source['contact']
  required_context: string[]
  created_at: Date
  updated_at: Date
}

const toSource = (row: SourceRow): Source => ({
  orgId: row.org_id,
  name: row.name,
  idTypes: row.id_types,
  contact: row.contact,
  requiredContext: row.required_context,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
})

/** False when the organization already has a source of that name. */
export async function insertSource(db: Queryable, source: Source): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO sources (org_id, name, id_types, contact, required_context, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT DO NOTHING RETURNING name`,
    [source.orgId, source.name, source.idTypes, source.contact, source.requiredContext, source.createdAt, source.updatedAt],
  )
  return rows.length === 1
}

export async function updateSource(db: Queryable, source: Source): Promise<void> {
  await db.query(
    `UPDATE sources SET id_types = $3, contact = $4, required_context = $5, updated_at = $6 WHERE org_id = $1 AND name = $2`,
    [source.orgId, source.name, source.idTypes, source.contact, source.requiredContext, source.updatedAt],
  )
}

export async function deleteSource(db: Queryable, orgId: string, name: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM sources WHERE org_id = $1 AND name = $2 RETURNING name', [orgId, name])
  return rows.length === 1
}

export async function listSources(db: Queryable, orgId: string): Promise<Source[]> {
  const rows = await db.query<SourceRow>(
    'SELECT org_id, name, id_types, contact, required_context, created_at, updated_at FROM sources WHERE org_id = $1 ORDER BY name',
    [orgId],
  )
  return rows.map(toSource)
}
