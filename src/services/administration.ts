/**
 * Operator actions on organizations, their API keys, campaigns and sources. The admin
 * API and the CLI both call these, so the two cannot drift apart.
 */
import { checkProviderConfig } from '../channels/providerConfig.ts'
import type { ChannelRegistry } from '../channels/registry.ts'
import {
  type AfterVoicemailLeft,
  type AttemptTiming,
  type AttemptPolicy,
  DEFAULT_ATTEMPTS,
  DEFAULT_RESULTS,
  DEFAULT_SCHEDULE,
  type PacingSettings,
  type FallbackSettings,
  type Provider,
  type RetryOutcome,
  type Schedule,
} from '../domain/campaignSettings.ts'
import type { Actor } from '../domain/audit.ts'
import { callbackNumberOf, DEFAULT_CALLBACK_WINDOW_DAYS } from '../domain/callbacks.ts'
import { ApiError, type ErrorDetail, ValidationFailed, valueError } from '../domain/errors.ts'
import { type OpenPeriod, openPeriods, scheduleProblems } from '../domain/schedule.ts'
import { zonesOfPhone } from '../domain/timezones.ts'
import { valueAt } from '../validation/model.ts'
import { isId, newId } from '../domain/ids.ts'
import { normalizeIdPart } from '../domain/externalIds.ts'
import type { ApiKey, Campaign, CandidateZones, Channel, JsonObject, Organization, Scope, Source, ZoneSource } from '../domain/types.ts'
import { DEFAULT_KEY_SCOPES } from '../domain/types.ts'
import type { ComplianceSettings } from '../domain/consent.ts'
import type { Database } from '../store/database.ts'
import { findApiKey, insertApiKey, listApiKeys, revokeApiKey as revokeStoredKey } from '../store/apiKeys.ts'
import {
  campaignsFallingBackTo,
  findCampaign,
  findCampaignsByWhatsAppNumber,
  findTextCampaignsByNumber,
  insertCampaign,
  listCampaigns as listStoredCampaigns,
  updateCampaign as updateStoredCampaign,
} from '../store/campaigns.ts'
import { type CallbackNumber, listCallbackNumbers, replaceCallbackNumbers } from '../store/callbackNumbers.ts'
import { findOrganization, insertOrganization, listOrganizations as listStoredOrganizations, updateOrganization } from '../store/organizations.ts'
import { type QueueDepths, queueDepths } from '../store/queues.ts'
import { deleteSource, insertSource, listSources, updateSource } from '../store/sources.ts'
import { audited } from './auditTrail.ts'
import { generateApiKey } from './credentials.ts'

export interface Operations {
  db: Database
  now: () => number
  /** The channels, to check a campaign's provider settings. */
  channels: ChannelRegistry
}

const isoNow = (ops: Operations) => new Date(ops.now()).toISOString()

export async function createOrganization(ops: Operations, actor: Actor, name: string): Promise<Organization> {
  const organization: Organization = {
    id: newId('organization', ops.now()),
    name,
    createdAt: isoNow(ops),
    rateLimit: { perSecond: null, burst: null },
    retentionDays: null,
    contactCap: { per_24h: null, per_local_day: null },
    callbackWindowDays: DEFAULT_CALLBACK_WINDOW_DAYS,
  }
  return audited(ops, actor, async (tx) => {
    await insertOrganization(tx, organization)
    return { result: organization, audit: { orgId: organization.id, action: 'organization.created', target: organization.id, details: { name } } }
  })
}

/** How much work waits now in each queue: due tasks, running interactions, pending deliveries. */
export function queues(ops: Operations): Promise<QueueDepths> {
  return queueDepths(ops.db, ops.now())
}

/** The newest organizations first, at most `limit`. */
export function listOrganizations(ops: Operations, limit: number): Promise<Organization[]> {
  return listStoredOrganizations(ops.db, limit)
}

/** The organization, or the 404 that says it does not exist. */
export async function requireOrganization(ops: Operations, orgId: string): Promise<Organization> {
  const organization = isId('organization', orgId) ? await findOrganization(ops.db, orgId) : undefined
  if (organization === undefined) throw new ApiError('not_found', `No organization ${orgId} exists.`)
  return organization
}

export type OrganizationChanges = {
  name?: string
  rateLimit?: Organization['rateLimit']
  retentionDays?: number
  contactCap?: Organization['contactCap']
  callbackWindowDays?: number
}

