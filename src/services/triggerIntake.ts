/**
 * Accepting a trigger: pick its campaign, then record the trigger and its task
 * in a group commit. A trigger is answered 201 only once its own rows are
 * committed.
 */
import { newId } from '../domain/ids.ts'
import type { Channel, Contact, ExternalId, JsonObject } from '../domain/types.ts'
import type { Database } from '../store/database.ts'
import { sqlState } from '../store/rows.ts'
import { insertTriggersWithTasks, type NewTrigger } from '../store/triggers.ts'
import { CampaignDirectory, type CampaignChoice } from './campaignDirectory.ts'
import { GroupCommitter } from './groupCommitter.ts'

/** A trigger request as validated and normalized. */
export interface TriggerRequest {
  campaign: string
  ids?: ExternalId[]
  contact: Contact
  channel?: Channel
  context?: JsonObject
  test_mode?: boolean
}

export interface Submitter {
  orgId: string
  apiKeyId: string
  requestId: string
}

export interface AcceptedTrigger {
  id: string
  taskId: string
  createdAt: string
}

/** Up to this many triggers share one commit. */
const MAX_BATCH = 256

export class TriggerIntake {
  readonly campaigns: CampaignDirectory
  readonly #now: () => number
  readonly #committer: GroupCommitter<NewTrigger, boolean>

  constructor(db: Database, now: () => number) {
    this.#now = now
    this.campaigns = new CampaignDirectory(db, now)
    this.#committer = new GroupCommitter(
      async (triggers) => {
        const recorded = await insertTriggersWithTasks(db, triggers)
        return triggers.map((trigger) => recorded.has(trigger.id))
      },
      {
        maxBatch: MAX_BATCH,
        // On a server two commits overlap, so one is always being built while
        // the other flushes; PGlite runs one statement at a time anyway.
        maxInFlight: Math.min(2, db.concurrency),
        // The batch is one statement: an error the server reports means it was
        // rolled back; without a SQLSTATE (a lost connection) the outcome is unknown.
        retryAlone: (error) => {
          const state = sqlState(error)
          return state !== undefined && !state.startsWith('08')
        },
      },
    )
  }

  /** The campaign a trigger names, or the 422 entry that says why it names none. */
  chooseCampaign(orgId: string, routingKey: string, channel: Channel | undefined): Promise<CampaignChoice> {
    return this.campaigns.choose(orgId, routingKey, channel)
  }

  /**
   * Records the trigger and its task, due now. Undefined when it was not
   * recorded because, by the time of the commit, the submitting key had been
   * revoked or the campaign no longer existed.
   */
  async record(submitter: Submitter, campaignId: string, request: TriggerRequest): Promise<AcceptedTrigger | undefined> {
    const now = this.#now()
    const trigger: NewTrigger = {
      id: newId('trigger', now),
      taskId: newId('task', now),
      orgId: submitter.orgId,
      apiKeyId: submitter.apiKeyId,
      campaignId,
      requestId: submitter.requestId,
      ids: request.ids ?? [],
      contact: request.contact,
      context: request.context ?? {},
      testMode: request.test_mode ?? false,
      createdAt: new Date(now).toISOString(),
    }
    const recorded = await this.#committer.submit(trigger)
    return recorded ? { id: trigger.id, taskId: trigger.taskId, createdAt: trigger.createdAt } : undefined
  }

  /** Resolves once every trigger submitted so far has been answered. */
  drained(): Promise<void> {
    return this.#committer.drained()
  }
}
