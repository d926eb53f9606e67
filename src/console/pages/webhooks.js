/**
 * The organization's webhook endpoints: register one, see how each is doing
 * (its last 24 hours, its last failures with the answers they got), whether
 * it is enabled (and why the service disabled one), enable it again, send it
 * a test event, send again what failed to it since a time (after an outage),
 * rotate its secret (shown once) and delete it. Each event it names links
 * to the event's page: what was sent, and every answer it got.
 */
import { call } from '../api.js'
import { EVENT_TYPES } from '../event-types.js'
import { Badge, ConfirmButton, Empty, Failure, html, Instant, ShownOnce, useAction, useEffect, useLoad, useState } from '../ui.js'

const PATH = '/api/v2/webhook-endpoints'

/** A link to an event's page (pages/event.js), by its id. */
export const EventLink = ({ id }) => html`<a href=${`#/events/${encodeURIComponent(id)}`}><code>${id}</code></a>`

/**
 * Sends now every event not delivered to the endpoint since `since` (an ISO
 * instant): given up, or waiting for a retry (brought forward); answers how
 * many were queued, and how many of them were brought forward. A recovery
 * stops after a bounded number a call: the calls go on from each answer's
 * `next`, in the window of the first, until none is left.
 */
export async function recoverFailedDeliveries(token, endpointId, since) {
  const path = `${PATH}/${encodeURIComponent(endpointId)}/recover`
  let answer = await call(token, 'POST', path, { since })
  let queued = answer.queued
  let broughtForward = answer.brought_forward
  while (answer.next !== null) {
    answer = await call(token, 'POST', path, { since: answer.since, until: answer.until, after: answer.next })
    queued += answer.queued
    broughtForward += answer.brought_forward
  }
  return { queued, broughtForward, since: answer.since }
}

/** "3 events queued to be sent again (1 of them brought forward from its retry)": what a recovery did. */
export const RecoveredCount = ({ recovered }) =>
  html`${recovered.queued.toLocaleString()} ${recovered.queued === 1 ? 'event' : 'events'} queued to be sent again${recovered.broughtForward === 0
    ? ''
    : ` (${recovered.broughtForward.toLocaleString()} of them brought forward from ${recovered.broughtForward === 1 ? 'its retry' : 'their retries'})`}`

function NewEndpoint({ credential, onCreated }) {
  const [url, setUrl] = useState('')
  const [events, setEvents] = useState(EVENT_TYPES)
  const registering = useAction()
  const toggle = (type) => setEvents(events.includes(type) ? events.filter((t) => t !== type) : [...events, type])
  const submit = (event) => {
    event.preventDefault()
    return registering.run(async () => {
      onCreated(await call(credential.token, 'POST', PATH, { url: url.trim(), events }))
      setUrl('')
    })
  }
  return html`<form class="card" onSubmit=${submit} aria-label="Register a webhook endpoint">
    <h3>Register an endpoint</h3>
    <label>URL <input name="url" type="url" required placeholder="https://example.com/webhooks/outreach" value=${url} onInput=${(event) => setUrl(event.target.value)} /></label>
    <fieldset class="scopes">
      <legend>Events</legend>
      ${EVENT_TYPES.map((type) => html`<label class="check"><input type="checkbox" checked=${events.includes(type)} onChange=${() => toggle(type)} /> ${type}</label>`)}
    </fieldset>
    <${Failure} error=${registering.error} />
    <button type="submit" disabled=${url.trim() === '' || events.length === 0}>Register</button>
  </form>`
}

const DAY_MS = 86_400_000

/** An instant as a datetime-local input shows it: to the minute, in the viewer's zone. */
const toLocal = (at) => new Date(at - new Date(at).getTimezoneOffset() * 60_000).toISOString().slice(0, 16)

