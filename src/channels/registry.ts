/** The channels this process can use, found by a campaign's provider and channel. */
import type { Provider } from '../domain/campaignSettings.ts'
import type { Channel as ChannelName } from '../domain/types.ts'
import type { Channel } from './channel.ts'

export class ChannelRegistry {
  readonly #channels = new Map<string, Channel>()

  constructor(channels: readonly Channel[]) {
    for (const channel of channels) this.#channels.set(`${channel.provider}/${channel.channel}`, channel)
  }

  /** Undefined when the provider does not serve that channel (Twilio places calls only). */
  find(provider: Provider, channel: ChannelName): Channel | undefined {
    return this.#channels.get(`${provider}/${channel}`)
  }

  get(provider: Provider, channel: ChannelName): Channel {
    const found = this.find(provider, channel)
    if (found === undefined) throw new Error(`no ${provider} channel for ${channel}`)
    return found
  }
}
