/**
 * The audit log's vocabulary: who changed an organization's setup (or erased
 * a person's data), and what. Entries are written by the transaction that
 * makes the change, so that each change appears once, and only if it happened.
 */
import type { JsonObject } from './types.ts'

/** Who asked: the operator (its token, or the command line), or one of the organization's API keys. */
export interface Actor {
  /** 'operator', or the API key's id. */
  id: string
  /** The caller's IP address; null from the command line. */
  address: string | null
}

export const OPERATOR = 'operator'

/** The operator at the command line, which works on the database directly. */
export const COMMAND_LINE: Actor = { id: OPERATOR, address: null }

export const AUDIT_ACTIONS = [
  'organization.created',
  'organization.changed',
  'api_key.issued',
  'api_key.revoked',
  'campaign.created',
  'campaign.changed',
  'campaign.paused',
  'campaign.resumed',
  'source.created',
  'source.changed',
  'source.deleted',
  'suppression.added',
  'suppression.lifted',
  'consent.recorded',
  'consent.revoked',
  'calling_law.rule_changed',
  'registry.loaded',
  'registry.deleted',
  'webhook_endpoint.created',
  'webhook_endpoint.changed',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.recovered',
  'contact.erased',
] as const

export type AuditAction = (typeof AUDIT_ACTIONS)[number]

/** One change, as the service that made it describes it. */
export interface AuditChange {
  orgId: string | null
  action: AuditAction
  /** The id of what changed (a campaign's, a key's...), a source's name, or a suppressed number. */
  target: string
  /** What was asked: never a secret. */
  details: JsonObject
}

export interface AuditEntry extends AuditChange {
  id: string
  at: string
  actor: Actor
}

/**
 * A webhook URL as the audit log keeps it: its origin alone. The path and
 * query of many receivers carry a token of their own (a Slack or Zapier hook
 * is one), which the log must not hold.
 */
export function auditedUrl(url: string): string {
  return new URL(url).origin
}
