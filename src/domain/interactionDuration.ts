/**
 * How long an interaction lasted, in whole seconds, as the API and the
 * webhooks both report it: what the provider reported (a call's billed
 * duration), or else the time from its start to its end (a simulated call,
 * a WhatsApp conversation); null while it has not ended.
 */
export function interactionDurationS(interaction: { startedAt: string; endedAt: string | null; durationS: number | null }): number | null {
  if (interaction.durationS !== null) return interaction.durationS
  if (interaction.endedAt === null) return null
  return Math.max(0, Math.round((Date.parse(interaction.endedAt) - Date.parse(interaction.startedAt)) / 1000))
}
