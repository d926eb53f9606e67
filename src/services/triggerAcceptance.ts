/**
 * Accepting a trigger, the use case behind POST /api/v2/triggers: the
 * Idempotency-Key's reservation, the campaign, the organization's sources,
 * the contact on file, the contact's candidate zones, then the group commit.
 *
 * Every problem a request has is reported at once, as pydantic would: the
 * checks that depend on the organization's data run on the raw body even when
 * the schema refused some of it, on whatever parts of it can be read.
 */
import type { ServiceMetrics } from './metrics.ts'
import { ApiError, type ErrorDetail, ValidationFailed, valueError } from '../domain/errors.ts'
import { normalizeIdPart } from '../domain/externalIds.ts'
import { newId } from '../domain/ids.ts'
import { COMMON_WINDOW_DAYS, windowsMeet } from '../domain/schedule.ts'
import { firstDueAt, parseInstant, timingProblems, type TriggerTiming } from '../domain/triggerTiming.ts'
import { zonesOfPhone } from '../domain/timezones.ts'
import type { Campaign, CandidateZones, Contact } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { releaseKeys, reserveKeys } from '../store/idempotency.ts'
import { type Authenticator, type OrganizationPrincipal, unauthorized } from './authenticator.ts'
import type { CampaignDirectory } from './campaignDirectory.ts'
import { type ContactOnFile, contactOnFile, idsNameSeveralContacts, missingContact, type ReadableId, timezoneOnFile } from './contactDirectory.ts'
import { type SourceDirectory, sourceProblems } from './sourceDirectory.ts'
import { complianceOf, consentTimingProblems } from '../domain/consent.ts'
import { acceptedData, requestHash, type TriggerIntake, type TriggerRequest, type TriggerToRecord, usesDirectory } from './triggerIntake.ts'

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

/** One trigger as the transport received it: a request's body, or one item of a batch. */
export interface TriggerSubmission {
  /** The trigger as validated, or as sent when validation refused it (then `errors` is not empty). */
  body: unknown
  /** What validation refused, in the trigger and the headers. */
  errors: readonly ErrorDetail[]
  /** Its Idempotency-Key, checked; undefined when none was sent. */
  idempotencyKey: string | undefined
  requestId: string
  /** Size of the trigger's JSON, which bounds its share of a commit. */
  bodyBytes: number
  /** The W3C traceparent of the request's span, while traces are on. */
  traceParent?: string
}

export type AcceptedData = ReturnType<typeof acceptedData>

/**
 * What became of one trigger: recorded now, the first answer of an earlier
 * one with the same Idempotency-Key and body, refused with every problem it
 * has (422), refused for its Idempotency-Key (409), or not known to be
 * recorded because its commit failed (500).
 */
export type Acceptance =
  | { kind: 'accepted'; data: AcceptedData }
  | { kind: 'replay'; data: unknown }
  | { kind: 'invalid'; detail: ErrorDetail[] }
  | { kind: 'refused'; error: ApiError }
  | { kind: 'failed'; error: unknown }

/** How each kind of result is counted (conversation_trigger_triggers_total); a refusal, by its error's code. */
const TRIGGER_RESULT_LABELS: Partial<Record<Acceptance['kind'], { result: string; reason: string }>> = {
  accepted: { result: 'accepted', reason: 'recorded' },
  replay: { result: 'accepted', reason: 'replay' },
  invalid: { result: 'refused', reason: 'invalid' },
  failed: { result: 'refused', reason: 'failed' },
}

/** A reservation outlives any request; one older belongs to a process that died. */
const IDEMPOTENCY_LEASE_MS = 60_000
const IDEMPOTENCY_KEEP_MS = 24 * 3_600_000

const keyInUse = () => new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry in a moment.')
const keyReused = () => new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with another request body in the last 24 hours.')

const NO_ZONE =
  "the contact's time zone cannot be told from this phone number (a number of no country, such as +800, is placed in the campaign's fallback_timezone, and this campaign has none); send contact.timezone, the IANA zone the contact is in"

function noCommonWindow(zones: readonly string[]): string {
  return (
    `this number may be in any of ${zones.length} time zones (${zones.join(', ')}), and the campaign's windows are never open in all of them ` +
    `at once within the next ${COMMON_WINDOW_DAYS} days; send contact.timezone, the IANA zone the contact is in`
  )
}

type RawBody = Partial<Record<keyof TriggerRequest, unknown>>

