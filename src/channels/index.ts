/** Every channel this service offers, configured from the service's configuration. */
import type { Config } from '../config.ts'
import type { CallCallback } from './callbacks.ts'
import { ElevenLabsChannel } from './elevenlabs/elevenlabsChannel.ts'
import { ChannelRegistry } from './registry.ts'
import { RetellChannel } from './retell/retellChannel.ts'
import { SimulatorChannel } from './simulator/simulatorChannel.ts'
import { TwilioMessagingChannel } from './twilio/messagingChannel.ts'
import { TwilioChannel } from './twilio/twilioChannel.ts'
import { VapiChannel } from './vapi/vapiChannel.ts'
import { WhatsAppCloudChannel } from './whatsappCloud/whatsappCloudChannel.ts'

export type ChannelSettings = Pick<Config, 'publicBaseUrl' | 'twilioApiBaseUrl' | 'whatsappApiBaseUrl'>
  /** The agent platforms' APIs: optional, so that a setup need not name them; each channel's default is the platform's own. */
  & Partial<Pick<Config, 'vapiApiBaseUrl' | 'retellApiBaseUrl' | 'elevenlabsApiBaseUrl'>>

export interface Channels {
  registry: ChannelRegistry
  /** The provider adapters by name, for their callback routes. */
  twilio: TwilioChannel
  twilioMessaging: TwilioMessagingChannel
  whatsappCloud: WhatsAppCloudChannel
  vapi: VapiChannel
  retell: RetellChannel
  elevenlabs: ElevenLabsChannel
  /** The agent platforms' callbacks about their calls, each served at its own path (http/routes/providers/callCallbacks.ts). */
  callCallbacks: readonly CallCallback<unknown>[]
  /** Reads a credential by the environment variable name a campaign's provider_config gives. */
  secret: (name: string) => string | undefined
}

export function createChannels(settings: ChannelSettings, secret: (name: string) => string | undefined): Channels {
  const twilio = new TwilioChannel({ apiBaseUrl: settings.twilioApiBaseUrl, publicBaseUrl: settings.publicBaseUrl, secret })
  const twilioMessaging = new TwilioMessagingChannel({ apiBaseUrl: settings.twilioApiBaseUrl, publicBaseUrl: settings.publicBaseUrl, secret })
  const whatsappCloud = new WhatsAppCloudChannel({ apiBaseUrl: settings.whatsappApiBaseUrl, secret })
  const vapi = new VapiChannel({ apiBaseUrl: settings.vapiApiBaseUrl, secret })
  const retell = new RetellChannel({ apiBaseUrl: settings.retellApiBaseUrl, secret })
  const elevenlabs = new ElevenLabsChannel({ apiBaseUrl: settings.elevenlabsApiBaseUrl, secret })
  return {
    registry: new ChannelRegistry([new SimulatorChannel('voice'), new SimulatorChannel('whatsapp'), new SimulatorChannel('sms'), twilio, twilioMessaging, whatsappCloud, vapi, retell, elevenlabs]),
    twilio,
    twilioMessaging,
    whatsappCloud,
    vapi,
    retell,
    elevenlabs,
    callCallbacks: [vapi.serverMessages, retell.webhook, elevenlabs.postCallWebhook],
    secret,
  }
}
