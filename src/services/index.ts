/**
 * The composition root: every service built once, from the configuration and
 * the process's dependencies, in one place. The HTTP app and the worker
 * process both take what they need from here; the workers themselves are
 * built from these services only where they run (src/workers/index.ts), so
 * an API-only process builds none.
 */
import type { ServiceMetrics } from './metrics.ts'
import type { FastifyBaseLogger } from 'fastify'
import type { Channels } from '../channels/index.ts'
import type { HistoryBounds } from '../domain/retention.ts'
import type { Database } from '../store/database.ts'
import type { Operations } from './administration.ts'
import { Authenticator } from './authenticator.ts'
import { CampaignDirectory } from './campaignDirectory.ts'
import { CampaignPauses } from './campaignPauses.ts'
import { Conversations } from './conversations.ts'
import { SessionMessages } from './sessionMessages.ts'
import { Dispatch } from './dispatch.ts'
import type { ErasureOperations } from './erasure.ts'
import { HistorySweep } from './history.ts'
import { LearnedTiming } from './learnedTiming.ts'
import { Settlement } from './settlement.ts'
import { SourceDirectory } from './sourceDirectory.ts'
import type { SuppressionOperations } from './suppressions.ts'
import type { ConsentOperations } from './consents.ts'
import { CallingLaw } from './callingLaw.ts'
import type { ContactabilityOperations } from './contactability.ts'
import type { RegistryOperations } from './registries.ts'
import { TaskLifecycle } from './taskLifecycle.ts'
import { ProviderCallbacks } from './providerCallbacks.ts'
import { TwilioCalls } from './twilioCalls.ts'
import { TwilioMessages } from './twilioMessages.ts'
import { InboundCalls } from './inboundCalls.ts'
import { WhatsAppNotifications } from './whatsappNotifications.ts'
import { TriggerAcceptance } from './triggerAcceptance.ts'
import { TriggerIntake } from './triggerIntake.ts'
import { Wake } from './wake.ts'
import type { WebhookOperations } from './webhookAdministration.ts'

/** The NOTIFY channel that carries wake-ups between processes sharing one PostgreSQL. */
export const WAKE_CHANNEL = 'cts_wake'

export interface ServiceDeps {
  db: Database
  channels: Channels
  /** Milliseconds since the epoch; injected so that tests control time. */
  now: () => number
  log: FastifyBaseLogger
  operatorToken: string
  /** Reads /metrics and nothing else; without it only the operator token does. */
  metricsToken: string | undefined
  /** The key of the digest an erased suppression keeps of its number. */
  phoneHashKey: Buffer
  /** Webhook endpoints may be private or plain-http addresses (local development, tests). */
  allowPrivateWebhookUrls: boolean
  /** How long endpoint health and the audit log are kept. */
  historyBounds: HistoryBounds
  metrics: ServiceMetrics
}

export interface Services {
  db: Database
  now: () => number
  channels: Channels
  metrics: ServiceMetrics
  wake: Wake
  authenticator: Authenticator
  campaigns: CampaignDirectory
  pauses: CampaignPauses
  sources: SourceDirectory
  intake: TriggerIntake
  acceptance: TriggerAcceptance
  settlement: Settlement
  lifecycle: TaskLifecycle
  providerCallbacks: ProviderCallbacks
  twilioCalls: TwilioCalls
  twilioMessages: TwilioMessages
  whatsappNotifications: WhatsAppNotifications
  conversations: Conversations
  sessionMessages: SessionMessages
  dispatch: Dispatch
  admin: Operations
  webhooks: WebhookOperations
  suppressions: SuppressionOperations
  consents: ConsentOperations
  contactability: ContactabilityOperations
  registries: RegistryOperations
  erasure: ErasureOperations
  history: HistorySweep
  /** Answers every trigger and outcome submitted so far. */
  drained(): Promise<void>
}

/** The process's wake-ups; also for a process with no services of its own (the CLI), whose changes the workers of others must hear of. */
export function createWake(db: Database): Wake {
  const wake = new Wake()
  if (db.kind === 'postgres') {
    // Other processes may run workers on this database; on PGlite this process is the only one.
    wake.publishWith({
      channel: WAKE_CHANNEL,
      send: async (payload) => {
        await db.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, payload])
      },
    })
  }
  return wake
}

export function createServices(deps: ServiceDeps): Services {
  const { db, now, channels } = deps
  const wake = createWake(db)
  const authenticator = new Authenticator(db, { operatorToken: deps.operatorToken, metricsToken: deps.metricsToken })
  const campaigns = new CampaignDirectory(db, now)
  const sources = new SourceDirectory(db, now)
  const intake = new TriggerIntake(db, now, wake, deps.metrics, deps.phoneHashKey)
  const acceptance = new TriggerAcceptance({ db, authenticator, campaigns, sources, intake, now, metrics: deps.metrics })
  const law = new CallingLaw({ now })
  const settlement = new Settlement({ db, now, wake, metrics: deps.metrics, timing: new LearnedTiming({ now, law }) })
  const lifecycle = new TaskLifecycle({ db, channels: channels.registry, settlement, wake, now, metrics: deps.metrics })
  const conversations = new Conversations({ db, now, settlement, wake, metrics: deps.metrics })
  const inboundCalls = new InboundCalls({ db, conversations, now, log: deps.log })
  const dispatch = new Dispatch({ db, channels: channels.registry, settlement, wake, now, log: deps.log, metrics: deps.metrics, phoneHashKey: deps.phoneHashKey, law })
  return {
    db,
    now,
    channels,
    metrics: deps.metrics,
    wake,
    authenticator,
    campaigns,
    pauses: new CampaignPauses({ db, now, wake }),
    sources,
    intake,
    acceptance,
    settlement,
    lifecycle,
    providerCallbacks: new ProviderCallbacks({ db, lifecycle, inboundCalls, now, log: deps.log }),
    conversations,
    sessionMessages: new SessionMessages({ db, channels: channels.registry, now, phoneHashKey: deps.phoneHashKey }),
    twilioCalls: new TwilioCalls({ db, twilio: channels.twilio, lifecycle, conversations, inboundCalls, now, log: deps.log }),
    twilioMessages: new TwilioMessages({ db, channel: channels.twilioMessaging, lifecycle, now, log: deps.log, phoneHashKey: deps.phoneHashKey }),
    whatsappNotifications: new WhatsAppNotifications({ db, secret: channels.secret, lifecycle, now, log: deps.log }),
    dispatch,
    admin: { db, now, channels: channels.registry },
    webhooks: { db, now, allowPrivateWebhookUrls: deps.allowPrivateWebhookUrls, onRedeliver: () => wake.deliveries() },
    suppressions: { db, now, phoneHashKey: deps.phoneHashKey },
    consents: { db, now, phoneHashKey: deps.phoneHashKey },
    contactability: { db, now, phoneHashKey: deps.phoneHashKey, law },
    registries: { db, now, phoneHashKey: deps.phoneHashKey, law },
    erasure: { db, now, phoneHashKey: deps.phoneHashKey, wake, metrics: deps.metrics },
    history: new HistorySweep({ db, now, phoneHashKey: deps.phoneHashKey, bounds: deps.historyBounds, metrics: deps.metrics, log: deps.log }),
    async drained() {
      await intake.drained()
      await settlement.drained()
    },
  }
}
