/** An organization's callback numbers (migration 045): each answered through one of its campaigns. */
import type { Provider } from '../domain/campaignSettings.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

export interface CallbackNumber {
  number: string
  provider: Provider
  campaignId: string
  createdAt: string
}

interface CallbackNumberRow {
  number: string
  provider: Provider
  campaign_id: string
  created_at: Date
}

const toCallbackNumber = (row: CallbackNumberRow): CallbackNumber => ({ number: row.number, provider: row.provider, campaignId: row.campaign_id, createdAt: iso(row.created_at) })

export async function listCallbackNumbers(db: Queryable, orgId: string): Promise<CallbackNumber[]> {
  const rows = await db.query<CallbackNumberRow>('SELECT number, provider, campaign_id, created_at FROM callback_numbers WHERE org_id = $1 ORDER BY number COLLATE "C", provider', [orgId])
  return rows.map(toCallbackNumber)
}

/**
 * Makes `numbers` the organization's callback numbers, in one statement: the
 * others it had are removed, one it had keeps the time it was first named.
 * When another organization has one of them, those are returned under
 * `taken`, and the caller's transaction is to be rolled back.
 */
export async function replaceCallbackNumbers(
  db: Queryable,
  orgId: string,
  numbers: readonly { number: string; provider: Provider; campaignId: string }[],
  now: number,
): Promise<{ numbers: CallbackNumber[] } | { taken: string[] }> {
  const rows = await db.query<CallbackNumberRow>(
    `WITH wanted AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) AS w(provider, number, campaign_id)
     ), removed AS (
       DELETE FROM callback_numbers c WHERE c.org_id = $1 AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.provider = c.provider AND w.number = c.number)
     )
     INSERT INTO callback_numbers (provider, number, org_id, campaign_id, created_at)
     SELECT provider, number, $1, campaign_id, $5 FROM wanted
     ON CONFLICT (provider, number) DO UPDATE SET campaign_id = excluded.campaign_id WHERE callback_numbers.org_id = excluded.org_id
     RETURNING number, provider, campaign_id, created_at`,
    [orgId, numbers.map((entry) => entry.provider), numbers.map((entry) => entry.number), numbers.map((entry) => entry.campaignId), new Date(now)],
  )
  // A number another organization has is left as it is by the conflict's WHERE, and not returned: the caller's transaction is to be rolled back.
  const kept = new Set(rows.map((row) => `${row.provider} ${row.number}`))
  const lost = numbers.filter((entry) => !kept.has(`${entry.provider} ${entry.number}`)).map((entry) => entry.number)
  if (lost.length > 0) return { taken: lost }
  const byNumber = (a: CallbackNumber, b: CallbackNumber) => (a.number < b.number ? -1 : a.number > b.number ? 1 : a.provider < b.provider ? -1 : 1)
  return { numbers: rows.map(toCallbackNumber).sort(byNumber) }
}