/** A trigger's Idempotency-Key, reserved under the id its trigger will have. */
interface HeldKey {
  key: string
  triggerId: string
}

export class TriggerAcceptance {
  readonly #db: Database
  readonly #authenticator: Authenticator
  readonly #campaigns: CampaignDirectory
  readonly #sources: SourceDirectory
  readonly #intake: TriggerIntake
  readonly #now: () => number
  readonly #metrics: ServiceMetrics

  constructor(deps: {
    db: Database
    authenticator: Authenticator
    campaigns: CampaignDirectory
    sources: SourceDirectory
    intake: TriggerIntake
    now: () => number
    metrics: ServiceMetrics
  }) {
    this.#metrics = deps.metrics
    this.#db = deps.db
    this.#authenticator = deps.authenticator
    this.#campaigns = deps.campaigns
    this.#sources = deps.sources
    this.#intake = deps.intake
    this.#now = deps.now
  }

  /**
   * One trigger: recorded with its task, or a repeated request answered with
   * its first answer. Throws ValidationFailed with every problem the request
   * has, and ApiError for a reused or busy Idempotency-Key or a revoked key.
   */
  async accept(caller: Caller, submission: TriggerSubmission): Promise<{ kind: 'accepted' | 'replay'; data: unknown }> {
    const [acceptance] = await this.acceptAll(caller, [submission])
    if (acceptance!.kind === 'invalid') throw new ValidationFailed(acceptance!.detail)
    if (acceptance!.kind === 'refused' || acceptance!.kind === 'failed') throw acceptance!.error
    return acceptance!
  }

