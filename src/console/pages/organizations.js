/**
 * The operator's organizations: the list, a new one, and one organization's
 * campaigns, cap per number, sources and API keys (issue one, shown once;
 * revoke one).
 */
import { call } from '../api.js'
import { Sources } from './sources.js'
import { Badge, ConfirmButton, Empty, Failure, html, Instant, ShownOnce, useAction, useLoad, useState } from '../ui.js'

const SCOPES = ['triggers:write', 'triggers:read', 'webhooks:manage', 'suppressions:manage', 'campaigns:manage', 'contacts:erase']
const DEFAULT_SCOPES = ['triggers:write', 'triggers:read']

function NewOrganization({ credential, onCreated }) {
  const [name, setName] = useState('')
  const creating = useAction()
  const submit = (event) => {
    event.preventDefault()
    return creating.run(async () => {
      const organization = await call(credential.token, 'POST', '/admin/v1/organizations', { name: name.trim() })
      setName('')
      onCreated(organization)
    })
  }
  return html`<form class="card inline-form" onSubmit=${submit}>
    <label>New organization <input name="name" required maxlength="200" value=${name} onInput=${(event) => setName(event.target.value)} /></label>
    <button type="submit" disabled=${name.trim() === ''}>Create</button>
    <${Failure} error=${creating.error} />
  </form>`
}

