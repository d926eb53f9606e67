/** The operator's admin API under /admin/v1, guarded by the operator token. */
import type { FastifyInstance } from 'fastify'
import type { Operations } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import type { CampaignDirectory } from '../../../services/campaignDirectory.ts'
import type { CampaignPauses } from '../../../services/campaignPauses.ts'
import { apiKeyRoutes } from './apiKeys.ts'
import { auditLogRoutes } from './auditLog.ts'
import { campaignRoutes } from './campaigns.ts'
import { organizationRoutes } from './organizations.ts'
import { queueRoutes } from './queues.ts'
import { sourceRoutes } from './sources.ts'
import type { SourceDirectory } from '../../../services/sourceDirectory.ts'
import type { CallingLaw } from '../../../services/callingLaw.ts'
import type { RegistryOperations } from '../../../services/registries.ts'
import { complianceRoutes } from './compliance.ts'

export function adminRoutes(
  app: FastifyInstance,
  deps: {
    ops: Operations
    authenticator: Authenticator
    campaigns: CampaignDirectory
    pauses: CampaignPauses
    sources: SourceDirectory
    law: CallingLaw
    registries: RegistryOperations
  },
) {
  organizationRoutes(app, deps)
  apiKeyRoutes(app, deps)
  campaignRoutes(app, deps)
  sourceRoutes(app, deps)
  queueRoutes(app, deps)
  auditLogRoutes(app, deps)
  complianceRoutes(app, { db: deps.ops.db, authenticator: deps.authenticator, law: deps.law, registries: deps.registries })
}
