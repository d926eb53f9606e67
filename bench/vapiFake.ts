/**
 * Vapi as the end-to-end benchmark meets it, in the benchmark's process (on
 * its CPU, as the webhook receiver is): "Create Call", `POST /call` with
 * `Authorization: Bearer` and the private key, answered 201 at once with the
 * Call (its `id`, `status: "queued"`, the body's `assistantOverrides` with
 * the interaction in `metadata`); and as soon as that answer is written, the
 * call's `end-of-call-report` posted to the service's server URL
 * (`POST /providers/vapi/webhook`), `{"message": {...}}` signed as an HMAC
 * credential signs it by default: hex HMAC-SHA256 of `{timestamp}.{body}`
 * in `x-signature`, the Unix milliseconds in `x-timestamp`
 * (https://docs.vapi.ai/server-url/server-authentication, as
 * src/channels/vapi/serverMessages.ts verifies it).
 *
 * Every call ends `customer-ended-call` with the same conversation: the
 * screening call's turns as `artifact.messages` (`bot` and `user`, each with
 * its `time`), again as `messagesOpenAIFormatted` and as the `transcript`
 * text, the recording's URL, and the `analysis`: its summary and its
 * structured data, the disposition among them. That is how Vapi reports a
 * call (https://docs.vapi.ai/server-url/events; openapi "Vapi API" v1.0
 * `ServerMessageEndOfCallReport`, `Artifact`, `Analysis`): the transcript
 * three times and the whole Call, so the report is several times the size of
 * the result it carries.
 *
 * Nothing is kept per call: the report is built from the Create Call body
 * alone, so that the fake's CPU per call stays flat over the run.
 */
import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ScreeningResult } from './endToEnd.ts'

export interface VapiFake {
  url: string
  /** Where the reports go: the service's server URL. */
  setServerUrl(url: string): void
  /** Calls created, and reports the server URL answered 204. */
  callsCreated(): number
  reportsAccepted(): number
  /** The size of the last report posted, in bytes (each is the same but for the call's ids and times). */
  reportBytes(): number
  /** Each request refused and each report not answered 204 (the first few), with why. */
  problems(): { count: number; examples: string[] }
  close(): Promise<void>
}

/** Problems kept as examples. */
const EXAMPLES = 5
/** How a call of the benchmark ends: the person hangs up after the agent's goodbye, which Vapi counts as a conversation that took place. */
const ENDED_REASON = 'customer-ended-call'

export async function startVapiFake(options: {
  apiKey: string
  webhookSecret: string
  /** The conversation every call reports; `dispositionField` names the structured data's key that carries its disposition. */
  conversation: ScreeningResult
  dispositionField: string
  /** At most this many reports in flight to the server URL at once, each on a kept-alive connection. */
  connections: number
}): Promise<VapiFake> {
  const { conversation } = options
  // The same conversation each time: its parts are serialized once, the call's own fields around them.
  const startedAt = Date.parse(conversation.transcript[0]!.at)
  const messages = conversation.transcript.map((turn, index) => {
    const time = Date.parse(turn.at)
    const next = conversation.transcript[index + 1]
    const endTime = next === undefined ? time + 2000 : Date.parse(next.at) - 500
    return { role: turn.role === 'agent' ? 'bot' : 'user', message: turn.text, time, endTime, secondsFromStart: (time - startedAt) / 1000 }
  })
  const endedAt = messages.at(-1)!.endTime + 1000
  const report = {
    type: 'end-of-call-report',
    endedReason: ENDED_REASON,
    startedAt: new Date(startedAt).toISOString(),
    endedAt: new Date(endedAt).toISOString(),
    cost: 0.12,
    artifact: {
      messages: [{ role: 'system', message: 'You are Mia, a recruiter at Acme Staffing, screening applicants by phone.', time: startedAt, secondsFromStart: 0 }, ...messages],
      messagesOpenAIFormatted: messages.map((turn) => ({ role: turn.role === 'bot' ? 'assistant' : 'user', content: turn.message })),
      transcript: messages.map((turn) => `${turn.role === 'bot' ? 'AI' : 'User'}: ${turn.message}`).join('\n'),
      recordingUrl: conversation.recording_url,
    },
    analysis: { summary: conversation.summary, structuredData: { ...conversation.data, [options.dispositionField]: conversation.disposition } },
  }
  const reportFields = JSON.stringify(report).slice(1, -1)

  let serverUrl: URL | undefined
  let created = 0
  let accepted = 0
  let lastReportBytes = 0
  let problemCount = 0
  const examples: string[] = []
  const problem = (what: string) => {
    problemCount++
    if (examples.length < EXAMPLES) examples.push(what)
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections })

  const sendReport = (call: Record<string, unknown>) => {
    if (serverUrl === undefined) return problem('a call was created before the server URL was set')
    const body = `{"message":{"timestamp":${Date.now()},${reportFields},"call":${JSON.stringify(call)},"phoneNumber":{"id":${JSON.stringify(call.phoneNumberId)}},"customer":${JSON.stringify(call.customer)}}}`
    lastReportBytes = Buffer.byteLength(body)
    const timestamp = String(Date.now())
    const signature = createHmac('sha256', options.webhookSecret).update(`${timestamp}.`).update(body).digest('hex')
    const request = http.request(
      serverUrl,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': lastReportBytes, 'x-timestamp': timestamp, 'x-signature': signature },
      },
      (response) => {
        response.resume()
        response.on('end', () => (response.statusCode === 204 ? accepted++ : problem(`the server URL answered ${response.statusCode} to the report of call ${call.id}`)))
      },
    )
    request.on('error', (error) => problem(`the report of call ${call.id}: ${error.message}`))
    request.end(body)
  }

  const server = http.createServer((request, response) => {
    let text = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (text += chunk))
    request.on('end', () => {
      const answer = (status: number, body: unknown, then?: () => void) =>
        response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body), then)
      if (request.method !== 'POST' || request.url !== '/call') {
        problem(`${request.method} ${request.url}`)
        return answer(404, { message: `Cannot ${request.method} ${request.url}`, error: 'Not Found', statusCode: 404 })
      }
      if (request.headers.authorization !== `Bearer ${options.apiKey}`) {
        problem('Create Call without the private key')
        return answer(401, { message: 'Invalid Key.', error: 'Unauthorized', statusCode: 401 })
      }
      const body = JSON.parse(text) as Record<string, unknown>
      const at = new Date().toISOString()
      const call = {
        id: randomUUID(),
        type: 'outboundPhoneCall',
        status: 'queued',
        createdAt: at,
        updatedAt: at,
        assistantId: body.assistantId,
        phoneNumberId: body.phoneNumberId,
        customer: body.customer,
        assistantOverrides: body.assistantOverrides,
        phoneCallProvider: 'twilio',
        phoneCallTransport: 'pstn',
      }
      created++
      answer(201, call, () => sendReport({ ...call, status: 'ended', endedReason: ENDED_REASON }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setServerUrl: (url) => {
      serverUrl = new URL(url)
    },
    callsCreated: () => created,
    reportsAccepted: () => accepted,
    reportBytes: () => lastReportBytes,
    problems: () => ({ count: problemCount, examples: [...examples] }),
    close: () =>
      new Promise((resolve) => {
        agent.destroy()
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
