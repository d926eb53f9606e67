/**
 * The dry run (POST /api/v2/contactability): the decision the dispatcher
 * would make for an attempt to this number at this instant, by a campaign
 * of the organization or for a purpose alone, from the same data it reads
 * (services/lawChecks.ts): the profiles in force, the number's consents, its
 * suppression, the registries that list it, the attempts a law's cap counted.
 */
import type { Purpose } from '../domain/callingLaw.ts'
import { type Compliance, complianceOf } from '../domain/consent.ts'
import { contactabilityInput, type Decision, decideContactability } from '../domain/contactability.ts'
import { ApiError, ValidationFailed, valueError } from '../domain/errors.ts'
import { jurisdictionsOfNumber } from '../domain/jurisdictions.ts'
import { type ScheduleInZones, scheduleZones } from '../domain/schedule.ts'
import { zonesOfPhone } from '../domain/timezones.ts'
import type { Channel } from '../domain/types.ts'
import { findCampaignsByRoutingKey } from '../store/campaigns.ts'
import { consentsOfNumbers } from '../store/consents.ts'
import type { Database } from '../store/database.ts'
import { readLawAttempts } from '../store/lawAttempts.ts'
import { numberKey } from '../store/numberAttempts.ts'
import { findSuppression } from '../store/suppressions.ts'
import type { CallingLaw } from './callingLaw.ts'
import { numberDigests, registryListings } from './lawChecks.ts'

export interface ContactabilityOperations {
  db: Database
  now: () => number
  phoneHashKey: Buffer
  law: CallingLaw
}

export type DryRun = { phone: string; channel: Channel; at?: number } & ({ purpose: Purpose; artificialVoice: boolean } | { campaign: string })

export async function dryRun(ops: ContactabilityOperations, orgId: string, ask: DryRun): Promise<Decision> {
  const at = ask.at ?? ops.now()
  const candidate = zonesOfPhone(ask.phone, undefined)
  let nature: Compliance
  let campaignWindow: ScheduleInZones | undefined
  if ('campaign' in ask) {
    const campaign = (await findCampaignsByRoutingKey(ops.db, orgId, ask.campaign)).find((each) => each.channel === ask.channel)
    if (campaign === undefined) throw new ValidationFailed([valueError(['body', 'campaign'], ask.campaign, `the organization has no ${ask.channel} campaign with routing key '${ask.campaign}'`)])
    nature = complianceOf(campaign.compliance, campaign)
    const zones = scheduleZones(campaign.schedule, candidate?.zones ?? [])
    if (zones.length === 0) throw new ApiError('bad_request', "No zone can be told from this number (of no country), and the campaign's schedule has no fallback_timezone.")
    campaignWindow = { schedule: campaign.schedule, zones }
  } else {
    // By purpose alone: a campaign's defaults for it.
    nature = complianceOf({ purpose: ask.purpose, artificial_voice: ask.artificialVoice }, { routingKey: '', channel: ask.channel, provider: 'simulator' })
  }
  const { profiles, registries } = await ops.law.current(ops.db)
  const number = { orgId, phone: ask.phone }
  const digests = numberDigests(ops.phoneHashKey, ask.phone)
  const [consents, pastAttempts, suppression, listings] = await Promise.all([
    consentsOfNumbers(ops.db, [{ ...number, digest: digests.consent }]),
    readLawAttempts(ops.db, ops.phoneHashKey, number),
    findSuppression(ops.db, ops.phoneHashKey, orgId, ask.phone),
    registryListings(ops.db, registries, [{ orgId, purpose: nature.purpose, digest: digests.registry }]),
  ])
  return decideContactability(
    contactabilityInput(nature, {
      suppressed: suppression !== undefined,
      channel: ask.channel,
      jurisdictions: jurisdictionsOfNumber(ask.phone),
      zones: candidate?.zones ?? [],
      profiles,
      campaignWindow,
      consents: consents.get(numberKey(number)) ?? [],
      registries: listings[0]!,
      pastAttempts,
    }),
    at,
  )
}
