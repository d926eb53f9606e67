/**
 * The organization's own control over its campaigns (scope
 * campaigns:manage): pausing and resuming outreach by routing key. The
 * campaigns' settings (provider, schedule, ...) stay the operator's, and are
 * not shown here.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Campaign, Channel } from '../../domain/types.ts'
import type { Authenticator } from '../../services/authenticator.ts'
import { type CampaignPauses, PAUSE_ACTIONS, type PauseAction } from '../../services/campaignPauses.ts'
import { actorOf, organizationOf, requireOrganizationKey } from '../auth.ts'
import { envelope } from '../reply.ts'
import { authErrors, ChannelSchema, Envelope, notFound, Timestamp, validationErrors } from '../schemas.ts'
import { component } from '../openapi.ts'

const CampaignStateSchema = component('CampaignState', Type.Object({
  routing_key: Type.String({ examples: ['screening'] }),
  channel: ChannelSchema,
  paused: Type.Boolean({ description: 'True while no attempt of the campaign starts.' }),
  paused_at: Type.Union([Timestamp, Type.Null()], { description: 'When it was paused; null while it runs.' }),
}))

const presentCampaignState = (campaign: Campaign) => ({
  routing_key: campaign.routingKey,
  channel: campaign.channel,
  paused: campaign.pausedAt !== null,
  paused_at: campaign.pausedAt,
})

const RoutingKeyParams = Type.Object({ routing_key: Type.String({ minLength: 1, maxLength: 100, description: 'What triggers send as `campaign`.' }) })

const ChannelQuery = Type.Object({
  channel: Type.Optional({ ...ChannelSchema, description: "Only the routing key's campaign on this channel; without it, every one of its campaigns." }),
})

const CAMPAIGN_STATES_RESPONSE = { 200: Envelope(Type.Array(CampaignStateSchema)), ...authErrors, ...notFound, ...validationErrors }

const ROUTING_KEY_DOCS: Record<PauseAction, { operationId: string; summary: string; description: string }> = {
  pause: {
    operationId: 'pauseCampaign',
    summary: 'Pause a campaign',
    description:
      "No new attempt starts on the routing key's campaigns (or its one on `channel`) until they are resumed. Triggers are still accepted (201) and their tasks wait; calls and conversations already running finish and are reported, and their retries wait too. Pausing a paused campaign keeps its `paused_at`. Answers the campaigns paused.",
  },
  resume: {
    operationId: 'resumeCampaign',
    summary: 'Resume a paused campaign',
    description:
      "The routing key's campaigns (or its one on `channel`) start attempts again: the tasks that fell due while they were paused start at once, within their schedule. Resuming a campaign that runs changes nothing. Answers the campaigns resumed.",
  },
}

export function campaignPauseRoutes(app: FastifyInstance, deps: { authenticator: Authenticator; pauses: CampaignPauses }) {
  const { authenticator, pauses } = deps
  const docs = { tags: ['campaigns'], security: [{ apiKey: [] }] }
  const selected = (request: FastifyRequest) => ({
    routingKey: (request.params as { routing_key: string }).routing_key,
    channel: (request.query as { channel?: Channel }).channel,
  })

  for (const action of PAUSE_ACTIONS) {
    app.post(
      `/api/v2/campaigns/:routing_key/${action}`,
      {
        onRequest: requireOrganizationKey(authenticator, 'campaigns:manage'),
        schema: { ...docs, ...ROUTING_KEY_DOCS[action], params: RoutingKeyParams, querystring: ChannelQuery, response: CAMPAIGN_STATES_RESPONSE },
      },
      async (request, reply) => {
        const { routingKey, channel } = selected(request)
        const campaigns = await pauses.ofRoutingKey(action, actorOf(request), organizationOf(request).orgId, routingKey, channel)
        return reply.send(envelope(request, campaigns.map(presentCampaignState)))
      },
    )
  }
}
