/**
 * Recording accepted triggers: each with its task, in group commits. A
 * trigger is answered 201 only once its own rows are committed.
 */
import type { ServiceMetrics } from './metrics.ts'
import { createHash } from 'node:crypto'
import { type Span, SpanStatusCode } from '@opentelemetry/api'
import { newId } from '../domain/ids.ts'
import { compareCodeUnits } from '../domain/text.ts'
import { firstDueAt } from '../domain/triggerTiming.ts'
import type { ConsentKind, Purpose } from '../domain/callingLaw.ts'
import type { CandidateZones, Channel, Contact, ExternalId, JsonObject } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { rolledBack, sqlState } from '../store/rows.ts'
import { insertTriggersWithTasks, type NewTrigger, type RecordOutcome } from '../store/triggers.ts'
import { phoneDigestOf } from '../store/phoneHashKey.ts'
import type { ContactOnFile } from './contactDirectory.ts'
import { GroupCommitter } from './groupCommitter.ts'
import { tracing } from '../tracing.ts'
import type { Wake } from './wake.ts'

type Notification = ReturnType<Wake['notification']>

/** A trigger request as validated and normalized. */
export interface TriggerRequest {
  campaign: string
  /** RFC 3339, normalized to UTC ISO 8601. */
  not_before?: string
  expires_at?: string
  ids?: ExternalId[]
  contact?: Contact
  channel?: Channel
  context?: JsonObject
  test_mode?: boolean
  consent?: { kind: ConsentKind; source: string; captured_at: string; evidence?: string; expires_at?: string; purpose?: Purpose }
}

export interface Submitter {
  orgId: string
  apiKeyId: string
  requestId: string
  /** Size of the request body, which bounds the trigger's size. */
  bodyBytes: number
  /** The W3C traceparent of the request's span, while traces are on: recorded with the trigger. */
  traceParent?: string
}

/** A trigger checked and ready to record: who sent it, what it resolved to, and the request. */
export interface TriggerToRecord {
  submitter: Submitter
  target: {
    campaignId: string
    /** The contact reached when the request leaves `contact` out. */
    onFile: ContactOnFile | undefined
    /** The zones the reached contact's number tells, for a contact with no timezone sent or on file. */
    numberZones: CandidateZones | null
    /** The Idempotency-Key reserved for this trigger, under the trigger id given. */
    idempotency: { key: string; triggerId: string } | undefined
    /** The trigger's not_before (epoch ms), if it has one. */
    notBefore: number | undefined
    /** The consent it carries, on the campaign's channel, for its purpose or the one it names. */
    consent: { channel: Channel; purpose: Purpose } | undefined
  }
  request: TriggerRequest
}

export interface AcceptedTrigger {
  id: string
  taskId: string
  createdAt: string
}

/** What became of a trigger: accepted, or why it was not recorded. */
export type Recording = { kind: 'accepted'; accepted: AcceptedTrigger } | Exclude<RecordOutcome, { kind: 'recorded' }>

/**
 * Whether a trigger creates or updates the person its ids name. A test never
 * does: the tester's number is not the real person's.
 */
export function usesDirectory(request: TriggerRequest): boolean {
  return request.test_mode !== true && request.ids !== undefined && request.ids.length > 0
}

/** The 201's `data` for an accepted trigger; kept as is for an idempotent replay. */
export function acceptedData(accepted: AcceptedTrigger) {
  return { id: accepted.id, task_id: accepted.taskId, status: 'accepted' as const, created_at: accepted.createdAt }
}

/**
 * SQLSTATEs of a commit that collided with another over the contact
 * directory: it linked an id that the other linked first (unique_violation),
 * or they waited for each other (deadlock_detected).
 */
const DIRECTORY_COLLISIONS = new Set(['23505', '40P01'])
const MAX_COLLISIONS = 3

/**
 * One group commit. A batch of several triggers that collides is left to the
 * group committer, which records them one by one (two of them may link the
 * same new id). A single trigger cannot collide with itself: it collided with
 * another commit, now finished, and a new statement sees what that one wrote.
 */
async function commitRacingDirectory(db: Database, triggers: NewTrigger[], notify: Notification | undefined): Promise<RecordOutcome[]> {
  for (let collisions = 0; ; collisions++) {
    try {
      return await insertTriggersWithTasks(db, triggers, notify)
    } catch (error) {
      const retry = triggers.length === 1 && collisions < MAX_COLLISIONS && DIRECTORY_COLLISIONS.has(sqlState(error) ?? '')
      if (!retry) throw error
    }
  }
}

/** A group commit's span: its own trace, linked to the request of each trigger it records. */
function groupCommitSpan(triggers: readonly NewTrigger[]): Span {
  return tracing.start('group commit', {
    attributes: { 'cts.triggers': triggers.length },
    links: tracing.links(triggers.map((trigger) => ({ traceParent: trigger.traceParent, attributes: { 'cts.trigger_id': trigger.id } }))),
  })
}

/**
 * Up to this many triggers, and about this many bytes of them, share one
 * commit. On PostgreSQL a batch request's 1,000 triggers fit in one, and
 * larger commits cost each trigger less of both the server's CPU and
 * PostgreSQL's. Batches of 500, side by side: commits of up to 512 against
 * 256, 15,835 against 13,860 triggers/s (server 46 against 52 µs, PostgreSQL
 * 68 against 79 µs per trigger); 1,024 against 512, 17,345 against 15,981
 * (39 against 43 µs, 62 against 63 µs). PGlite runs a commit in this thread,
 * holding every other request while it runs: there a commit stays at 256.
 */
const MAX_BATCH = { postgres: 1024, pglite: 256 } as const
const MAX_BATCH_BYTES = 8 * 1024 * 1024

