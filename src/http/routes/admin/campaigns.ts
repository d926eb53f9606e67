import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Campaign, Channel, JsonObject } from '../../../domain/types.ts'
import { createCampaign, listCampaigns, type Operations } from '../../../services/administration.ts'
import type { Authenticator } from '../../../services/authenticator.ts'
import type { CampaignDirectory } from '../../../services/campaignDirectory.ts'
import { requireOperator } from '../../auth.ts'
import { adminDocs, OrgParams } from './shared.ts'
import { envelope } from '../../reply.ts'
import { authErrors, ChannelSchema, conflict, Envelope, notFound, Timestamp, validationErrors } from '../../schemas.ts'

const CampaignSchema = Type.Object({
  id: Type.String(),
  routing_key: Type.String(),
  channel: ChannelSchema,
  name: Type.String(),
  context: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
})

export const CreateCampaignBody = Type.Object({
  routing_key: Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
    description: 'What triggers send as `campaign`: letters, digits, dot, dash, underscore.',
  }),
  channel: ChannelSchema,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  context: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 50, description: 'Default task context.' })),
})

export const presentCampaign = (campaign: Campaign) => ({
  id: campaign.id,
  routing_key: campaign.routingKey,
  channel: campaign.channel,
  name: campaign.name,
  context: campaign.context,
  created_at: campaign.createdAt,
})

export function campaignRoutes(
  app: FastifyInstance,
  deps: { ops: Operations; authenticator: Authenticator; campaigns: CampaignDirectory },
) {
  const { ops, authenticator, campaigns } = deps

  app.post(
    '/admin/v1/organizations/:org_id/campaigns',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        summary: 'Create a campaign',
        description: 'A routing key may have one campaign per channel.',
        params: OrgParams,
        body: CreateCampaignBody,
        response: { 201: Envelope(CampaignSchema), ...authErrors, ...notFound, ...conflict, ...validationErrors },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      const body = request.body as { routing_key: string; channel: Channel; name?: string; context?: JsonObject }
      const campaign = await createCampaign(ops, org_id, body)
      campaigns.forget(org_id, campaign.routingKey)
      return reply.code(201).send(envelope(request, presentCampaign(campaign)))
    },
  )

  app.get(
    '/admin/v1/organizations/:org_id/campaigns',
    {
      onRequest: requireOperator(authenticator),
      schema: {
        ...adminDocs,
        summary: "List an organization's campaigns",
        params: OrgParams,
        response: { 200: Envelope(Type.Array(CampaignSchema)), ...authErrors, ...notFound },
      },
    },
    async (request, reply) => {
      const { org_id } = request.params as { org_id: string }
      return reply.send(envelope(request, (await listCampaigns(ops, org_id)).map(presentCampaign)))
    },
  )
}
