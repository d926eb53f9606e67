/**
 * The organization's webhook endpoints: register one, see whether each is
 * enabled (and why the service disabled one), enable it again, rotate its
 * secret (shown once) and delete it.
 */
import { call } from '../api.js'
import { Badge, ConfirmButton, Empty, Failure, html, Instant, ShownOnce, useAction, useLoad, useState } from '../ui.js'

const EVENT_TYPES = ['task.completed', 'interaction.finalized']
const PATH = '/api/v2/webhook-endpoints'

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

function Endpoint({ credential, endpoint, onChanged, onSecret, run }) {
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
    <div class="actions">
      ${endpoint.enabled
        ? html`<button type="button" class="secondary" onClick=${act('PATCH', '', { enabled: false })}>Disable</button>`
        : html`<button type="button" onClick=${act('PATCH', '', { enabled: true })}>Enable</button>`}
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
