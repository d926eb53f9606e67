/** The success envelope and the error handling shared by every route. */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, type ErrorCode, STATUS_BY_CODE, ValidationFailed } from '../domain/errors.ts'
import type { Authenticator } from '../services/authenticator.ts'
import { confirmBeforeAnswering } from './auth.ts'

export function envelope<T>(request: FastifyRequest, data: T) {
  return { data, metadata: { request_id: request.id } }
}

export function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string) {
  if (code === 'unauthorized') reply.header('www-authenticate', 'Bearer')
  return reply.code(STATUS_BY_CODE[code]).send({ error: { code, message }, metadata: { request_id: request.id } })
}

/** Fastify's own errors that are the client's doing, by Fastify error code. */
const CLIENT_ERRORS: Record<string, { code: ErrorCode; message?: (request: FastifyRequest) => string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    code: 'payload_too_large',
    message: (request) => `The request body is larger than ${request.routeOptions.bodyLimit! / (1024 * 1024)} MiB.`,
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'bad_request' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'bad_request' },
  FST_ERR_BAD_URL: { code: 'bad_request' },
  FST_ERR_ASYNC_CONSTRAINT: { code: 'bad_request' },
}

export function installErrorHandling(app: FastifyInstance, authenticator: Authenticator) {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof ApiError) {
      if (error.retryAfterS !== undefined) reply.header('retry-after', String(error.retryAfterS))
      return sendError(request, reply, error.code, error.message)
    }
    const clientError = CLIENT_ERRORS[error.code]
    if (error instanceof ValidationFailed || clientError !== undefined) {
      // A refused body is no reason to answer a revoked key with anything but 401.
      try {
        await confirmBeforeAnswering(authenticator, request)
      } catch (refusal) {
        if (refusal instanceof ApiError) return sendError(request, reply, refusal.code, refusal.message)
        throw refusal
      }
      if (error instanceof ValidationFailed) return reply.code(422).send({ detail: error.detail })
      return sendError(request, reply, clientError!.code, clientError!.message?.(request) ?? error.message)
    }
    if (request.raw.readableAborted) {
      // The client closed its connection (or let it time out) before its request was read: routine, and no one is left to answer.
      request.log.info({ method: request.method, route: request.routeOptions.url, err: error }, 'request abandoned by the client')
      return sendError(request, reply, 'bad_request', 'The request was not read to its end.')
    }
    request.log.error({ err: error }, 'request failed')
    return sendError(request, reply, 'internal_error', 'The request could not be completed because of an error on our side.')
  })

  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, 'not_found', `There is no ${request.method} ${request.url.split('?')[0]} endpoint.`),
  )
}
