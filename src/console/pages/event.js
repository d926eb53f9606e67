/**
 * What became of one event: its payload as its webhooks carry it, each
 * delivery to an endpoint with every attempt's request and the answer it got
 * (status, headers, the opening of the body, to the millisecond), and what
 * `cli listen` reported of forwarding it to a local receiver. From here an
 * event is sent again to an endpoint, and an endpoint's failed deliveries
 * recovered. Shown on the event's own page (#/events/evt_...), which the
 * webhooks page links to, and for each event on its task's page.
 */
import { call } from '../api.js'
import { Badge, Failure, html, Instant, REFRESH_MS, soon, useAction, useEffect, useLoad, useState } from '../ui.js'
import { RecoveredCount, recoverFailedDeliveries } from './webhooks.js'

const DELIVERY_STATES = { pending: 'pending', succeeded: 'delivered', failed: 'failed' }

/** Whether a delivery of the event is about to be attempted: its page is read again until it is. */
export const deliveryDueSoon = (event) => event.deliveries.some((delivery) => delivery.status === 'pending' && soon(delivery.next_attempt_at))

/** The event as its webhooks carry it, indented here: every attempt to every endpoint sent this body, under the same webhook-id. */
function Payload({ event, open }) {
  const body = { id: event.id, type: event.type, timestamp: event.timestamp, data: event.data }
  return html`<details class="payload" open=${open}>
    <summary>Payload</summary>
    <pre class="json" aria-label=${`Payload of ${event.id}`}>${JSON.stringify(body, null, 2)}</pre>
  </details>`
}

function Headers({ label, headers }) {
  return html`<table class="headers" aria-label=${label}>
    <tbody>${headers.map(([name, value]) => html`<tr><th scope="row"><code>${name}</code></th><td><code>${value}</code></td></tr>`)}</tbody>
  </table>`
}

/**
 * One attempt's exchange: the request as the deliverer makes it
 * (workers/deliverer.ts: its webhook-timestamp is the second the attempt
 * started), and the answer as the service kept it (its first headers and
 * 1 KiB of its body, webhooks/httpPoster.ts).
 */
function Exchange({ event, attempt, open }) {
  const request = [
    ['content-type', 'application/json'],
    ['webhook-id', event.id],
    ['webhook-timestamp', String(Math.floor(Date.parse(attempt.at) / 1000))],
    ['webhook-signature', "v1,… by the endpoint's secret"],
  ]
  const answer = attempt.response
  return html`<details class="exchange" open=${open}>
    <summary>Request and answer</summary>
    <div class="exchange-parts">
      <section aria-label=${`Request of attempt ${attempt.attempt}`}>
        <h5>Request</h5>
        <p><code>POST</code> the payload above, at <${Instant} at=${attempt.at} precise /></p>
        <${Headers} label=${`Request headers of attempt ${attempt.attempt}`} headers=${request} />
      </section>
      <section aria-label=${`Answer of attempt ${attempt.attempt}`}>
        <h5>Answer</h5>
        ${attempt.status_code === null
          ? html`<p>No answer came: ${attempt.error ?? 'no reason was recorded'} (after ${attempt.latency_ms} ms).</p>`
          : html`<p>Status <strong>${attempt.status_code}</strong>, after ${attempt.latency_ms} ms</p>`}
        ${answer === null
          ? attempt.status_code === null
            ? null
            : html`<p class="muted">Its headers and body were not kept: the attempt was made before the service kept answers.</p>`
          : html`<${Headers} label=${`Answer headers of attempt ${attempt.attempt}`} headers=${Object.entries(answer.headers)} />
              ${answer.body === ''
                ? html`<p class="muted">An empty body.</p>`
                : html`<pre class="body" aria-label=${`Answer body of attempt ${attempt.attempt}`}>${answer.body}</pre>
                    ${answer.body_truncated ? html`<p class="muted">The first 1 KiB of a longer body.</p>` : null}`}`}
      </section>
    </div>
  </details>`
}

