/**
 * Operator actions on organizations, their API keys and campaigns. The admin
 * API and the CLI both call these, so the two cannot drift apart.
 */
import { ApiError } from '../domain/errors.ts'
import { isId, newId } from '../domain/ids.ts'
import type { ApiKey, Campaign, Channel, JsonObject, Organization, Scope } from '../domain/types.ts'
import { DEFAULT_KEY_SCOPES } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { insertApiKey, listApiKeys, revokeApiKey as revokeStoredKey } from '../store/apiKeys.ts'
import { insertCampaign, listCampaigns as listStoredCampaigns } from '../store/campaigns.ts'
import { findOrganization, insertOrganization } from '../store/organizations.ts'
import { generateApiKey } from './credentials.ts'

export interface Operations {
  db: Database
  now: () => number
}

const isoNow = (ops: Operations) => new Date(ops.now()).toISOString()

export async function createOrganization(ops: Operations, name: string): Promise<Organization> {
  const organization = { id: newId('organization', ops.now()), name, createdAt: isoNow(ops) }
  await insertOrganization(ops.db, organization)
  return organization
}

async function requireOrganization(ops: Operations, orgId: string): Promise<Organization> {
  const organization = isId('organization', orgId) ? await findOrganization(ops.db, orgId) : undefined
  if (organization === undefined) throw new ApiError('not_found', `No organization ${orgId} exists.`)
  return organization
}

/** Issues a key; the plaintext is returned here once and never stored. */
export async function issueApiKey(
  ops: Operations,
  orgId: string,
  input: { name: string; scopes?: Scope[] },
): Promise<{ apiKey: ApiKey; key: string }> {
  await requireOrganization(ops, orgId)
  const generated = generateApiKey()
  const apiKey: ApiKey = {
    id: newId('apiKey', ops.now()),
    orgId,
    name: input.name,
    prefix: generated.prefix,
    scopes: [...new Set(input.scopes ?? DEFAULT_KEY_SCOPES)],
    createdAt: isoNow(ops),
    revokedAt: null,
  }
  await insertApiKey(ops.db, apiKey, generated.hash)
  return { apiKey, key: generated.key }
}

export async function listKeys(ops: Operations, orgId: string): Promise<ApiKey[]> {
  await requireOrganization(ops, orgId)
  return listApiKeys(ops.db, orgId)
}

/** Revokes a key: every process refuses it from its next request on. Revoking twice is harmless. */
export async function revokeApiKey(ops: Operations, orgId: string, keyId: string): Promise<ApiKey> {
  await requireOrganization(ops, orgId)
  const revoked = isId('apiKey', keyId) ? await revokeStoredKey(ops.db, orgId, keyId, isoNow(ops)) : undefined
  if (revoked === undefined) throw new ApiError('not_found', `Organization ${orgId} has no API key ${keyId}.`)
  return revoked
}

export async function createCampaign(
  ops: Operations,
  orgId: string,
  input: { routing_key: string; channel: Channel; name?: string; context?: JsonObject },
): Promise<Campaign> {
  await requireOrganization(ops, orgId)
  const campaign: Campaign = {
    id: newId('campaign', ops.now()),
    orgId,
    routingKey: input.routing_key,
    channel: input.channel,
    name: input.name ?? input.routing_key,
    context: input.context ?? {},
    createdAt: isoNow(ops),
  }
  if (!(await insertCampaign(ops.db, campaign))) {
    throw new ApiError('conflict', `Organization ${orgId} already has a ${input.channel} campaign with routing key '${input.routing_key}'.`)
  }
  return campaign
}

export async function listCampaigns(ops: Operations, orgId: string): Promise<Campaign[]> {
  await requireOrganization(ops, orgId)
  return listStoredCampaigns(ops.db, orgId)
}