/**
 * Renames an organization, sets its own rate limit (each figure null for
 * the service's default), how long it keeps personal data (null: the
 * default) or its cap on attempts to one number (each figure null for no
 * such rule). Every API process applies a new limit from its next lease of
 * the organization's tokens: within a tenth of a second for an organization
 * sending at its limit; the dispatchers apply a new cap from their next batch.
 */
export async function changeOrganization(ops: Operations, actor: Actor, orgId: string, changes: OrganizationChanges): Promise<Organization> {
  const organization = await audited(ops, actor, async (tx) => {
    const changed = isId('organization', orgId) ? await updateOrganization(tx, orgId, changes) : undefined
    const details = {
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.rateLimit !== undefined && { rate_limit: { per_second: changes.rateLimit.perSecond, burst: changes.rateLimit.burst } }),
      ...(changes.retentionDays !== undefined && { retention_days: changes.retentionDays }),
      ...(changes.contactCap !== undefined && { contact_cap: changes.contactCap }),
      ...(changes.callbackWindowDays !== undefined && { callback_window_days: changes.callbackWindowDays }),
    }
    return { result: changed, audit: changed && { orgId, action: 'organization.changed', target: orgId, details } }
  })
  if (organization === undefined) throw new ApiError('not_found', `No organization ${orgId} exists.`)
  return organization
}

export async function callbackNumbersOf(ops: Operations, orgId: string): Promise<CallbackNumber[]> {
  await requireOrganization(ops, orgId)
  return listCallbackNumbers(ops.db, orgId)
}

/**
 * Makes these the organization's callback numbers (docs/callbacks.md), each
 * answered through one of its campaigns on a platform that takes calls, in
 * that platform's form (callbackNumberOf). Every problem is one 422 entry at
 * its place: a campaign not the organization's, a number not of its
 * platform's form, one given twice, one another organization has.
 */
export async function setCallbackNumbers(ops: Operations, actor: Actor, orgId: string, asked: readonly { number: string; campaign_id: string }[]): Promise<CallbackNumber[]> {
  await requireOrganization(ops, orgId)
  const campaigns = new Map((await listStoredCampaigns(ops.db, orgId)).map((campaign) => [campaign.id, campaign]))
  const errors: ErrorDetail[] = []
  const wanted: { number: string; provider: Provider; campaignId: string; index: number }[] = []
  for (const [index, entry] of asked.entries()) {
    const at = (field: string) => ['body', 'callback_numbers', index, field]
    const campaign = campaigns.get(entry.campaign_id)
    if (campaign === undefined) {
      errors.push(valueError(at('campaign_id'), entry.campaign_id, `organization ${orgId} has no campaign ${entry.campaign_id}`))
      continue
    }
    if (campaign.channel !== 'voice') {
      errors.push(valueError(at('campaign_id'), entry.campaign_id, `campaign ${campaign.id} is a ${campaign.channel} campaign: a callback number answers calls through a voice campaign`))
      continue
    }
    const kept = callbackNumberOf(campaign.provider, entry.number)
    if ('problem' in kept) errors.push(valueError(at('number'), entry.number, kept.problem))
    else if (wanted.some((other) => other.provider === campaign.provider && other.number === kept.number)) errors.push(valueError(at('number'), entry.number, 'this number is given twice'))
    else wanted.push({ number: kept.number, provider: campaign.provider, campaignId: campaign.id, index })
  }
  if (errors.length > 0) throw new ValidationFailed(errors)
  return audited(ops, actor, async (tx) => {
    const replaced = await replaceCallbackNumbers(tx, orgId, wanted, ops.now())
    if ('taken' in replaced) {
      const taken = new Set(replaced.taken)
      // Thrown inside the transaction: what it changed is rolled back.
      throw new ValidationFailed(
        wanted.filter((entry) => taken.has(entry.number)).map((entry) => valueError(['body', 'callback_numbers', entry.index, 'number'], asked[entry.index]!.number, 'this number is another organization’s callback number')),
      )
    }
    const details = { callback_numbers: replaced.numbers.map((entry) => ({ number: entry.number, campaign_id: entry.campaignId })) }
    return { result: replaced.numbers, audit: { orgId, action: 'organization.changed', target: orgId, details } }
  })
}

