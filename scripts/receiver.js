/**
 * A webhook receiver to watch the service's webhooks arrive on this machine:
 * `npm run receiver` listens on http://127.0.0.1:9000 (PORT to change it),
 * prints one line per webhook, and answers 204. With WEBHOOK_SECRET (the
 * endpoint's whsec_... secret) it checks each webhook as a client should
 * (Standard Webhooks): the signature, HMAC-SHA256 of "id.timestamp.body",
 * and a timestamp within 5 minutes of now, so that a captured webhook cannot
 * be replayed later; it answers 401 to one that fails either.
 *
 * Plain JavaScript with no dependency, so that it runs as it is.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'

const port = Number(process.env.PORT ?? 9000)
const secret = process.env.WEBHOOK_SECRET
const TOLERANCE_S = 5 * 60

/** Whether one of the signatures in the header is that of the body with the secret. */
function signedBy(secretText, headers, body) {
  const key = Buffer.from(secretText.replace(/^whsec_/, ''), 'base64')
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest()
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .filter((signature) => signature.startsWith('v1,'))
    .some((signature) => {
      const given = Buffer.from(signature.slice(3), 'base64')
      return given.length === expected.length && timingSafeEqual(given, expected)
    })
}

/** A conversation's result in a few words: its disposition, the start of its summary, and how much else it holds. */
function describeResult(result) {
  const summary = typeof result.summary === 'string' ? ` "${result.summary.length > 60 ? `${result.summary.slice(0, 59)}…` : result.summary}"` : ''
  const turns = Array.isArray(result.transcript) ? ` (${result.transcript.length} turns)` : ''
  return `${result.disposition ?? '-'}${summary}${turns}`
}

createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8')
    if (secret !== undefined) {
      const age = Math.abs(Date.now() / 1000 - Number(request.headers['webhook-timestamp']))
      const problem = !signedBy(secret, request.headers, body) ? 'is not signed with WEBHOOK_SECRET' : !(age <= TOLERANCE_S) ? 'has a timestamp more than 5 minutes off' : undefined
      if (problem !== undefined) {
        console.log(`refused: ${request.headers['webhook-id']} ${problem}`)
        response.writeHead(401).end()
        return
      }
    }
    let line = body
    try {
      const event = JSON.parse(body)
      const data = event.data ?? {}
      line = `${event.type} ${event.id}: task ${data.task_id ?? '-'}${data.outcome ? `, outcome ${data.outcome}` : ''}${data.ids?.length ? `, ids ${data.ids.map((id) => `${id.source}/${id.type}/${id.value}`).join(' ')}` : ''}${data.result ? `, result ${describeResult(data.result)}` : ''}`
    } catch {
      // Not JSON: printed as it came.
    }
    console.log(`${new Date().toISOString()} ${secret === undefined ? '' : '(signature checked) '}${line}`)
    response.writeHead(204).end()
  })
}).listen(port, '127.0.0.1', () => console.log(`receiving webhooks on http://127.0.0.1:${port}`))
