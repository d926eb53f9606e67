/** Every channel this service offers, configured from the service's configuration. */
import type { Config } from '../config.ts'
import { ChannelRegistry } from './registry.ts'
import { SimulatorChannel } from './simulator/simulatorChannel.ts'
import { TwilioChannel } from './twilio/twilioChannel.ts'
import { VapiChannel } from './vapi/vapiChannel.ts'
import { WhatsAppCloudChannel } from './whatsappCloud/whatsappCloudChannel.ts'

export type ChannelSettings = Pick<Config, 'publicBaseUrl' | 'twilioApiBaseUrl' | 'whatsappApiBaseUrl'> &
  /** Optional, so that a setup without Vapi need not name it: its default is Vapi's own API. */
  Partial<Pick<Config, 'vapiApiBaseUrl'>>

export interface Channels {
  registry: ChannelRegistry
  /** The provider adapters by name, for their callback routes. */
  twilio: TwilioChannel
  whatsappCloud: WhatsAppCloudChannel
  vapi: VapiChannel
  /** Reads a credential by the environment variable name a campaign's provider_config gives. */
  secret: (name: string) => string | undefined
}

export function createChannels(settings: ChannelSettings, secret: (name: string) => string | undefined): Channels {
  const twilio = new TwilioChannel({ apiBaseUrl: settings.twilioApiBaseUrl, publicBaseUrl: settings.publicBaseUrl, secret })
  const whatsappCloud = new WhatsAppCloudChannel({ apiBaseUrl: settings.whatsappApiBaseUrl, secret })
  const vapi = new VapiChannel({ apiBaseUrl: settings.vapiApiBaseUrl, secret })
  return {
    registry: new ChannelRegistry([new SimulatorChannel('voice'), new SimulatorChannel('whatsapp'), twilio, whatsappCloud, vapi]),
    twilio,
    whatsappCloud,
    vapi,
    secret,
  }
}
