/**
 * Accepting a trigger, the use case behind POST /api/v2/triggers: the
 * Idempotency-Key's reservation, the campaign, the organization's sources,
 * the contact on file, the contact's candidate zones, then the group commit.
 *
 * Every problem a request has is reported at once, as pydantic would: the
 * checks that depend on the organization's data run on the raw body even when
 * the schema refused some of it, on whatever parts of it can be read.
 */
import { ApiError, type ErrorDetail, ValidationFailed, valueError } from '../domain/errors.ts'
import { normalizeIdPart } from '../domain/externalIds.ts'
import { newId } from '../domain/ids.ts'
import { COMMON_WINDOW_DAYS, windowsMeet } from '../domain/schedule.ts'
import { zonesOfPhone } from '../domain/timezones.ts'
import type { Campaign, CandidateZones, Contact } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { releaseKey, reserveKey } from '../store/idempotency.ts'
import { type Authenticator, type OrganizationPrincipal, unauthorized } from './authenticator.ts'
import type { CampaignDirectory } from './campaignDirectory.ts'
import { type ContactOnFile, contactOnFile, idsNameSeveralContacts, missingContact, type ReadableId, timezoneOnFile } from './contactDirectory.ts'
import { type SourceDirectory, sourceProblems } from './sourceDirectory.ts'
import { acceptedData, requestHash, type Recording, type TriggerIntake, type TriggerRequest, usesDirectory } from './triggerIntake.ts'

/** Who sends the trigger: an organization, through one of its keys. */
export interface Caller {
  principal: OrganizationPrincipal
  /**
   * Confirms the key with the database unless that was done already, and
   * throws the 401 if it was revoked: the key was found in a cache, and no
   * answer but a commit (which records only for an unrevoked key) may trust it.
   */
  confirmKey(): Promise<void>
}

/** One POST /api/v2/triggers as the transport received it. */
export interface TriggerSubmission {
  /** The body as validated, or as sent when validation refused it (then `errors` is not empty). */
  body: unknown
  /** What validation refused, in the body and the headers. */
  errors: readonly ErrorDetail[]
  /** The Idempotency-Key header, checked; undefined when none was sent. */
  idempotencyKey: string | undefined
  requestId: string
  /** Size of the request body, which bounds the trigger's size. */
  bodyBytes: number
}

export type AcceptedData = ReturnType<typeof acceptedData>

/** A trigger recorded now, or the first answer of an earlier request with the same Idempotency-Key and body. */
export type Acceptance = { kind: 'accepted'; data: AcceptedData } | { kind: 'replay'; data: unknown }

/** A reservation outlives any request; one older belongs to a process that died. */
const IDEMPOTENCY_LEASE_MS = 60_000
const IDEMPOTENCY_KEEP_MS = 24 * 3_600_000

const keyInUse = () => new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry in a moment.')

const NO_ZONE =
  "the contact's time zone cannot be told from this phone number (a number of no country, such as +800, is placed in the campaign's fallback_timezone, and this campaign has none); send contact.timezone, the IANA zone the contact is in"

function noCommonWindow(zones: readonly string[]): string {
  return (
    `this number may be in any of ${zones.length} time zones (${zones.join(', ')}), and the campaign's windows are never open in all of them ` +
    `at once within the next ${COMMON_WINDOW_DAYS} days; send contact.timezone, the IANA zone the contact is in`
  )
}

type RawBody = Partial<Record<keyof TriggerRequest, unknown>>

export class TriggerAcceptance {
  readonly #db: Database
  readonly #authenticator: Authenticator
  readonly #campaigns: CampaignDirectory
  readonly #sources: SourceDirectory
  readonly #intake: TriggerIntake
  readonly #now: () => number

  constructor(deps: {
    db: Database
    authenticator: Authenticator
    campaigns: CampaignDirectory
    sources: SourceDirectory
    intake: TriggerIntake
    now: () => number
  }) {
    this.#db = deps.db
    this.#authenticator = deps.authenticator
    this.#campaigns = deps.campaigns
    this.#sources = deps.sources
    this.#intake = deps.intake
    this.#now = deps.now
  }