/** Issues a key; the plaintext is returned here once and never stored. */
export async function issueApiKey(
  ops: Operations,
  actor: Actor,
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
  await audited(ops, actor, async (tx) => {
    await insertApiKey(tx, apiKey, generated.hash)
    return { result: undefined, audit: { orgId, action: 'api_key.issued', target: apiKey.id, details: { name: apiKey.name, prefix: apiKey.prefix, scopes: apiKey.scopes } } }
  })
  return { apiKey, key: generated.key }
}

export async function listKeys(ops: Operations, orgId: string): Promise<ApiKey[]> {
  await requireOrganization(ops, orgId)
  return listApiKeys(ops.db, orgId)
}

/** The key a client calls with, and its organization: what the client is, seen from its own key. */
export async function describeKey(ops: Operations, orgId: string, keyId: string): Promise<{ apiKey: ApiKey; organization: Organization }> {
  const [apiKey, organization] = await Promise.all([findApiKey(ops.db, orgId, keyId), findOrganization(ops.db, orgId)])
  // The key was authenticated by this request: it and its organization exist.
  if (apiKey === undefined || organization === undefined) throw new Error(`API key ${keyId} of organization ${orgId} vanished`)
  return { apiKey, organization }
}

/** Revokes a key: every process refuses it from its next request on. Revoking twice is harmless. */
export async function revokeApiKey(ops: Operations, actor: Actor, orgId: string, keyId: string): Promise<ApiKey> {
  await requireOrganization(ops, orgId)
  const revoked = await audited(ops, actor, async (tx) => {
    const key = isId('apiKey', keyId) ? await revokeStoredKey(tx, orgId, keyId, isoNow(ops)) : undefined
    return { result: key, audit: key && { orgId, action: 'api_key.revoked', target: keyId, details: { name: key.name } } }
  })
  if (revoked === undefined) throw new ApiError('not_found', `Organization ${orgId} has no API key ${keyId}.`)
  return revoked
}

/** What a schedule means for one contact: the zones it is read in, what told them, and its next open periods. */
export interface SchedulePreview {
  zones: string[]
  /** `schedule` when the schedule has a zone of its own; otherwise what told the contact's zones, as on a task. */
  zoneSource: 'schedule' | ZoneSource
  periods: OpenPeriod[]
}

/**
 * The next `count` periods from `from` in which a (valid) schedule lets
 * outreach start for a contact of this phone (E.164) or zone, read in the
 * zones a trigger for that contact would be scheduled in. A 422 at `phone`
 * when the schedule follows the contact's zones and nothing tells them.
 */
export function previewSchedule(schedule: Schedule, contact: { phone?: string; timezone?: string }, from: number, count: number): SchedulePreview {
  if (schedule.timezone !== 'contact') return { zones: [schedule.timezone], zoneSource: 'schedule', periods: openPeriods(schedule, [], from, count) }
  let told: CandidateZones | undefined
  if (contact.timezone !== undefined) told = { zones: [contact.timezone], source: 'sent' }
  else if (contact.phone !== undefined) told = zonesOfPhone(contact.phone, schedule.fallback_timezone)
  if (told === undefined) {
    const message =
      contact.phone === undefined
        ? "this schedule is read in the contact's zones: send the contact's phone or timezone"
        : "no zone can be told from this number (of no country) and the schedule has no fallback_timezone: send timezone"
    throw new ValidationFailed([valueError(['body', 'phone'], contact.phone ?? null, message)])
  }
  return { zones: told.zones, zoneSource: told.source, periods: openPeriods(schedule, told.zones, from, count) }
}

/** A campaign's settings as the admin API and the CLI take them; what is left out takes its default. */
export interface CampaignSettingsInput {
  name?: string
  context?: JsonObject
  schedule?: Schedule
  attempts?: { max?: number; retry_delays_s?: Partial<Record<RetryOutcome, number>>; expire_after_s?: number; voicemail_left?: AfterVoicemailLeft; timing?: AttemptTiming }
  provider?: Provider
  provider_config?: JsonObject
  max_concurrent?: number
  results?: { wait_s?: number; conversation_s?: number }
  pacing?: PacingSettings
  fallback?: FallbackSettings
  compliance?: ComplianceSettings
}

export interface CreateCampaignInput extends CampaignSettingsInput {
  routing_key: string
  channel: Channel
}