/** Recovers the endpoint's failed deliveries since the time chosen (24 hours ago unless changed), and says how many were queued. */
function Recover({ credential, endpoint }) {
  // 24 hours ago, to the minute after: the input drops the seconds, and an organization that keeps a day of history refuses a since before it.
  const [since, setSince] = useState(() => toLocal(Date.now() - DAY_MS + 60_000))
  const [recovered, setRecovered] = useState()
  const [busy, setBusy] = useState(false)
  const recovering = useAction()
  const submit = (event) => {
    event.preventDefault()
    setRecovered(undefined)
    setBusy(true)
    return recovering
      .run(async () => setRecovered(await recoverFailedDeliveries(credential.token, endpoint.id, new Date(since).toISOString())))
      .finally(() => setBusy(false))
  }
  return html`<form class="inline-form" onSubmit=${submit} aria-label=${`Recover failed deliveries to ${endpoint.url}`}>
    <label>Failed since<input type="datetime-local" name="since" required value=${since} onInput=${(event) => setSince(event.target.value)} /></label>
    <button type="submit" class="secondary" disabled=${!endpoint.enabled || busy || since === ''}>Recover failed deliveries</button>
    <${Failure} error=${recovering.error} />
    ${recovered === undefined
      ? null
      : html`<p class="saved" role="status">
          <${RecoveredCount} recovered=${recovered} />, of those not delivered since <${Instant} at=${recovered.since} />.
        </p>`}
  </form>`
}

const percent = (rate) => `${(Math.floor(rate * 1000) / 10).toLocaleString()} %`