/** A delivery to one endpoint: its attempts, each with its exchange; and, for a key that manages webhooks, send again and recover. */
function Delivery({ credential, event, delivery, open, onChanged }) {
  const action = useAction()
  const [recovered, setRecovered] = useState()
  const mayManage = credential.key.scopes.includes('webhooks:manage')
  const sendAgain = () =>
    action.run(async () => {
      await call(credential.token, 'POST', `/api/v2/events/${encodeURIComponent(event.id)}/redeliver?endpoint_id=${encodeURIComponent(delivery.endpoint_id)}`)
      onChanged()
    })
  // Since this delivery's first attempt: it and whatever failed there after it (an outage that went on).
  const since = delivery.attempts[0]?.at ?? event.timestamp
  const recover = () =>
    action.run(async () => {
      setRecovered(undefined)
      setRecovered(await recoverFailedDeliveries(credential.token, delivery.endpoint_id, since))
      onChanged()
    })
  return html`<div class="delivery" aria-label=${`Delivery to ${delivery.endpoint_id}`}>
    <div class="step-head">
      <span>to <code>${delivery.endpoint_id}</code></span>
      <${Badge} value=${DELIVERY_STATES[delivery.status]} kind=${delivery.status} />
      ${delivery.next_attempt_at === null ? null : html`<span class="muted">next attempt <${Instant} at=${delivery.next_attempt_at} precise /></span>`}
      <span class="spacer"></span>
      ${mayManage ? html`<button type="button" class="secondary" onClick=${sendAgain}>Send again to this endpoint</button>` : null}
      ${mayManage && (delivery.status === 'failed' || (delivery.status === 'pending' && delivery.attempts.length > 0))
        ? html`<button type="button" class="secondary" onClick=${recover}>Recover failed deliveries to this endpoint since this one</button>`
        : null}
    </div>
    <${Failure} error=${action.error} />
    ${recovered === undefined
      ? null
      : html`<p class="saved" role="status">
          <${RecoveredCount} recovered=${recovered} />, of those not delivered since <${Instant} at=${recovered.since} precise />.
        </p>`}
    ${delivery.attempts.length === 0
      ? html`<p class="muted">Not attempted yet.</p>`
      : html`<table class="attempts">
          <thead><tr><th>#</th><th>Sent</th><th>Answer</th><th>Latency</th><th>Error</th></tr></thead>
          <tbody>
            ${delivery.attempts.map(
              (attempt) => html`<tr key=${`${attempt.attempt}`}>
                  <td>${attempt.attempt}</td>
                  <td><${Instant} at=${attempt.at} precise /></td>
                  <td>${attempt.status_code === null ? '—' : html`<${Badge} value=${String(attempt.status_code)} kind=${attempt.status_code < 300 ? 'succeeded' : 'failed'} />`}</td>
                  <td>${attempt.latency_ms} ms</td>
                  <td>${attempt.error ?? ''}</td>
                </tr>
                <tr class="exchange-row"><td colspan="5"><${Exchange} event=${event} attempt=${attempt} open=${open} /></td></tr>`,
            )}
          </tbody>
        </table>`}
  </div>`
}

/**
 * What listen said of forwarding the event: the service sent nothing to the
 * local receiver itself and knows only what listen reported, which it says.
 */
function ListenForwards({ forwards }) {
  return html`<div class="delivery" aria-label="Forwarded by listen">
    <ul class="forwards">
      ${forwards.map(
        (forward) => html`<li>
          Forwarded by <code>listen</code> at <${Instant} at=${forward.at} precise />,
          ${forward.status_code === null ? html` no answer: ${forward.error ?? 'none reported'}` : html` answered <${Badge} value=${String(forward.status_code)} kind=${forward.status_code < 300 ? 'succeeded' : 'failed'} />`}
          <span class="muted"> (${forward.latency_ms} ms)</span>
        </li>`,
      )}
    </ul>
    <p class="muted">As listen reported it to the service: listen posted it to the local URL it was given, and the service knows only what it said.</p>
  </div>`
}

/** Every way the event went out: to endpoints (delivered by the service) and through listen (as it reported). */
export function EventHistory({ credential, event, open = false, onChanged }) {
  const forwards = event.listen_forwards
  return html`<div class="event-history">
    <${Payload} event=${event} open=${open} />
    ${event.deliveries.length === 0
      ? forwards.length === 0
        ? html`<p class="muted">No endpoint was subscribed to ${event.type} when it was written, and listen reported no forward of it.</p>`
        : null
      : event.deliveries.map((delivery, n) => html`<${Delivery} key=${n} credential=${credential} event=${event} delivery=${delivery} open=${open} onChanged=${onChanged} />`)}
    ${forwards.length === 0 ? null : html`<${ListenForwards} forwards=${forwards} />`}
  </div>`
}

/** An event's own page: what it is about, and what became of it. Read again while a delivery of it is about to be attempted. */
export function EventPage({ credential, eventId }) {
  const loaded = useLoad(() => call(credential.token, 'GET', `/api/v2/events/${encodeURIComponent(eventId)}`), [eventId])
  const moving = loaded.data !== undefined && deliveryDueSoon(loaded.data)
  useEffect(() => {
    if (!moving) return undefined
    const timer = setTimeout(loaded.reload, REFRESH_MS)
    return () => clearTimeout(timer)
  }, [moving, loaded.data, loaded.error])
  if (loaded.error && loaded.data === undefined) return html`<div><${Failure} error=${loaded.error} /></div>`
  if (loaded.loading) return html`<p class="loading">Loading the event…</p>`
  const event = loaded.data
  const taskId = typeof event.data.task_id === 'string' ? event.data.task_id : undefined
  return html`<div class="event-page">
    <p>${taskId === undefined ? html`<a href="#/webhooks">← Webhooks</a>` : html`<a href=${`#/tasks/${encodeURIComponent(taskId)}`}>← Its task</a>`}</p>
    <div class="title-row">
      <h2>${event.type}</h2>
      <code class="muted">${event.id}</code>
    </div>
    <p class="muted">Written at <${Instant} at=${event.timestamp} precise /></p>
    <${Failure} error=${loaded.error} />
    <section class="card" aria-label="What was sent">
      <${EventHistory} credential=${credential} event=${event} open onChanged=${loaded.reload} />
    </section>
  </div>`
}
