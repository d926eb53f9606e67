/**
 * The operator's changes to the shipped calling-law profiles (migration 041):
 * a rule added or replacing a shipped one, or a shipped rule disabled.
 */
import type { LawRule, RuleOverride } from '../domain/callingLaw.ts'
import type { Queryable } from './database.ts'
import { iso } from './rows.ts'

interface OverrideRow {
  rule_id: string
  profile_id: string
  rule: LawRule | null
  reason: string
  updated_at: Date
}

const toOverride = (row: OverrideRow): RuleOverride => ({ ruleId: row.rule_id, profileId: row.profile_id, rule: row.rule, reason: row.reason, updatedAt: iso(row.updated_at) })

export async function listRuleOverrides(db: Queryable): Promise<RuleOverride[]> {
  const rows = await db.query<OverrideRow>('SELECT rule_id, profile_id, rule, reason, updated_at FROM calling_law_overrides ORDER BY rule_id')
  return rows.map(toOverride)
}

/** Sets a rule's override (a rule, or null to disable it), replacing any before. */
export async function putRuleOverride(db: Queryable, override: { ruleId: string; profileId: string; rule: LawRule | null; reason: string }, now: number): Promise<RuleOverride> {
  const rows = await db.query<OverrideRow>(
    `INSERT INTO calling_law_overrides (rule_id, profile_id, rule, disabled, reason, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (rule_id) DO UPDATE SET profile_id = EXCLUDED.profile_id, rule = EXCLUDED.rule, disabled = EXCLUDED.disabled, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
     RETURNING rule_id, profile_id, rule, reason, updated_at`,
    [override.ruleId, override.profileId, override.rule === null ? null : JSON.stringify(override.rule), override.rule === null, override.reason, new Date(now)],
  )
  return toOverride(rows[0]!)
}

/** Removes a rule's override: the shipped rule applies again (an added one is gone). Answers whether there was one. */
export async function deleteRuleOverride(db: Queryable, ruleId: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM calling_law_overrides WHERE rule_id = $1 RETURNING rule_id', [ruleId])
  return rows.length === 1
}
