/** The success envelope and the error handling shared by every route. */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, type ErrorCode, STATUS_BY_CODE, ValidationFailed } from '../domain/errors.ts'

export function envelope<T>(request: FastifyRequest, data: T) {
  return { data, metadata: { request_id: request.id } }
}

function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, message: string) {
  if (code === 'unauthorized') reply.header('www-authenticate', 'Bearer')
  return reply.code(STATUS_BY_CODE[code]).send({ error: { code, message }, metadata: { request_id: request.id } })
}

/** Fastify's own errors that are the client's doing, by Fastify error code. */
const CLIENT_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'bad_request',
  FST_ERR_BAD_URL: 'bad_request',
  FST_ERR_ASYNC_CONSTRAINT: 'bad_request',
}

export function installErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ValidationFailed) return reply.code(422).send({ detail: error.detail })
    if (error instanceof ApiError) return sendError(request, reply, error.code, error.message)
    const clientError = CLIENT_ERRORS[error.code]
    if (clientError === 'payload_too_large') {
      return sendError(request, reply, clientError, 'The request body is larger than 1 MiB.')
    }
    if (clientError !== undefined) return sendError(request, reply, clientError, error.message)
    request.log.error({ err: error }, 'request failed')
    return sendError(request, reply, 'internal_error', 'The request could not be completed because of an error on our side.')
  })

  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, 'not_found', `There is no ${request.method} ${request.url.split('?')[0]} endpoint.`),
  )
}