/** The endpoint's last 24 hours, and its last failures with the answer each got. */
function Health({ endpoint, health }) {
  if (health.error) return html`<${Failure} error=${health.error} />`
  if (health.loading) return html`<p class="loading">Reading its health…</p>`
  const { attempts, success_rate: rate, latency_ms: latency, last_failures: failures } = health.data
  return html`<section aria-label=${`Health of ${endpoint.url}`}>
    <dl class="facts health">
      <div><dt>Success, last 24 h</dt><dd class="figure">${rate === null ? '—' : percent(rate)}</dd><dd class="muted">${attempts.toLocaleString()} ${attempts === 1 ? 'attempt' : 'attempts'}</dd></div>
      <div><dt>Latency p50 / p95</dt><dd class="figure">${latency === null ? '—' : `≤ ${latency.p50} / ≤ ${latency.p95} ms`}</dd>${latency === null ? null : html`<dd class="muted">mean ${latency.mean} ms · max ${latency.max} ms</dd>`}</div>
    </dl>
    <h4>Last failures</h4>
    ${failures.length === 0
      ? html`<p class="muted">None: every attempt was answered with a 2xx.</p>`
      : html`<table class="failures">
          <thead><tr><th>When</th><th>Event</th><th>Attempt</th><th>Answer</th><th>Latency</th></tr></thead>
          <tbody>
            ${failures.map(
              (failure) => html`<tr key=${`${failure.event_id}.${failure.attempt}.${failure.at}`}>
                <td><${Instant} at=${failure.at} precise /></td>
                <td><${EventLink} id=${failure.event_id} /><div class="muted">${failure.event_type}</div></td>
                <td>${failure.attempt}${failure.final ? html` <${Badge} value="gave up" kind="failed" />` : null}</td>
                <td>${failure.status_code ?? 'no answer'}${failure.error === null ? null : html`<div class="muted">${failure.error}</div>`}</td>
                <td>${failure.latency_ms} ms</td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </section>`
}

function Endpoint({ credential, endpoint, onChanged, onSecret, run }) {
  const health = useLoad(() => call(credential.token, 'GET', `${PATH}/${encodeURIComponent(endpoint.id)}/health`), [endpoint.id])
  /** The test event sent last, with the attempts counted before it, until they count its own. */
  const [tested, setTested] = useState()
  const counted = tested !== undefined && health.data !== undefined && health.data.attempts > tested.attemptsBefore
  useEffect(() => {
    // The deliverer sends it at once: the figures are read again each second until they count it (ten times at most).
    if (tested === undefined || counted || health.loading || tested.reads >= 10) return undefined
    const timer = setTimeout(() => {
      setTested({ ...tested, reads: tested.reads + 1 })
      health.reload()
    }, 1000)
    return () => clearTimeout(timer)
  }, [tested, counted, health.loading])
  const test = () =>
    run(async () => {
      const attemptsBefore = health.data?.attempts ?? 0
      setTested({ event: await call(credential.token, 'POST', `${PATH}/${encodeURIComponent(endpoint.id)}/test`), attemptsBefore, reads: 0 })
    })
  const act = (method, suffix, body) => () =>
    run(async () => {
      const result = await call(credential.token, method, `${PATH}/${encodeURIComponent(endpoint.id)}${suffix}`, body)
      if (result?.secret !== undefined) onSecret({ endpoint, ...result })
      onChanged()
    })
  return html`<article class="card endpoint" aria-label=${endpoint.url}>
    <div class="title-row">
      <strong class="endpoint-url">${endpoint.url}</strong>
      ${endpoint.enabled ? html`<${Badge} value="enabled" kind="succeeded" />` : html`<${Badge} value="disabled" kind="failed" />`}
    </div>
    <p class="muted"><code>${endpoint.id}</code> · ${endpoint.events.join(', ')} · at most ${endpoint.max_in_flight} at once · since <${Instant} at=${endpoint.created_at} /></p>
    ${endpoint.disabled_reason === null ? null : html`<p class="failure">Disabled by the service: ${endpoint.disabled_reason}</p>`}
    <${Health} endpoint=${endpoint} health=${health} />
    ${tested === undefined
      ? null
      : html`<p class="saved" role="status">
          Test event <${EventLink} id=${tested.event.id} /> sent${counted ? ': its attempt is counted above.' : '; waiting for the endpoint to answer…'}
        </p>`}
    <${Recover} credential=${credential} endpoint=${endpoint} />
    <div class="actions">
      ${endpoint.enabled
        ? html`<button type="button" class="secondary" onClick=${act('PATCH', '', { enabled: false })}>Disable</button>`
        : html`<button type="button" onClick=${act('PATCH', '', { enabled: true })}>Enable</button>`}
      <button type="button" class="secondary" disabled=${!endpoint.enabled} onClick=${test}>Send test event</button>
      <${ConfirmButton} label="Rotate secret" confirmLabel="Rotate: the old one works 24 h more" onConfirm=${act('POST', '/rotate-secret')} />
      <${ConfirmButton} label="Delete" confirmLabel="Delete: nothing more is sent" onConfirm=${act('DELETE', '')} />
    </div>
  </article>`
}

export function WebhooksPage({ credential }) {
  const [secret, setSecret] = useState()
  const action = useAction()
  const endpoints = useLoad(() => call(credential.token, 'GET', PATH), [])
  const shown =
    secret === undefined
      ? null
      : html`<${ShownOnce}
          label=${secret.previous_secret_expires_at === undefined ? `The signing secret of ${secret.url}:` : `The new signing secret of ${secret.endpoint.url} (the previous one is accepted until ${new Date(secret.previous_secret_expires_at).toLocaleString()}):`}
          secret=${secret.secret}
        />`
  let body
  if (endpoints.error) body = html`<${Failure} error=${endpoints.error} />`
  else if (endpoints.loading) body = html`<p class="loading">Loading…</p>`
  else if (endpoints.data.length === 0) body = html`<${Empty} title="No endpoint yet">Register the URL your system receives webhooks at: every task's outcome is sent there, signed.</${Empty}>`
  else {
    body = endpoints.data.map(
      (endpoint) => html`<${Endpoint} key=${endpoint.id} credential=${credential} endpoint=${endpoint} onChanged=${endpoints.reload} onSecret=${setSecret} run=${action.run} />`,
    )
  }
  return html`<div>
    <h2>Webhooks</h2>
    ${shown}
    <${Failure} error=${action.error} />
    ${body}
    <${NewEndpoint}
      credential=${credential}
      onCreated=${(created) => {
        setSecret(created)
        endpoints.reload()
      }}
    />
  </div>`
}
