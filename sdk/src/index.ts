export {
  ConversationTriggerClient,
  type ClientOptions,
  type CreateTriggerOptions,
  type IdempotentRequestOptions,
  type Page,
  type RequestOptions,
} from './client.js'
export {
  AbortedError,
  ApiError,
  type ApiErrorInit,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  ConversationTriggerError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  TimeoutError,
  ValidationError,
  WebhookVerificationError,
} from './errors.js'
export { verifyWebhook, type VerifyOptions, type WebhookHeaders } from './webhooks.js'
export type * from './types.js'