export function OrganizationsPage({ credential }) {
  const organizations = useLoad(() => call(credential.token, 'GET', '/admin/v1/organizations?limit=1000'), [])
  let body
  if (organizations.error) body = html`<${Failure} error=${organizations.error} />`
  else if (organizations.loading) body = html`<p class="loading">Loading…</p>`
  else if (organizations.data.length === 0) body = html`<${Empty} title="No organization yet">Create one above, then issue it an API key.</${Empty}>`
  else {
    body = html`<table>
      <thead><tr><th>Name</th><th>Id</th><th>Created</th></tr></thead>
      <tbody>
        ${organizations.data.map(
          (organization) => html`<tr key=${organization.id}>
            <td><a href=${`#/organizations/${encodeURIComponent(organization.id)}`}>${organization.name}</a></td>
            <td><code>${organization.id}</code></td>
            <td><${Instant} at=${organization.created_at} /></td>
          </tr>`,
        )}
      </tbody>
    </table>`
  }
  return html`<div>
    <h2>Organizations</h2>
    <${NewOrganization} credential=${credential} onCreated=${(organization) => (location.hash = `#/organizations/${encodeURIComponent(organization.id)}`)} />
    ${body}
  </div>`
}

function IssueKey({ credential, orgId, onIssued }) {
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState(DEFAULT_SCOPES)
  const issuing = useAction()
  const toggle = (scope) => setScopes(scopes.includes(scope) ? scopes.filter((s) => s !== scope) : [...scopes, scope])
  const submit = (event) => {
    event.preventDefault()
    return issuing.run(async () => {
      onIssued(await call(credential.token, 'POST', `/admin/v1/organizations/${encodeURIComponent(orgId)}/api-keys`, { name: name.trim(), scopes }))
      setName('')
    })
  }
  return html`<form class="card" onSubmit=${submit} aria-label="Issue an API key">
    <h3>Issue an API key</h3>
    <label>What it is for <input name="key-name" required maxlength="200" placeholder="ATS production" value=${name} onInput=${(event) => setName(event.target.value)} /></label>
    <fieldset class="scopes">
      <legend>Scopes</legend>
      ${SCOPES.map((scope) => html`<label class="check"><input type="checkbox" checked=${scopes.includes(scope)} onChange=${() => toggle(scope)} /> ${scope}</label>`)}
    </fieldset>
    <${Failure} error=${issuing.error} />
    <button type="submit" disabled=${name.trim() === '' || scopes.length === 0}>Issue key</button>
  </form>`
}

/** A schedule in a few words: its zones and its windows. */
function scheduleSummary(schedule) {
  const zone = schedule.timezone === 'contact' ? "contact's zones" : schedule.timezone
  const windows = schedule.windows.map((window) => `${window.days.join(' ')} ${window.start}–${window.end}`).join('; ')
  return `${windows} · ${zone}`
}

function Campaigns({ orgId, campaigns }) {
  const base = `#/organizations/${encodeURIComponent(orgId)}/campaigns`
  return html`<section class="card">
    <div class="title-row"><h3>Campaigns</h3><span class="spacer"></span><a class="button-link" href=${`${base}/new`}>New campaign</a></div>
    ${campaigns.length === 0
      ? html`<p class="muted">None yet: a trigger names a campaign by its routing key. Create one to accept triggers.</p>`
      : html`<table>
          <thead><tr><th>Routing key</th><th>Provider</th><th>Schedule</th><th>State</th></tr></thead>
          <tbody>
            ${campaigns.map(
              (campaign) => html`<tr key=${campaign.id}>
                <td><a href=${`${base}/${encodeURIComponent(campaign.id)}`}>${campaign.routing_key} · ${campaign.channel}</a><div class="muted">${campaign.name}</div></td>
                <td>${campaign.provider}</td>
                <td>${scheduleSummary(campaign.schedule)}</td>
                <td>${campaign.paused_at === null ? html`<${Badge} value="running" kind="succeeded" />` : html`<${Badge} value="paused" kind="pending" />`}</td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </section>`
}

/** A cap figure as the API takes it: a whole number, or null for an empty field. */
const capFigure = (text) => (text.trim() === '' ? null : Number(text))

/** The organization's cap on attempts to one number across its campaigns: each figure, or none for no such rule. */
function ContactCap({ credential, path, cap, onChanged }) {
  const [per24h, setPer24h] = useState(cap.per_24h === null ? '' : String(cap.per_24h))
  const [perLocalDay, setPerLocalDay] = useState(cap.per_local_day === null ? '' : String(cap.per_local_day))
  const saving = useAction()
  const on = cap.per_24h !== null || cap.per_local_day !== null
  const save = (contactCap) =>
    saving.run(async () => {
      await call(credential.token, 'PATCH', path, { contact_cap: contactCap })
      onChanged()
    })
  const submit = (event) => {
    event.preventDefault()
    return save({ per_24h: capFigure(per24h), per_local_day: capFigure(perLocalDay) })
  }
  return html`<form class="card" onSubmit=${submit} aria-label="Cap per number">
    <h3>Cap per number</h3>
    <p class="muted">
      ${on
        ? `Across all campaigns, at most ${[
            cap.per_24h === null ? null : `${cap.per_24h} ${cap.per_24h === 1 ? 'attempt' : 'attempts'} to one number in any 24 hours`,
            cap.per_local_day === null ? null : `${cap.per_local_day} on one day where the contact is`,
          ]
            .filter(Boolean)
            .join(', and ')}. A task held by it waits until the cap allows, and still expires on time.`
        : 'Off: each campaign calls a number as its own schedule and attempts allow.'}
    </p>
    <div class="inline-form">
      <label>In any 24 hours <input name="per-24h" type="number" min="1" max="1000" placeholder="no limit" value=${per24h} onInput=${(event) => setPer24h(event.target.value)} /></label>
      <label>Per local day <input name="per-local-day" type="number" min="1" max="1000" placeholder="no limit" value=${perLocalDay} onInput=${(event) => setPerLocalDay(event.target.value)} /></label>
      <button type="submit">Save cap</button>
      ${on
        ? html`<button
            type="button"
            onClick=${() => {
              setPer24h('')
              setPerLocalDay('')
              return save({})
            }}
          >Turn off</button>`
        : null}
    </div>
    <${Failure} error=${saving.error} />
  </form>`
}

export function OrganizationPage({ credential, orgId }) {
  const [issued, setIssued] = useState()
  const revoking = useAction()
  const path = `/admin/v1/organizations/${encodeURIComponent(orgId)}`
  const loaded = useLoad(async () => {
    const [organization, keys, campaigns, sources] = await Promise.all([
      call(credential.token, 'GET', path),
      call(credential.token, 'GET', `${path}/api-keys`),
      call(credential.token, 'GET', `${path}/campaigns`),
      call(credential.token, 'GET', `${path}/sources`),
    ])
    return { organization, keys, campaigns, sources }
  }, [orgId])
  if (loaded.error) return html`<div><p><a href="#/organizations">← Organizations</a></p><${Failure} error=${loaded.error} /></div>`
  if (loaded.loading) return html`<p class="loading">Loading…</p>`
  const { organization, keys, campaigns, sources } = loaded.data
  const revoke = (key) =>
    revoking.run(async () => {
      await call(credential.token, 'DELETE', `${path}/api-keys/${encodeURIComponent(key.id)}`)
      loaded.reload()
    })
  return html`<div>
    <p><a href="#/organizations">← Organizations</a></p>
    <h2>${organization.name}</h2>
    <p class="muted"><code>${organization.id}</code> · created <${Instant} at=${organization.created_at} /></p>
    <${Campaigns} orgId=${orgId} campaigns=${campaigns} />
    <${ContactCap} credential=${credential} path=${path} cap=${organization.contact_cap} onChanged=${loaded.reload} />
    <${Sources} credential=${credential} orgId=${orgId} sources=${sources} onChanged=${loaded.reload} />
    ${issued === undefined ? null : html`<${ShownOnce} label=${`The key "${issued.name}":`} secret=${issued.key} />`}
    <section class="card">
      <h3>API keys</h3>
      <${Failure} error=${revoking.error} />
      ${keys.length === 0
        ? html`<p class="muted">None yet: issue one below and give it to the organization's system.</p>`
        : html`<table>
            <thead><tr><th>Name</th><th>Starts with</th><th>Scopes</th><th>Created</th><th></th></tr></thead>
            <tbody>
              ${keys.map(
                (key) => html`<tr key=${key.id}>
                  <td>${key.name}</td>
                  <td><code>${key.prefix}</code></td>
                  <td>${key.scopes.map((scope) => html`<${Badge} value=${scope} kind="scope" /> `)}</td>
                  <td><${Instant} at=${key.created_at} /></td>
                  <td>${key.revoked_at === null
                    ? html`<${ConfirmButton} label="Revoke" confirmLabel="Revoke: refused from now on" onConfirm=${() => revoke(key)} />`
                    : html`<span class="muted">revoked <${Instant} at=${key.revoked_at} /></span>`}</td>
                </tr>`,
              )}
            </tbody>
          </table>`}
    </section>
    <${IssueKey}
      credential=${credential}
      orgId=${orgId}
      onIssued=${(key) => {
        setIssued(key)
        loaded.reload()
      }}
    />
  </div>`
}
