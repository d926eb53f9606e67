/**
 * A webhook receiver to watch the service's webhooks arrive on this machine:
 * `npm run receiver` listens on http://127.0.0.1:9000 (PORT to change it),
 * prints one line per webhook, and answers 204. With WEBHOOK_SECRET (the
 * endpoint's whsec_... secret) it checks each signature as a client should
 * (Standard Webhooks: HMAC-SHA256 of "id.timestamp.body") and answers 401
 * to one that does not match.
 *
 * Plain JavaScript with no dependency, so that it runs as it is.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'

const port = Number(process.env.PORT ?? 9000)
const secret = process.env.WEBHOOK_SECRET

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

createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8')
    if (secret !== undefined && !signedBy(secret, request.headers, body)) {
      console.log(`refused: ${request.headers['webhook-id']} is not signed with WEBHOOK_SECRET`)
      response.writeHead(401).end()
      return
    }
    let line = body
    try {
      const event = JSON.parse(body)
      const { data } = event
      line = `${event.type} ${event.id}: task ${data.task_id ?? '-'}${data.outcome ? `, outcome ${data.outcome}` : ''}${data.ids?.length ? `, ids ${data.ids.map((id) => `${id.source}/${id.type}/${id.value}`).join(' ')}` : ''}`
    } catch {
      // Not JSON: printed as it came.
    }
    console.log(`${new Date().toISOString()} ${secret === undefined ? '' : '(signature checked) '}${line}`)
    response.writeHead(204).end()
  })
}).listen(port, '127.0.0.1', () => console.log(`receiving webhooks on http://127.0.0.1:${port}`))