export interface CampaignChanges extends CampaignSettingsInput {
  /** max_concurrent was sent as null: no limit from now on. */
  clearMaxConcurrent?: boolean
  /** fallback was sent as null: no fallback step from now on (tasks that fell back already go on). */
  clearFallback?: boolean
}

export async function createCampaign(ops: Operations, actor: Actor, orgId: string, input: CreateCampaignInput): Promise<Campaign> {
  await requireOrganization(ops, orgId)
  const now = isoNow(ops)
  const draft: Campaign = {
    id: newId('campaign', ops.now()),
    orgId,
    routingKey: input.routing_key,
    channel: input.channel,
    name: input.name ?? input.routing_key,
    context: input.context ?? {},
    schedule: input.schedule ?? DEFAULT_SCHEDULE,
    attempts: withDefaults(input.attempts),
    provider: input.provider ?? 'simulator',
    providerConfig: input.provider_config ?? {},
    maxConcurrent: input.max_concurrent ?? null,
    results: { ...DEFAULT_RESULTS, ...input.results },
    pacing: input.pacing ?? {},
    fallback: input.fallback ?? null,
    compliance: input.compliance ?? {},
    pausedAt: null,
    createdAt: now,
    updatedAt: now,
  }
  const campaign = await checkedSettings(ops, draft)
  const inserted = await audited(ops, actor, async (tx) => {
    const done = await insertCampaign(tx, campaign)
    return { result: done, audit: done ? { orgId, action: 'campaign.created', target: campaign.id, details: { ...input } } : undefined }
  })
  if (!inserted) throw new ApiError('conflict', `Organization ${orgId} already has a ${input.channel} campaign with routing key '${input.routing_key}'.`)
  return campaign
}

/** Applies the changes sent; each replaces the current value (a new provider starts from an empty provider_config). */
export async function updateCampaign(ops: Operations, actor: Actor, orgId: string, campaignId: string, changes: CampaignChanges): Promise<Campaign> {
  await requireOrganization(ops, orgId)
  const current = isId('campaign', campaignId) ? await findCampaign(ops.db, orgId, campaignId) : undefined
  if (current === undefined) throw new ApiError('not_found', `Organization ${orgId} has no campaign ${campaignId}.`)
  const providerChanged = changes.provider !== undefined && changes.provider !== current.provider
  const draft: Campaign = {
    ...current,
    name: changes.name ?? current.name,
    context: changes.context ?? current.context,
    schedule: changes.schedule ?? current.schedule,
    attempts: changes.attempts === undefined ? current.attempts : withDefaults(changes.attempts),
    provider: changes.provider ?? current.provider,
    providerConfig: changes.provider_config ?? (providerChanged ? {} : current.providerConfig),
    maxConcurrent: changes.clearMaxConcurrent ? null : (changes.max_concurrent ?? current.maxConcurrent),
    results: changes.results === undefined ? current.results : { ...DEFAULT_RESULTS, ...changes.results },
    pacing: changes.pacing ?? current.pacing,
    fallback: changes.clearFallback ? null : (changes.fallback ?? current.fallback),
    compliance: changes.compliance ?? current.compliance,
    updatedAt: isoNow(ops),
  }
  const campaign = await checkedSettings(ops, draft)
  const { clearMaxConcurrent, clearFallback, ...sent } = changes
  const details = { ...sent, ...(clearMaxConcurrent ? { max_concurrent: null } : {}), ...(clearFallback ? { fallback: null } : {}) }
  await audited(ops, actor, async (tx) => {
    await updateStoredCampaign(tx, campaign)
    return { result: undefined, audit: { orgId, action: 'campaign.changed', target: campaign.id, details } }
  })
  return campaign
}

function withDefaults(attempts: CreateCampaignInput['attempts']): AttemptPolicy {
  return {
    max: attempts?.max ?? DEFAULT_ATTEMPTS.max,
    retry_delays_s: { ...DEFAULT_ATTEMPTS.retry_delays_s, ...attempts?.retry_delays_s },
    expire_after_s: attempts?.expire_after_s ?? DEFAULT_ATTEMPTS.expire_after_s,
    // Kept only when sent: a campaign that leaves no message on voicemails reads as before.
    ...(attempts?.voicemail_left === undefined ? {} : { voicemail_left: attempts.voicemail_left }),
    // As voicemail_left: kept only when sent.
    ...(attempts?.timing === undefined ? {} : { timing: attempts.timing }),
  }
}

