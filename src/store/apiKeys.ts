import type { ApiKey, Scope } from '../domain/types.ts'
import type { Queryable } from './database.ts'
import { iso, isoOrNull } from './rows.ts'

interface ApiKeyRow {
  id: string
  org_id: string
  name: string
  prefix: string
  scopes: Scope[]
  created_at: Date
  revoked_at: Date | null
}

const COLUMNS = 'id, org_id, name, prefix, scopes, created_at, revoked_at'

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  prefix: row.prefix,
  scopes: row.scopes,
  createdAt: iso(row.created_at),
  revokedAt: isoOrNull(row.revoked_at),
})

export async function insertApiKey(db: Queryable, key: ApiKey, keyHash: Buffer): Promise<void> {
  await db.query(
    `INSERT INTO api_keys (id, org_id, name, prefix, key_hash, scopes, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [key.id, key.orgId, key.name, key.prefix, keyHash, key.scopes, key.createdAt],
  )
}

/** The live (unrevoked) key with this prefix, with the hash to compare the presented key against. */
export async function findLiveApiKeyByPrefix(
  db: Queryable,
  prefix: string,
): Promise<{ key: ApiKey; keyHash: Buffer } | undefined> {
  const rows = await db.query<ApiKeyRow & { key_hash: Uint8Array }>(
    `SELECT ${COLUMNS}, key_hash FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL`,
    [prefix],
  )
  const row = rows[0]
  return row && { key: toApiKey(row), keyHash: Buffer.from(row.key_hash) }
}

export async function isApiKeyLive(db: Queryable, keyId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL', [keyId])
  return rows.length > 0
}

export async function findApiKey(db: Queryable, orgId: string, keyId: string): Promise<ApiKey | undefined> {
  const rows = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE org_id = $1 AND id = $2`, [orgId, keyId])
  return rows[0] && toApiKey(rows[0])
}

export async function listApiKeys(db: Queryable, orgId: string): Promise<ApiKey[]> {
  const rows = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE org_id = $1 ORDER BY id`, [orgId])
  return rows.map(toApiKey)
}

/** Revokes the key (keeping the first revocation time); undefined when the organization has no such key. */
export async function revokeApiKey(db: Queryable, orgId: string, keyId: string, now: string): Promise<ApiKey | undefined> {
  const rows = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
     WHERE org_id = $1 AND id = $2
     RETURNING ${COLUMNS}`,
    [orgId, keyId, now],
  )
  return rows[0] && toApiKey(rows[0])
}
