export { ConversationTriggerClient, type ClientOptions, type CreateTriggerOptions, type Page, type RequestOptions } from './client.js'
export { ApiError, ConnectionError, ConversationTriggerError, WebhookVerificationError } from './errors.js'
export { verifyWebhook, type VerifyOptions, type WebhookHeaders } from './webhooks.js'
export type * from './types.js'