/**
 * What the request schema cannot say: a coherent schedule, a provider for the
 * channel, a valid provider_config (its provider's schema: the campaign
 * answered keeps it normalized), a WhatsApp number that no other
 * organization sends from (its replies must belong to one organization), and
 * a voicemail rule only where there is voicemail.
 */
async function checkedSettings(ops: Operations, draft: Campaign): Promise<Campaign> {
  const errors: ErrorDetail[] = scheduleProblems(draft.schedule).map(({ path, message }) =>
    valueError(['body', 'schedule', ...path], valueAt(draft.schedule, path), message),
  )
  let campaign = draft
  const channel = ops.channels.find(draft.provider, draft.channel)
  if (channel === undefined) {
    errors.push(valueError(['body', 'provider'], draft.provider, `provider ${draft.provider} does not serve the ${draft.channel} channel`))
  } else {
    const config = checkProviderConfig(channel.configSchema, draft.providerConfig, ['body', 'provider_config'])
    errors.push(...config.errors)
    if (config.value !== undefined) campaign = { ...draft, providerConfig: config.value }
  }
  const number = campaign.providerConfig.phone_number_id
  if (errors.length === 0 && campaign.provider === 'whatsapp_cloud' && typeof number === 'string') {
    const sharing = await findCampaignsByWhatsAppNumber(ops.db, [number])
    if (sharing.some((other) => other.orgId !== campaign.orgId)) {
      errors.push(valueError(['body', 'provider_config', 'phone_number_id'], number, 'this WhatsApp number is used by another organization'))
    }
  }
  if (errors.length === 0 && campaign.provider === 'twilio' && campaign.channel === 'sms') {
    // A person's text to the sender lands on the organization that sends from it: one organization's only.
    const { from, messaging_service_sid: service } = campaign.providerConfig as { from?: string; messaging_service_sid?: string }
    const sender = from ?? service
    const sharing = sender === undefined ? [] : await findTextCampaignsByNumber(ops.db, from ?? '', service)
    if (sharing.some((other) => other.orgId !== campaign.orgId)) {
      errors.push(valueError(['body', 'provider_config', from === undefined ? 'messaging_service_sid' : 'from'], sender, 'this sender is used by another organization'))
    }
  }
  if (campaign.channel !== 'voice' && campaign.attempts.voicemail_left !== undefined) {
    // A message reaches no voicemail: the rule would be kept and never apply.
    errors.push(valueError(['body', 'attempts', 'voicemail_left'], campaign.attempts.voicemail_left, 'voicemail_left applies to voice campaigns only'))
  }
  if (campaign.channel === 'voice' && campaign.results.conversation_s !== undefined) {
    // A call is over when it hangs up: only a message thread stays open for more.
    errors.push(valueError(['body', 'results', 'conversation_s'], campaign.results.conversation_s, 'conversation_s applies to WhatsApp and SMS campaigns only'))
  }
  if (campaign.fallback !== null) errors.push(...(await fallbackProblems(ops, campaign, campaign.fallback)))
  if (errors.length > 0) throw new ValidationFailed(errors)
  return campaign
}

/**
 * A fallback step names another campaign of the organization, on the other
 * channel, that has no fallback step of its own, from a campaign that is no
 * other's fallback step: a task takes one step more at most, so steps never
 * chain or go round. `not_on_whatsapp` is something only WhatsApp says, and
 * no_reply_minutes is the wait of `no_reply`.
 */
