/**
 * A span for each request, installed only while traces are on
 * (src/tracing.ts): a child of the request's W3C `traceparent`, when it has
 * one, else a new trace's root. Named and described by the route's template,
 * never its path or query (a path may name a contact, a query carry a token).
 */
import { type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { contextOfHeaders, traceParentOf, tracing } from '../tracing.ts'

const spans = new WeakMap<FastifyRequest, Span>()

export function installRequestSpans(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const span = tracing.start(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } },
      contextOfHeaders(request.headers),
    )
    spans.set(request, span)
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request)
    if (span !== undefined) {
      span.setAttribute('http.response.status_code', reply.statusCode)
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    }
    done()
  })
}

/** The request's span context as a W3C traceparent, to record with what the request starts; undefined while traces are off. */
export function requestTraceParent(request: FastifyRequest): string | undefined {
  if (!tracing.enabled) return undefined
  const span = spans.get(request)
  return span === undefined ? undefined : traceParentOf(span)
}
