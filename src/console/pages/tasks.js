/**
 * Finding tasks by one of the client's own ids (GET /api/v2/tasks): the
 * question a client developer starts from, "what happened to candidate 4411?".
 */
import { call, query as queryString } from '../api.js'
import { Badge, Empty, Failure, html, Instant, useLoad, useState } from '../ui.js'

export function contactName(contact) {
  const name = [contact?.first_name, contact?.last_name].filter((part) => part).join(' ')
  return name === '' ? (contact?.phone ?? '—') : name
}

/** The zones a task's times are shown in beside the viewer's: the contact's one zone, or every candidate. */
export function contactZones(task) {
  return task.timezone !== null ? [task.timezone] : task.candidate_timezones
}

function SearchForm({ initial }) {
  const [values, setValues] = useState(initial)
  const field = (name, label, placeholder) => html`<label>
    ${label}
    <input name=${name} placeholder=${placeholder} value=${values[name]} required onInput=${(event) => setValues({ ...values, [name]: event.target.value })} />
  </label>`
  const submit = (event) => {
    event.preventDefault()
    location.hash = `#/tasks${queryString({ source: values.source.trim(), type: values.type.trim(), value: values.value.trim() })}`
  }
  return html`<form class="search card" onSubmit=${submit} aria-label="Find tasks by your id">
    ${field('source', 'Source', 'ats')} ${field('type', 'Type', 'candidate_id')} ${field('value', 'Value', 'C-4411')}
    <button type="submit">Find tasks</button>
  </form>`
}

function TaskRows({ tasks }) {
  return html`<table class="tasks">
    <thead>
      <tr><th>Contact</th><th>Campaign</th><th>Status</th><th>Attempts</th><th>Next attempt</th><th>Created</th></tr>
    </thead>
    <tbody>
      ${tasks.map(
        (task) => html`<tr key=${task.id}>
          <td>
            <a href=${`#/tasks/${encodeURIComponent(task.id)}`}>${contactName(task.contact)}</a>
            <div class="muted">${task.contact.phone}</div>
          </td>
          <td>${task.campaign} <span class="muted">· ${task.channel}</span>${task.test_mode ? html` <${Badge} value="test" />` : null}</td>
          <td><${Badge} value=${task.status} /> ${task.outcome === null ? null : html`<${Badge} value=${task.outcome} kind="outcome" />`}</td>
          <td>${task.attempts}</td>
          <td><${Instant} at=${task.next_attempt_at} zones=${contactZones(task)} /></td>
          <td><${Instant} at=${task.created_at} /></td>
        </tr>`,
      )}
    </tbody>
  </table>`
}

export function TasksPage({ credential, query }) {
  const wanted = { source: query.get('source') ?? '', type: query.get('type') ?? '', value: query.get('value') ?? '' }
  const searching = wanted.source !== '' && wanted.type !== '' && wanted.value !== ''
  const found = useLoad(
    () => (searching ? call(credential.token, 'GET', `/api/v2/tasks${queryString(wanted)}`) : Promise.resolve(undefined)),
    [wanted.source, wanted.type, wanted.value],
  )
  let results = null
  if (!searching) {
    results = html`<${Empty} title="Find a person's tasks">
      Enter one of the ids your system sent on the trigger (its source, type and value), such as <code>ats</code>, <code>candidate_id</code>, <code>C-4411</code>.
    </${Empty}>`
  } else if (found.error) results = html`<${Failure} error=${found.error} />`
  else if (found.loading) results = html`<p class="loading">Looking…</p>`
  else if (found.data.length === 0) {
    results = html`<${Empty} title="No task carries this id">
      Source and type are compared lowercased and the value exactly. A trigger sent in test mode is found the same way.
    </${Empty}>`
  } else results = html`<${TaskRows} tasks=${found.data} />`
  return html`<div>
    <h2>Tasks</h2>
    <${SearchForm} key=${JSON.stringify(wanted)} initial=${wanted} />
    ${results}
  </div>`
}