  /**
   * Many triggers of one request, each accepted or refused on its own as
   * {@link accept} would, their Idempotency-Keys reserved in one statement
   * and the accepted ones recorded together, in as few group commits as fit.
   * Answers once every one is settled, in the order given. Throws the 401
   * when the key turns out to be revoked before any was recorded; revoked
   * between two commits of one request, the triggers recorded before are
   * answered as recorded and the others each with the 401.
   */
  async acceptAll(caller: Caller, submissions: readonly TriggerSubmission[]): Promise<Acceptance[]> {
    const results: (Acceptance | undefined)[] = submissions.map(() => undefined)
    const errors = submissions.map((submission) => [...submission.errors])
    let held = new Map<number, HeldKey>()
    try {
      held = await this.#reserveKeys(caller, submissions, errors, results)
      await this.#checkAndRecord(caller, submissions, errors, held, results)
    } catch (error) {
      this.#metrics.triggers.inc({ result: 'refused', reason: error instanceof ApiError ? error.code : 'failed' }, submissions.length)
      throw error
    } finally {
      // Not recorded: the key may be used again. A failure to say so leaves it to expire with its lease; it must not hide why.
      const released = [...held].filter(([index]) => results[index]?.kind !== 'accepted').map(([, key]) => ({ key: key.key, token: key.triggerId }))
      await releaseKeys(this.#db, caller.principal.orgId, released).catch(() => {})
    }
    for (const result of results as Acceptance[]) this.#metrics.triggers.inc(TRIGGER_RESULT_LABELS[result.kind] ?? { result: 'refused', reason: (result as { error: ApiError }).error.code })
    return results as Acceptance[]
  }

  /** Checks the triggers that the keys left to decide, records those that pass, and sets each one's result. */
  async #checkAndRecord(
    caller: Caller,
    submissions: readonly TriggerSubmission[],
    errors: ErrorDetail[][],
    held: Map<number, HeldKey>,
    results: (Acceptance | undefined)[],
  ): Promise<void> {
    const toCheck = submissions.flatMap((submission, index) =>
      results[index] === undefined ? [{ index, trigger: this.#check(caller, submission, errors[index]!, held.get(index)) }] : [],
    )
    const checked = await Promise.allSettled(toCheck.map(({ trigger }) => trigger))
    const ready = toCheck.flatMap(({ index }, position) => {
      const outcome = checked[position]!
      if (outcome.status === 'fulfilled') return [{ index, trigger: outcome.value }]
      results[index] = outcome.reason instanceof ValidationFailed ? invalid(outcome.reason.detail) : { kind: 'failed', error: outcome.reason }
      return []
    })
    if (ready.length === 0) return
    const recordings = await Promise.allSettled(this.#intake.record(ready.map(({ trigger }) => trigger)))
    const notRecorded: number[] = []
    ready.forEach(({ index }, position) => {
      const recording = recordings[position]!
      if (recording.status === 'rejected') results[index] = { kind: 'failed', error: recording.reason }
      else if (recording.value.kind === 'accepted') results[index] = { kind: 'accepted', data: acceptedData(recording.value.accepted) }
      else if (recording.value.kind === 'conflict') {
        results[index] = invalid([idsNameSeveralContacts((submissions[index]!.body as TriggerRequest).ids, recording.value.named)])
      } else notRecorded.push(index)
    })
    if (notRecorded.length === 0) return
    // Campaigns are never deleted: only a key revoked since it was cached stops a commit, or a reservation
    // taken over after stalling past its lease (the request that took it answers).
    const keyValid = notRecorded.every((index) => held.has(index)) && (await this.#authenticator.confirm(caller.principal))
    if (!keyValid) {
      this.#authenticator.forget(caller.principal.keyId)
      if (!results.some((result) => result?.kind === 'accepted')) throw unauthorized()
    }
    for (const index of notRecorded) results[index] = { kind: 'refused', error: keyValid ? keyInUse() : unauthorized() }
  }

  /**
   * Reserves the Idempotency-Keys of the triggers that have one and no other
   * problem, in one statement, looked at before the campaign and the sources
   * so that a retry gets its first answer whatever changed since; the key is
   * confirmed first (one round trip), so that a replay never answers a
   * revoked key. Sets the result of each trigger the key decides (a replay, a
   * reused or busy key, a key given twice in one request) and returns the
   * keys now held, by index.
   */
  async #reserveKeys(
    caller: Caller,
    submissions: readonly TriggerSubmission[],
    errors: ErrorDetail[][],
    results: (Acceptance | undefined)[],
  ): Promise<Map<number, HeldKey>> {
    const wanted = new Map<number, HeldKey & { hash: Buffer }>()
    const firstWith = new Map<string, number>()
    submissions.forEach((submission, index) => {
      const key = submission.idempotencyKey
      if (key === undefined || errors[index]!.length > 0) return
      const first = firstWith.get(key)
      if (first !== undefined) {
        results[index] = invalid([valueError(['body', 'idempotency_key'], key, `idempotency_key is also that of item ${first} of this request`)])
        return
      }
      firstWith.set(key, index)
      wanted.set(index, { key, triggerId: newId('trigger', this.#now()), hash: requestHash(submission.body as TriggerRequest) })
    })
    const held = new Map<number, HeldKey>()
    if (wanted.size === 0) return held
    await caller.confirmKey()
    const entries = [...wanted]
    const reservations = await reserveKeys(
      this.#db,
      caller.principal.orgId,
      entries.map(([, { key, hash, triggerId }]) => ({ key, hash, token: triggerId })),
      this.#now(),
      IDEMPOTENCY_LEASE_MS,
      IDEMPOTENCY_KEEP_MS,
    )
    entries.forEach(([index, { key, triggerId }], position) => {
      const reservation = reservations[position]!
      if (reservation.kind === 'reserved') held.set(index, { key, triggerId })
      else if (reservation.kind === 'replay') results[index] = { kind: 'replay', data: reservation.response }
      else results[index] = { kind: 'refused', error: reservation.kind === 'reused' ? keyReused() : keyInUse() }
    })
    return held
  }

  /**
   * Checks what depends on the organization's campaigns, sources and contacts
   * and on the time, decides the contact's candidate zones, and returns the
   * trigger ready to record; throws ValidationFailed with every problem.
   */
  async #check(caller: Caller, submission: TriggerSubmission, errors: ErrorDetail[], idempotency: HeldKey | undefined): Promise<TriggerToRecord> {
    // The body as sent when validation failed, which may be anything; only an object has fields to check.
    const raw = isObject(submission.body) ? (submission.body as RawBody) : undefined
    const campaign = await this.#resolveCampaign(caller.principal.orgId, raw, errors)
    const organizationSources = await this.#sources.sourcesOf(caller.principal.orgId)
    const omitsContact = raw !== undefined && (raw.contact === undefined || raw.contact === null)
    // Read only when something checks them: most triggers carry a contact for an organization without sources.
    const ids = organizationSources.size > 0 || omitsContact ? readableIds(raw, errors) : []
    errors.push(...sourceProblems(organizationSources, ids, failed(errors, 'context') ? undefined : ((raw?.context ?? {}) as Record<string, unknown>)))
    const timing = readableTiming(raw, errors)
    const now = this.#now()
    errors.push(...timingProblems(timing, now).map(({ field, message }) => valueError(['body', field], raw![field], message)))
    let onFile: ContactOnFile | undefined
    if (omitsContact) {
      // A test needs the tester's number; otherwise the person may be on file.
      const found = raw.test_mode === true ? missingContact(raw) : await contactOnFile(this.#db, caller.principal.orgId, organizationSources, ids, raw)
      if ('contactId' in found) onFile = found
      else errors.push(found)
    }
    errors.push(...consentProblems(raw, errors, campaign, now))
    if (errors.length > 0 || campaign === undefined) throw new ValidationFailed(errors)
    const body = submission.body as TriggerRequest
    const numberZones = await this.#numberZones(caller.principal.orgId, campaign, body, body.contact ?? onFile!.contact, firstDueAt(timing, now))
    return {
      submitter: {
        orgId: caller.principal.orgId,
        apiKeyId: caller.principal.keyId,
        requestId: submission.requestId,
        bodyBytes: submission.bodyBytes,
        traceParent: submission.traceParent,
      },
      target: {
        campaignId: campaign.id,
        onFile,
        numberZones,
        idempotency,
        notBefore: timing.notBefore,
        consent: body.consent === undefined ? undefined : { channel: campaign.channel, purpose: body.consent.purpose ?? complianceOf(campaign.compliance, campaign).purpose },
      },
      request: body,
    }
  }

  /**
   * The candidate zones the reached contact's number tells, for the commit to
   * use unless the contact has a timezone, as sent or as on file; refused (a
   * 422) when the campaign follows the contact's zone and neither the number
   * nor the directory gives zones its windows are open in at once, within
   * the days after `from` (when the task is first due).
   */
  async #numberZones(orgId: string, campaign: Campaign, body: TriggerRequest, contact: Contact, from: number): Promise<CandidateZones | null> {
    if (contact.timezone !== undefined) return null
    const zones = zonesOfPhone(contact.phone, campaign.schedule.fallback_timezone)
    if (campaign.schedule.timezone !== 'contact') return zones ?? null
    if (zones !== undefined && windowsMeet(campaign.schedule, zones.zones, from)) return zones
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


/**
 * What refuses the consent a trigger carries beyond its fields' own rules:
 * a test (the number is the tester's), no contact.phone to record it for, a
 * WhatsApp opt-in for a voice campaign, a capture in the future, an expiry
 * before it.
 */
function consentProblems(raw: RawBody | undefined, errors: readonly ErrorDetail[], campaign: Campaign | undefined, now: number): ErrorDetail[] {
  const consent = raw?.consent as Record<string, unknown> | undefined
  if (consent === undefined || consent === null || failed(errors, 'consent')) return []
  const at = (...loc: string[]) => ['body', 'consent', ...loc]
  if (raw!.test_mode === true) return [valueError(at(), consent, "a consent is not recorded in test mode: the number is the tester's")]
  if (raw!.contact === undefined || raw!.contact === null) return [valueError(at(), consent, 'a consent is recorded for contact.phone: send the contact')]
  const problems: ErrorDetail[] = []
  if (consent.kind === 'whatsapp_opt_in' && campaign !== undefined && campaign.channel !== 'whatsapp') {
    problems.push(valueError(at('kind'), consent.kind, `whatsapp_opt_in is a consent of the whatsapp channel; the campaign is ${campaign.channel}`))
  }
  const instantOf = (field: string) => (failed(errors, 'consent', field) || typeof consent[field] !== 'string' ? undefined : Date.parse(consent[field] as string))
  for (const { field, message } of consentTimingProblems(instantOf('captured_at'), instantOf('expires_at'), now)) problems.push(valueError(at(field), consent[field], message))
  return problems
}

/** The not_before and expires_at of the body, as far as validation let them through. */
function readableTiming(raw: RawBody | undefined, errors: readonly ErrorDetail[]): TriggerTiming {
  const instant = (field: 'not_before' | 'expires_at') =>
    typeof raw?.[field] === 'string' && !failed(errors, field) ? parseInstant(raw[field] as string) : undefined
  return { notBefore: instant('not_before'), expiresAt: instant('expires_at') }
}

const invalid = (detail: ErrorDetail[]): Acceptance => ({ kind: 'invalid', detail })
