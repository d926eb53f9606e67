/**
 * Holds the OpenAPI documents to what the service answers: every answer a test
 * gets from a documented route is recorded (method, route pattern, status,
 * header names), and each one whose status, or one of whose headers, the
 * document does not declare is reported. So the documents are checked over
 * every request of the suite, not only over what a test of the documents
 * thinks to ask.
 */
import type { FastifyInstance } from 'fastify'

/** Headers of every HTTP answer, which no document declares (OpenAPI leaves Content-Type to the media types). */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding'])

interface Response {
  $ref?: string
  headers?: Record<string, unknown>
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Response> }>>
  components: { responses?: Record<string, Response> }
}

export interface AnswerRecorder {
  /** What the documents do not declare of the answers so far, one line each (each distinct one once). */
  undeclared(): string[]
}

/** Records the app's answers from now on; the app must serve the API (and so the documents). */
export function recordAnswers(app: FastifyInstance): AnswerRecorder {
  const answers = new Map<string, { method: string; route: string; status: number; headers: string[] }>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url
    if (route !== undefined) {
      const headers = Object.keys(reply.getHeaders()).map((name) => name.toLowerCase()).sort()
      const answer = { method: request.method.toLowerCase(), route, status: reply.statusCode, headers }
      answers.set(JSON.stringify(answer), answer)
    }
    done()
  })
  return {
    undeclared() {
      // An app never asked anything was never made ready, and has no documents to give.
      if (answers.size === 0) return []
      const documents = [app.swagger(), app.adminSwagger()] as unknown as Document[]
      const problems = new Set<string>()
      for (const { method, route, status, headers } of answers.values()) {
        const path = route.replace(/:([A-Za-z_]+)/g, '{$1}')
        const found = documents.map((document) => ({ document, operation: document.paths[path]?.[method] })).find(({ operation }) => operation !== undefined)
        // A route in neither document (the documents themselves, the console, the providers' callbacks): nothing to hold it to.
        if (found === undefined) continue
        const { document, operation } = found
        const where = `${method.toUpperCase()} ${path} ${status}`
        const declared = operation!.responses[String(status)] ?? operation!.responses[`${String(status)[0]}XX`] ?? operation!.responses.default
        if (declared === undefined) {
          problems.add(`${where}: status not declared`)
          continue
        }
        const response = declared.$ref === undefined ? declared : document.components.responses?.[declared.$ref.split('/').pop()!]
        const declaredHeaders = new Set(Object.keys(response?.headers ?? {}).map((name) => name.toLowerCase()))
        for (const header of headers) {
          if (!TRANSPORT_HEADERS.has(header) && !declaredHeaders.has(header)) problems.add(`${where}: header ${header} not declared`)
        }
      }
      return [...problems].sort()
    },
  }
}
