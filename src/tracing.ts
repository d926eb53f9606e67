/**
 * Traces (OpenTelemetry), off unless the standard variables ask for them:
 * `OTEL_TRACES_EXPORTER=otlp` (or `console`), or an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) with
 * no exporter named; `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`
 * keeps them off. The exporter reads its own variables (endpoint, headers,
 * timeout), the resource `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`.
 *
 * Off, nothing of the SDK is loaded (it is imported only by `startTracing`),
 * no span is started and nothing is written to the database: every caller
 * asks `tracing.enabled` first, so the hot path pays one property read.
 *
 * One trigger's story is one trace, though it crosses processes and time
 * through the database: the trigger request's span context is recorded with
 * the trigger (`triggers.trace_parent`, a W3C traceparent) and copied to its
 * events (`events.trace_parent`), and the provider calls and webhook
 * deliveries are its children. A group commit or a dispatch batch serves many
 * triggers: each is a span of its own, linked to each trigger's context.
 *
 * Spans carry our own ids only (trigger, task, interaction, event, endpoint,
 * delivery), never a phone number, a name, a context value, a result, a URL
 * or the client's external ids.
 */
import { type Attributes, type Context, type Link, propagation, ROOT_CONTEXT, type Span, type SpanOptions, trace, type Tracer } from '@opentelemetry/api'
import type { SpanProcessor } from '@opentelemetry/sdk-trace'
import { ConfigError } from './config.ts'

const SERVICE_NAME = 'conversation-trigger-service'
const EXPORTERS = ['otlp', 'console', 'none'] as const
type ExporterName = (typeof EXPORTERS)[number]

/**
 * The exporter the environment asks for, or undefined when traces are off.
 * An exporter this service does not have stops start-up, as other invalid
 * configuration does.
 */
export function tracesExporter(env: Readonly<Record<string, string | undefined>>): Exclude<ExporterName, 'none'> | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (named === undefined || named === '') {
    const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
    return endpoint ? 'otlp' : undefined
  }
  if (!(EXPORTERS as readonly string[]).includes(named)) {
    throw new ConfigError(`OTEL_TRACES_EXPORTER must be one of ${EXPORTERS.join(', ')} (got ${JSON.stringify(env.OTEL_TRACES_EXPORTER)})`)
  }
  return named === 'none' ? undefined : (named as Exclude<ExporterName, 'none'>)
}

/** The service's spans, once `startTracing` has started the SDK. */
class Tracing {
  #tracer: Tracer | undefined

  /** Whether spans are recorded: asked before any work for them is done. */
  get enabled(): boolean {
    return this.#tracer !== undefined
  }

  /** Set by startTracing, and cleared (spans stop) by its shutdown. */
  use(tracer: Tracer | undefined): void {
    this.#tracer = tracer
  }

  /** A span under `parent` (a traceparent, or a context), or a new trace's root when there is none. Only while enabled. */
  start(name: string, options: SpanOptions, parent?: string | Context | null): Span {
    const context = typeof parent === 'string' ? contextOf(parent) : (parent ?? ROOT_CONTEXT)
    return this.#tracer!.startSpan(name, options, context)
  }

  /** A link to each of the trace parents given (those recorded; null ones are left out), with its attributes. */
  links(parents: Iterable<{ traceParent: string | null | undefined; attributes?: Attributes }>): Link[] {
    const links: Link[] = []
    for (const { traceParent, attributes } of parents) {
      if (traceParent === null || traceParent === undefined) continue
      const spanContext = trace.getSpanContext(contextOf(traceParent))
      if (spanContext !== undefined) links.push({ context: spanContext, attributes })
    }
    return links
  }
}

export const tracing = new Tracing()

/** The span's context as a W3C traceparent, to record with what it started. */
export function traceParentOf(span: Span): string | undefined {
  const carrier: { traceparent?: string } = {}
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier)
  return carrier.traceparent
}

/** The context of a recorded or received traceparent (the root context when it is not a valid one). */
export function contextOf(traceParent: string): Context {
  return propagation.extract(ROOT_CONTEXT, { traceparent: traceParent })
}

/** The context of the W3C trace headers (`traceparent`, `tracestate`) of a request. */
export function contextOfHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers)
}

export interface StartedTracing {
  /** Where the spans go: the exporter the environment named, or `given` (a processor handed in). */
  exporter: Exclude<ExporterName, 'none'> | 'given'
  /** Exports what is still buffered and stops tracing. */
  shutdown(): Promise<void>
}

/**
 * Starts the SDK when the process's environment asks for traces (see the top
 * of this file), with a batching processor in front of the exporter;
 * `processor` replaces that (tests hand in an in-memory exporter's) and
 * starts it whatever the environment says. Undefined when off.
 */
export async function startTracing(processor?: SpanProcessor): Promise<StartedTracing | undefined> {
  const exporter = processor === undefined ? tracesExporter(process.env) : 'given'
  if (exporter === undefined) return undefined
  const [{ TracerProvider, BatchSpanProcessor, ConsoleSpanExporter }, { getNumberFromEnv, W3CTraceContextPropagator }, resources] =
    await Promise.all([import('@opentelemetry/sdk-trace'), import('@opentelemetry/core'), import('@opentelemetry/resources')])
  let spanProcessor = processor
  if (spanProcessor === undefined) {
    spanProcessor = new BatchSpanProcessor({
      exporter: exporter === 'console' ? new ConsoleSpanExporter() : new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(),
      // The standard batch settings, which the processor leaves to whoever builds it.
      scheduledDelayMillis: getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY'),
      exportTimeoutMillis: getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT'),
      maxQueueSize: getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE'),
      maxExportBatchSize: getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    })
  }
  const provider = new TracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': SERVICE_NAME }).merge(resources.detectResources({ detectors: [resources.envDetector] })),
    spanProcessors: [spanProcessor],
  })
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  tracing.use(provider.getTracer(SERVICE_NAME))
  return {
    exporter,
    async shutdown() {
      tracing.use(undefined)
      await provider.shutdown()
      propagation.disable()
    },
  }
}
