// A voice app for a Twilio campaign with handoff "redirect": Twilio's request for each answered call
// is redirected here with ?interaction_id=...; the app reads whom it serves, asks one question, and
// reports what the person said. Node 20+, no dependency:
//   SERVICE_URL=https://cts.example.com APP_KEY=ctk_... TWILIO_AUTH_TOKEN=... \
//   PUBLIC_URL=https://voice.example.com PORT=3000 node examples/voice-app.js
// The campaign's answer_url is PUBLIC_URL + /twiml; APP_KEY has conversations:read and conversations:write.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'

const { SERVICE_URL, APP_KEY, TWILIO_AUTH_TOKEN, PUBLIC_URL, PORT = '3000' } = process.env

async function service(path, body) {
  const response = await fetch(`${SERVICE_URL}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${APP_KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  return (await response.json()).data
}

// Twilio signs each request: base64(HMAC-SHA1(auth token, URL + each POST parameter's name and value, sorted)).
function fromTwilio(url, params, signature = '') {
  const signed = [...params.keys()].sort().reduce((text, name) => text + name + params.get(name), url)
  const expected = createHmac('sha1', TWILIO_AUTH_TOKEN).update(signed).digest()
  const given = Buffer.from(signature, 'base64')
  return given.length === expected.length && timingSafeEqual(given, expected)
}

const xml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const QUESTION = 'are you still interested in the role?'

async function answer(request, response) {
  let body = ''
  for await (const chunk of request) body += chunk
  const url = new URL(request.url, PUBLIC_URL)
  const params = new URLSearchParams(body)
  if (request.method !== 'POST' || !fromTwilio(url.href, params, request.headers['x-twilio-signature'])) {
    return response.writeHead(403).end()
  }
  const id = url.searchParams.get('interaction_id')
  let twiml
  if (url.pathname === '/twiml') {
    // Whom the call serves, and why: the contact, the task's context, the client's ids.
    const { contact, context } = await service(`/api/v2/interactions/${id}`)
    twiml = `<Gather input="speech" action="/answer?interaction_id=${xml(id)}" language="${xml(contact?.language ?? 'en-US')}">
      <Say>Hello ${xml(contact?.first_name ?? '')}, this is ${xml(context.company ?? 'us')}: ${QUESTION}</Say></Gather>`
  } else if (url.pathname === '/answer') {
    const said = params.get('SpeechResult') ?? ''
    const yes = /\b(yes|yeah|sure|still)\b/i.test(said)
    await service(`/api/v2/interactions/${id}/result`, {
      disposition: yes ? 'interested' : 'not_interested',
      summary: yes ? 'Still interested.' : 'No longer interested.',
      transcript: [
        { role: 'agent', text: QUESTION },
        { role: 'contact', text: said || '(silence)' },
      ],
    })
    twiml = `<Say>Thank you. Goodbye.</Say><Hangup/>`
  } else {
    return response.writeHead(404).end()
  }
  response.writeHead(200, { 'content-type': 'text/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?><Response>${twiml}</Response>`)
}

createServer((request, response) =>
  answer(request, response).catch((error) => {
    console.error(error)
    response.writeHead(500).end()
  }),
).listen(Number(PORT), () => console.log(`voice app on port ${PORT}`))
