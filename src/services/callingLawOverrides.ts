/**
 * The operator's changes to the calling-law profiles: a rule added or put
 * in place of a shipped one, a shipped rule disabled, an override removed.
 * Each recorded in the audit log, and seen by this process's next decision
 * at once (by the others' within a second: services/callingLaw.ts).
 */
import type { Actor } from '../domain/audit.ts'
import { type LawRule, type RuleOverride, shippedProfiles } from '../domain/callingLaw.ts'
import { ApiError } from '../domain/errors.ts'
import { deleteRuleOverride, putRuleOverride } from '../store/callingLawOverrides.ts'
import type { Database } from '../store/database.ts'
import { audited } from './auditTrail.ts'
import type { CallingLaw } from './callingLaw.ts'

export interface OverrideOperations {
  db: Database
  now: () => number
  law: CallingLaw
}

/** Puts `rule` in force under its id, in place of the shipped rule of that id or beside its profile's. */
export function overrideRule(ops: OverrideOperations, actor: Actor, rule: LawRule, reason: string): Promise<RuleOverride> {
  return change(ops, actor, rule.id, rule, reason)
}

/** Takes a shipped rule out of every decision, until its override is removed. */
export function disableRule(ops: OverrideOperations, actor: Actor, ruleId: string, reason: string): Promise<RuleOverride> {
  if (!shippedProfiles().profiles.some((profile) => profile.rules.some((rule) => rule.id === ruleId))) {
    throw new ApiError('not_found', `No shipped rule ${ruleId} exists (a rule the operator added is removed by deleting its override).`)
  }
  return change(ops, actor, ruleId, null, reason)
}

/** The shipped rule applies again; a rule the operator added is gone. */
export async function removeOverride(ops: OverrideOperations, actor: Actor, ruleId: string): Promise<void> {
  await audited(ops, actor, async (tx) => {
    if (!(await deleteRuleOverride(tx, ruleId))) throw new ApiError('not_found', `Rule ${ruleId} has no override.`)
    return { result: undefined, audit: { orgId: null, action: 'calling_law.rule_changed', target: ruleId, details: { override: 'removed' } } }
  })
  ops.law.changed()
}

async function change(ops: OverrideOperations, actor: Actor, ruleId: string, rule: LawRule | null, reason: string): Promise<RuleOverride> {
  const profileId = profileOfRule(ruleId)
  const override = await audited(ops, actor, async (tx) => {
    const put = await putRuleOverride(tx, { ruleId, profileId, rule, reason }, ops.now())
    return { result: put, audit: { orgId: null, action: 'calling_law.rule_changed', target: ruleId, details: { override: rule === null ? 'disabled' : 'replaced', reason } } }
  })
  ops.law.changed()
  return override
}

/** The profile a rule id names: "us-fl.hours" is us-fl's. */
function profileOfRule(ruleId: string): string {
  const profileId = ruleId.slice(0, ruleId.indexOf('.'))
  if (!shippedProfiles().profiles.some((profile) => profile.id === profileId)) {
    throw new ApiError('not_found', `No profile ${profileId || ruleId} exists: a rule's id is its profile's id, a dot and its name (us-fl.hours).`)
  }
  return profileId
}
