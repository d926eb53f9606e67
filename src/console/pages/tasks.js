/**
 * The organization's tasks (GET /api/v2/tasks), newest first, a page at a
 * time, filtered, or found by a phone number or one of the client's own ids:
 * the question a client developer starts from, "what happened to candidate
 * 4411?".
 */
import { call, query as queryString } from '../api.js'
import { Badge, Empty, Failure, html, Instant, useLoad, useState } from '../ui.js'

export function contactName(contact) {
  const name = [contact?.first_name, contact?.last_name].filter((part) => part).join(' ')
  if (contact === null) return 'Erased'
  return name === '' ? contact.phone : name
}

/** The zones a task's times are shown in beside the viewer's: the contact's one zone, or every candidate. */
export function contactZones(task) {
  return task.timezone !== null ? [task.timezone] : task.candidate_timezones
}

const STATUSES = ['pending', 'in_progress', 'completed']
const OUTCOMES = ['reached', 'unreachable', 'failed', 'cancelled', 'expired', 'opted_out', 'not_permitted']
/** What the list is asked for, as the page's URL and the API name it. */
const FIELDS = ['phone', 'source', 'type', 'value', 'status', 'outcome', 'campaign', 'test_mode', 'created_from', 'created_before']
const PAGE = 25

/** A datetime-local value, read in the viewer's zone, as the instant the API takes; and back. */
const toInstant = (local) => (local === '' ? '' : new Date(local).toISOString())
function toLocal(iso) {
  const at = new Date(iso)
  // What the URL holds may not be an instant (typed by hand): the API's answer then says why.
  if (Number.isNaN(at.getTime())) return ''
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16)
}

function FilterForm({ initial }) {
  const [values, setValues] = useState({ ...initial, created_from: toLocal(initial.created_from), created_before: toLocal(initial.created_before) })
  const set = (name) => (event) => setValues({ ...values, [name]: event.target.value })
  const text = (name, label, placeholder) => html`<label>${label}<input name=${name} placeholder=${placeholder} value=${values[name]} onInput=${set(name)} /></label>`
  const choice = (name, label, options) => html`<label>
    ${label}
    <select name=${name} value=${values[name]} onChange=${set(name)}>
      <option value="">Any</option>
      ${options.map(([value, text]) => html`<option value=${value}>${text}</option>`)}
    </select>
  </label>`
  const submit = (event) => {
    event.preventDefault()
    const wanted = Object.fromEntries(FIELDS.map((name) => [name, values[name].trim()]))
    location.hash = `#/tasks${queryString({ ...wanted, created_from: toInstant(wanted.created_from), created_before: toInstant(wanted.created_before) })}`
  }
  return html`<form class="card" onSubmit=${submit} aria-label="Find tasks">
    <div class="grid-form">
      ${text('phone', 'Phone number', '+44 20 7946 0958')}
      ${text('source', 'Your id: source', 'ats')} ${text('type', 'Type', 'candidate_id')} ${text('value', 'Value', 'C-4411')}
      ${choice('status', 'Status', STATUSES.map((status) => [status, status.replace('_', ' ')]))}
      ${choice('outcome', 'Outcome', OUTCOMES.map((outcome) => [outcome, outcome.replace('_', ' ')]))}
      ${text('campaign', 'Campaign (routing key)', 'screening')}
      ${choice('test_mode', 'Mode', [['false', 'Live only'], ['true', 'Test only']])}
      <label>Created from<input type="datetime-local" name="created_from" value=${values.created_from} onInput=${set('created_from')} /></label>
      <label>Created before<input type="datetime-local" name="created_before" value=${values.created_before} onInput=${set('created_before')} /></label>
    </div>
    <div class="actions filter-actions">
      <button type="submit">Show tasks</button>
      <a class="button-link" href="#/tasks">Clear</a>
    </div>
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
            <div class="muted">${task.contact?.phone ?? 'personal data erased'}</div>
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
  const wanted = Object.fromEntries(FIELDS.map((name) => [name, query.get(name) ?? '']))
  const before = query.get('before') ?? ''
  const filtered = FIELDS.some((name) => wanted[name] !== '')
  const found = useLoad(
    () => call(credential.token, 'GET', `/api/v2/tasks${queryString({ ...wanted, before, limit: PAGE })}`),
    [...FIELDS.map((name) => wanted[name]), before],
  )
  let results
  if (found.error) results = html`<${Failure} error=${found.error} />`
  else if (found.loading) results = html`<p class="loading">Looking…</p>`
  else if (found.data.length === 0 && before !== '') results = html`<${Empty} title="No older tasks">This is the end of the list.</${Empty}>`
  else if (found.data.length === 0 && filtered) {
    results = html`<${Empty} title="No task matches">
      A phone number is matched as the number dialled (in test mode, the tester's); an id's source and type in any case and its value exactly. Clear a filter to see more.
    </${Empty}>`
  } else if (found.data.length === 0) {
    results = html`<${Empty} title="No tasks yet">
      Each trigger your system sends (<code>POST /api/v2/triggers</code>) makes a task, listed here newest first.
    </${Empty}>`
  } else results = html`<${TaskRows} tasks=${found.data} />`
  const older = found.data?.length === PAGE ? `#/tasks${queryString({ ...wanted, before: found.data.at(-1).id })}` : undefined
  return html`<div>
    <h2>Tasks</h2>
    <${FilterForm} key=${JSON.stringify(wanted)} initial=${wanted} />
    ${results}
    ${before !== '' || older !== undefined
      ? html`<div class="actions pager">
          ${before !== '' ? html`<a class="button-link" href=${`#/tasks${queryString(wanted)}`}>Newest</a>` : null}
          ${older !== undefined ? html`<a class="button-link" href=${older}>Older</a>` : null}
        </div>`
      : null}
  </div>`
}