export class TriggerIntake {
  readonly #now: () => number
  readonly #phoneHashKey: Buffer
  readonly #committer: GroupCommitter<{ trigger: NewTrigger; bytes: number }, RecordOutcome>

  /** The workers hear through `wake` of each commit that recorded tasks: they are due at once. */
  constructor(db: Database, now: () => number, wake: Wake, metrics: ServiceMetrics, phoneHashKey: Buffer) {
    this.#now = now
    this.#phoneHashKey = phoneHashKey
    this.#committer = new GroupCommitter(
      async (items) => {
        metrics.groupCommits.observe({ committer: 'triggers' }, items.length)
        const triggers = items.map(({ trigger }) => trigger)
        const span = tracing.enabled ? groupCommitSpan(triggers) : undefined
        try {
          const outcomes = await commitRacingDirectory(db, triggers, wake.notification('tasks'))
          if (outcomes.some((outcome) => outcome.kind === 'recorded')) wake.written('tasks')
          span?.setAttribute('cts.recorded', outcomes.filter((outcome) => outcome.kind === 'recorded').length)
          return outcomes
        } catch (error) {
          span?.recordException(error as Error)
          span?.setStatus({ code: SpanStatusCode.ERROR })
          throw error
        } finally {
          span?.end()
        }
      },
      {
        maxBatch: MAX_BATCH[db.kind],
        maxBatchWeight: MAX_BATCH_BYTES,
        weigh: ({ bytes }) => bytes,
        // On a server two commits overlap, so one is always being built while
        // the other flushes; PGlite runs one statement at a time anyway.
        maxInFlight: Math.min(2, db.concurrency),
        // PGlite works in this thread: a commit started early would only make batches smaller.
        flushAtLength: db.concurrency > 1 ? 16 : Number.POSITIVE_INFINITY,
        // The batch is one statement: an error the server reports means it was
        // rolled back; without a SQLSTATE (a lost connection) the outcome is unknown.
        retryAlone: rolledBack,
      },
    )
  }

  /**
   * Records triggers, each with its task, due at once or at its not_before,
   * and what the contact directory learns from each: a trigger with ids, out
   * of test mode, creates or updates the contact they name. Submitted
   * together, so that a batch request's triggers fill whole group commits.
   * One answer per trigger, each settled when its own commit has: not
   * recorded when, by the time of the commit, the submitting key had been
   * revoked or the trigger's Idempotency-Key reservation taken over, or when
   * its ids turn out to name several contacts.
   */
  record(triggers: readonly TriggerToRecord[]): Promise<Recording>[] {
    const now = this.#now()
    const createdAt = new Date(now).toISOString()
    const prepared = triggers.map(({ submitter, target, request }) => {
      const id = target.idempotency?.triggerId ?? newId('trigger', now)
      const accepted: AcceptedTrigger = { id, taskId: newId('task', now), createdAt }
      const trigger: NewTrigger = {
        id,
        taskId: accepted.taskId,
        orgId: submitter.orgId,
        apiKeyId: submitter.apiKeyId,
        campaignId: target.campaignId,
        contactId: usesDirectory(request) ? (target.onFile?.contactId ?? newId('contact', now)) : null,
        numberZones: target.numberZones,
        requestId: submitter.requestId,
        ids: request.ids ?? [],
        contact: request.contact ?? null,
        context: request.context ?? {},
        testMode: request.test_mode ?? false,
        createdAt,
        notBefore: request.not_before ?? null,
        expiresAt: request.expires_at ?? null,
        // Due as it is recorded, unless its not_before is later.
        dueAt: new Date(firstDueAt({ notBefore: target.notBefore }, now)).toISOString(),
        idempotency: target.idempotency === undefined ? null : { key: target.idempotency.key, response: acceptedData(accepted) },
        ...consentOf(request, target.consent, this.#phoneHashKey, now),
        traceParent: submitter.traceParent,
      }
      return { accepted, item: { trigger, bytes: submitter.bodyBytes } }
    })
    const outcomes = this.#committer.submitAll(prepared.map(({ item }) => item))
    return outcomes.map(async (outcome, index): Promise<Recording> => {
      const recorded = await outcome
      return recorded.kind === 'recorded' ? { kind: 'accepted', accepted: prepared[index]!.accepted } : recorded
    })
  }

  /** Resolves once every trigger submitted so far has been answered. */
  drained(): Promise<void> {
    return this.#committer.drained()
  }
}

/** The consent a trigger carries, as its commit records it. */
function consentOf(request: TriggerRequest, target: TriggerToRecord['target']['consent'], phoneHashKey: Buffer, now: number): Pick<NewTrigger, 'consent'> {
  const sent = request.consent
  // A trigger carrying a consent sends contact.phone (triggerAcceptance.ts).
  if (sent === undefined || target === undefined || request.contact === undefined) return {}
  const consent = {
    id: newId('consent', now),
    phoneDigest: phoneDigestOf(phoneHashKey, request.contact.phone),
    channel: target.channel,
    purpose: target.purpose,
    kind: sent.kind,
    source: sent.source,
    capturedAt: sent.captured_at,
    evidence: sent.evidence ?? null,
    expiresAt: sent.expires_at ?? null,
  }
  return { consent }
}

/**
 * The same request, however its JSON was spaced, its keys ordered (at any
 * depth) or its defaults written out: the validated body with its defaults,
 * as canonical JSON.
 */
export function requestHash(body: TriggerRequest): Buffer {
  const complete = { ...body, ids: body.ids ?? [], context: body.context ?? {}, test_mode: body.test_mode ?? false }
  return createHash('sha256').update(canonicalJson(complete)).digest()
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined)
    return `{${entries.sort(([a], [b]) => compareCodeUnits(a, b)).map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value)
}