  /**
   * Records the trigger and its task, or answers a repeated request with its
   * first answer. Throws ValidationFailed with every problem the request
   * has, and ApiError for a reused or busy Idempotency-Key or a revoked key.
   */
  async accept(caller: Caller, submission: TriggerSubmission): Promise<Acceptance> {
    const errors = [...submission.errors]
    let idempotency: { key: string; triggerId: string } | undefined
    if (submission.idempotencyKey !== undefined && errors.length === 0) {
      // Looked at before the campaign and the sources, so that a retry gets its first answer whatever changed since;
      // and the key confirmed (one round trip), so that a replay never answers a revoked key.
      await caller.confirmKey()
      idempotency = { key: submission.idempotencyKey, triggerId: newId('trigger', this.#now()) }
      const reservation = await reserveKey(
        this.#db,
        caller.principal.orgId,
        idempotency.key,
        { hash: requestHash(submission.body as TriggerRequest), token: idempotency.triggerId },
        this.#now(),
        IDEMPOTENCY_LEASE_MS,
        IDEMPOTENCY_KEEP_MS,
      )
      if (reservation.kind === 'replay') return { kind: 'replay', data: reservation.response }
      if (reservation.kind === 'reused') {
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request body in the last 24 hours.')
      }
      if (reservation.kind === 'in_use') throw keyInUse()
    }
    let recording: Recording | undefined
    try {
      recording = await this.#record(caller, submission, errors, idempotency)
    } finally {
      // Not recorded: the key may be used again. A failure to say so leaves it to expire with its lease; it must not hide why.
      if (recording?.kind !== 'accepted' && idempotency !== undefined) {
        await releaseKey(this.#db, caller.principal.orgId, idempotency.key, idempotency.triggerId).catch(() => {})
      }
    }
    if (recording.kind === 'conflict') {
      throw new ValidationFailed([idsNameSeveralContacts((submission.body as TriggerRequest).ids, recording.named)])
    }
    if (recording.kind === 'not recorded') {
      // Its reservation was taken over after stalling past the lease: the request that took it answers.
      if (idempotency !== undefined && (await this.#authenticator.confirm(caller.principal))) throw keyInUse()
      // Campaigns are never deleted: only a key revoked since it was cached stops the commit.
      this.#authenticator.forget(caller.principal.keyId)
      throw unauthorized()
    }
    return { kind: 'accepted', data: acceptedData(recording.accepted) }
  }

  /**
   * Checks what depends on the organization's campaigns, sources and contacts,
   * decides the contact's candidate zones, then records the trigger.
   */
  async #record(
    caller: Caller,
    submission: TriggerSubmission,
    errors: ErrorDetail[],
    idempotency: { key: string; triggerId: string } | undefined,
  ): Promise<Recording> {
    // The body as sent when validation failed, which may be anything; only an object has fields to check.
    const raw = isObject(submission.body) ? (submission.body as RawBody) : undefined
    const campaign = await this.#resolveCampaign(caller.principal.orgId, raw, errors)
    const organizationSources = await this.#sources.sourcesOf(caller.principal.orgId)
    const omitsContact = raw !== undefined && (raw.contact === undefined || raw.contact === null)
    // Read only when something checks them: most triggers carry a contact for an organization without sources.
    const ids = organizationSources.size > 0 || omitsContact ? readableIds(raw, errors) : []
    errors.push(...sourceProblems(organizationSources, ids, failed(errors, 'context') ? undefined : ((raw?.context ?? {}) as Record<string, unknown>)))
    let onFile: ContactOnFile | undefined
    if (omitsContact) {
      // A test needs the tester's number; otherwise the person may be on file.
      const found = raw.test_mode === true ? missingContact(raw) : await contactOnFile(this.#db, caller.principal.orgId, organizationSources, ids, raw)
      if ('contactId' in found) onFile = found
      else errors.push(found)
    }
    if (errors.length > 0 || campaign === undefined) throw new ValidationFailed(errors)
    const body = submission.body as TriggerRequest
    const numberZones = await this.#numberZones(caller.principal.orgId, campaign, body, body.contact ?? onFile!.contact)
    const submitter = { orgId: caller.principal.orgId, apiKeyId: caller.principal.keyId, requestId: submission.requestId, bodyBytes: submission.bodyBytes }
    return this.#intake.record(submitter, { campaignId: campaign.id, onFile, numberZones, idempotency }, body)
  }

  /**
   * The candidate zones the reached contact's number tells, for the commit to
   * use unless the contact has a timezone, as sent or as on file; refused (a
   * 422) when the campaign follows the contact's zone and neither the number
   * nor the directory gives zones its windows are open in at once.
   */
  async #numberZones(orgId: string, campaign: Campaign, body: TriggerRequest, contact: Contact): Promise<CandidateZones | null> {
    if (contact.timezone !== undefined) return null
    const zones = zonesOfPhone(contact.phone, campaign.schedule.fallback_timezone)
    if (campaign.schedule.timezone !== 'contact') return zones ?? null
    if (zones !== undefined && windowsMeet(campaign.schedule, zones.zones, this.#now())) return zones
    // A contact sent without a zone keeps the one on file, if the person has one.
    const stored = body.contact !== undefined && usesDirectory(body) ? await timezoneOnFile(this.#db, orgId, body.ids!) : undefined
    if (stored !== undefined && 'loc' in stored) throw new ValidationFailed([stored])
    if (stored?.timezone !== undefined) return zones ?? null
    const loc = body.contact === undefined ? ['body', 'contact'] : ['body', 'contact', 'phone']
    throw new ValidationFailed([valueError(loc, body.contact?.phone, zones === undefined ? NO_ZONE : noCommonWindow(zones.zones))])
  }

  /**
   * The campaign the body names, or undefined with the 422 entry added that
   * says why there is none. Runs on the raw body when other fields failed, so
   * that one answer lists every problem.
   */
  async #resolveCampaign(orgId: string, raw: RawBody | undefined, errors: ErrorDetail[]): Promise<Campaign | undefined> {
    if (typeof raw?.campaign !== 'string' || failedField(errors, 'campaign')) return undefined
    const channelUsable = !failedField(errors, 'channel')
    const choice = await this.#campaigns.choose(orgId, raw.campaign, channelUsable ? (raw.channel as TriggerRequest['channel']) : undefined)
    if ('campaign' in choice) return choice.campaign
    if (channelUsable || choice.error.loc[1] === 'campaign') errors.push(choice.error)
    return undefined
  }
}

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Whether validation refused exactly this part of the body. */
function failed(errors: readonly ErrorDetail[], ...loc: (string | number)[]): boolean {
  return errors.some((error) => error.loc.length === loc.length + 1 && loc.every((part, depth) => error.loc[depth + 1] === part))
}

/** Whether validation refused this top-level field or anything inside it. */
function failedField(errors: readonly ErrorDetail[], field: string): boolean {
  return errors.some((error) => error.loc[1] === field)
}

/**
 * The ids of the body as far as they can be read, normalized as validation
 * normalizes them: from the raw body when other fields failed, so that the
 * source and contact checks still report on every id they can.
 */
function readableIds(raw: RawBody | undefined, errors: readonly ErrorDetail[]): ReadableId[] {
  if (!Array.isArray(raw?.ids) || failed(errors, 'ids')) return []
  const part = (id: Record<string, unknown>, index: number, name: 'type' | 'value') =>
    failed(errors, 'ids', index, name) || typeof id[name] !== 'string' ? undefined : (id[name] as string)
  return (raw.ids as Record<string, unknown>[]).flatMap((id, index) => {
    if (failed(errors, 'ids', index) || failed(errors, 'ids', index, 'source') || typeof id.source !== 'string') return []
    const type = part(id, index, 'type')
    return [{ index, source: normalizeIdPart(id.source), type: type === undefined ? undefined : normalizeIdPart(type), value: part(id, index, 'value') }]
  })
}
