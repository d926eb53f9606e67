-- Voice agent platforms, each behind the channel port as a provider of voice
-- campaigns: Vapi, Retell and ElevenLabs Agents. The database accepts them
-- here; a campaign can name one once its adapter is registered (PROVIDERS in
-- src/domain/campaignSettings.ts), which the API checks first.
-- campaigns_provider_check is the name PostgreSQL gave the inline CHECK of 002.
ALTER TABLE campaigns DROP CONSTRAINT campaigns_provider_check;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_provider_check
  CHECK (provider IN ('simulator', 'twilio', 'whatsapp_cloud', 'vapi', 'retell', 'elevenlabs'));