async function fallbackProblems(ops: Operations, campaign: Campaign, fallback: FallbackSettings): Promise<ErrorDetail[]> {
  const errors: ErrorDetail[] = []
  const at = (...path: (string | number)[]) => ['body', 'fallback', ...path]
  const target = fallback.campaign_id === campaign.id || !isId('campaign', fallback.campaign_id) ? undefined : await findCampaign(ops.db, campaign.orgId, fallback.campaign_id)
  if (fallback.campaign_id === campaign.id) errors.push(valueError(at('campaign_id'), fallback.campaign_id, 'a campaign cannot be its own fallback step'))
  else if (target === undefined) errors.push(valueError(at('campaign_id'), fallback.campaign_id, `the organization has no campaign ${fallback.campaign_id}`))
  else if (target.channel === campaign.channel) {
    errors.push(valueError(at('campaign_id'), fallback.campaign_id, `the fallback step must be a campaign on another channel than ${campaign.channel}`))
  } else if (target.fallback !== null) {
    errors.push(valueError(at('campaign_id'), fallback.campaign_id, `campaign ${target.id} has a fallback step of its own: a task takes one fallback step at most`))
  }
  const pointing = (await campaignsFallingBackTo(ops.db, campaign.orgId, campaign.id)).filter((id) => id !== campaign.id)
  if (pointing.length > 0) {
    errors.push(valueError(['body', 'fallback'], fallback, `this campaign is the fallback step of ${pointing.join(', ')}: a task takes one fallback step at most`))
  }
  if (new Set(fallback.when).size !== fallback.when.length) errors.push(valueError(at('when'), fallback.when, 'each condition at most once'))
  for (const [index, condition] of fallback.when.entries()) {
    if (condition === 'not_on_whatsapp' && campaign.channel !== 'whatsapp') {
      errors.push(valueError(at('when', index), condition, 'not_on_whatsapp is for a WhatsApp campaign: only WhatsApp says a number is not on it'))
    }
  }
  if (fallback.no_reply_minutes !== undefined && !fallback.when.includes('no_reply')) {
    errors.push(valueError(at('no_reply_minutes'), fallback.no_reply_minutes, 'no_reply_minutes is the wait of no_reply: add no_reply to when'))
  }
  return errors
}

export async function listCampaigns(ops: Operations, orgId: string): Promise<Campaign[]> {
  await requireOrganization(ops, orgId)
  return listStoredCampaigns(ops.db, orgId)
}

export interface SourceInput {
  name: string
  id_types: string[]
  contact?: Source['contact']
  required_context?: string[]
}

const normalizedOnce = (values: readonly string[]) => [...new Set(values.map(normalizeIdPart))]

export async function createSource(ops: Operations, actor: Actor, orgId: string, input: SourceInput): Promise<Source> {
  await requireOrganization(ops, orgId)
  const now = isoNow(ops)
  const source: Source = {
    orgId,
    name: normalizeIdPart(input.name),
    idTypes: normalizedOnce(input.id_types),
    contact: input.contact ?? 'required',
    requiredContext: [...new Set(input.required_context ?? [])],
    createdAt: now,
    updatedAt: now,
  }
  const inserted = await audited(ops, actor, async (tx) => {
    const done = await insertSource(tx, source)
    return { result: done, audit: done ? { orgId, action: 'source.created', target: source.name, details: { ...input } } : undefined }
  })
  if (!inserted) throw new ApiError('conflict', `Organization ${orgId} already has a source '${source.name}'.`)
  return source
}

export async function listOrganizationSources(ops: Operations, orgId: string): Promise<Source[]> {
  await requireOrganization(ops, orgId)
  return listSources(ops.db, orgId)
}

async function requireSource(ops: Operations, orgId: string, name: string): Promise<Source> {
  const source = (await listOrganizationSources(ops, orgId)).find((candidate) => candidate.name === normalizeIdPart(name))
  if (source === undefined) throw new ApiError('not_found', `Organization ${orgId} has no source '${name}'.`)
  return source
}

export async function changeSource(
  ops: Operations,
  actor: Actor,
  orgId: string,
  name: string,
  changes: Partial<Omit<SourceInput, 'name'>>,
): Promise<Source> {
  const current = await requireSource(ops, orgId, name)
  const source: Source = {
    ...current,
    idTypes: changes.id_types === undefined ? current.idTypes : normalizedOnce(changes.id_types),
    contact: changes.contact ?? current.contact,
    requiredContext: changes.required_context === undefined ? current.requiredContext : [...new Set(changes.required_context)],
    updatedAt: isoNow(ops),
  }
  await audited(ops, actor, async (tx) => {
    await updateSource(tx, source)
    return { result: undefined, audit: { orgId, action: 'source.changed', target: source.name, details: { ...changes } } }
  })
  return source
}

export async function removeSource(ops: Operations, actor: Actor, orgId: string, name: string): Promise<void> {
  const source = await requireSource(ops, orgId, name)
  await audited(ops, actor, async (tx) => {
    const deleted = await deleteSource(tx, orgId, source.name)
    return { result: undefined, audit: deleted ? { orgId, action: 'source.deleted', target: source.name, details: {} } : undefined }
  })
}
