/** Every channel this service offers, configured from the service's configuration. */
import type { Config } from '../config.ts'
import { ElevenLabsChannel } from './elevenlabs/elevenlabsChannel.ts'
import { ChannelRegistry } from './registry.ts'
import { RetellChannel } from './retell/retellChannel.ts'
import { SimulatorChannel } from './simulator/simulatorChannel.ts'
import { TwilioChannel } from './twilio/twilioChannel.ts'
import { WhatsAppCloudChannel } from './whatsappCloud/whatsappCloudChannel.ts'

export type ChannelSettings = Pick<Config, 'publicBaseUrl' | 'twilioApiBaseUrl' | 'whatsappApiBaseUrl'>
  /** The agent platforms' APIs; each channel's default (the platform's own) when absent. */
  & Partial<Pick<Config, 'retellApiBaseUrl' | 'elevenlabsApiBaseUrl'>>

export interface Channels {
  registry: ChannelRegistry
  /** The provider adapters by name, for their callback routes. */
  twilio: TwilioChannel
  whatsappCloud: WhatsAppCloudChannel
  retell: RetellChannel
  elevenlabs: ElevenLabsChannel
  /** Reads a credential by the environment variable name a campaign's provider_config gives. */
  secret: (name: string) => string | undefined
}

export function createChannels(settings: ChannelSettings, secret: (name: string) => string | undefined): Channels {
  const twilio = new TwilioChannel({ apiBaseUrl: settings.twilioApiBaseUrl, publicBaseUrl: settings.publicBaseUrl, secret })
  const whatsappCloud = new WhatsAppCloudChannel({ apiBaseUrl: settings.whatsappApiBaseUrl, secret })
  const retell = new RetellChannel({ apiBaseUrl: settings.retellApiBaseUrl, secret })
  const elevenlabs = new ElevenLabsChannel({ apiBaseUrl: settings.elevenlabsApiBaseUrl, secret })
  return {
    registry: new ChannelRegistry([new SimulatorChannel('voice'), new SimulatorChannel('whatsapp'), twilio, whatsappCloud, retell, elevenlabs]),
    twilio,
    whatsappCloud,
    retell,
    elevenlabs,
    secret,
  }
}
