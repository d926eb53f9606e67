/**
 * One task's story: the trigger as recorded, the zones it is scheduled in and
 * why, each interaction on a timeline, and cancel while it is not completed.
 */
import { call } from '../api.js'
import { Badge, ConfirmButton, Failure, html, Instant, useAction, useEffect, useLoad } from '../ui.js'
import { contactName, contactZones } from './tasks.js'

/** What told a task's zones, in words (the task view's timezone_source). */
const ZONE_SOURCES = {
  sent: 'sent on the trigger as contact.timezone',
  on_file: "the person's zone on file, from an earlier trigger",
  phone: "the area of the phone number",
  country: "every zone of the number's country: a mobile may be anywhere in it",
  fallback: "the campaign's fallback zone, for a number of no country",
}

const TASK_STATES = {
  pending: 'Waiting for its next attempt: it starts when the campaign window is open in every zone below.',
  in_progress: 'An attempt is running now.',
  completed: 'Completed: no further attempt starts.',
}

function Facts({ rows }) {
  return html`<dl class="facts">${rows.map(([term, value]) => html`<div><dt>${term}</dt><dd>${value}</dd></div>`)}</dl>`
}

/** A context value as text: strings as they are, anything else as JSON. */
const asText = (value) => (typeof value === 'string' ? value : JSON.stringify(value))

function Trigger({ trigger }) {
  const contact = trigger.contact ?? {}
  return html`<section class="card">
    <h3>Trigger as recorded</h3>
    <${Facts}
      rows=${[
        ['Trigger', html`<code>${trigger.id}</code>`],
        ['Received', html`<${Instant} at=${trigger.created_at} />`],
        ['Not before', html`<${Instant} at=${trigger.not_before} />`],
        ['Expires at (sent)', html`<${Instant} at=${trigger.expires_at} />`],
      ]}
    />
    <h4>Your ids</h4>
    ${trigger.ids.length === 0
      ? html`<p class="muted">None sent.</p>`
      : html`<ul class="ids">${trigger.ids.map((id) => html`<li><code>${id.source}</code> / <code>${id.type}</code> / <code>${id.value}</code></li>`)}</ul>`}
    <h4>Contact as sent</h4>
    ${trigger.contact === null
      ? html`<p class="muted">Left out: the person on file was reached through the ids.</p>`
      : html`<${Facts} rows=${Object.entries(contact).map(([name, value]) => [name, asText(value)])} />`}
    <h4>Context</h4>
    ${Object.keys(trigger.context).length === 0
      ? html`<p class="muted">None.</p>`
      : html`<${Facts} rows=${Object.entries(trigger.context).map(([name, value]) => [name, html`<code>${asText(value)}</code>`])} />`}
  </section>`
}

function Interactions({ task }) {
  if (task.interactions.length === 0) {
    return html`<section class="card"><h3>Interactions</h3><p class="muted">None yet. ${task.status === 'pending' ? 'The first starts at the next attempt time above.' : ''}</p></section>`
  }
  const zones = contactZones(task)
  return html`<section class="card">
    <h3>Interactions</h3>
    <ol class="timeline">
      ${task.interactions.map(
        (interaction) => html`<li key=${interaction.id} class=${`step step-${interaction.status}`}>
          <div class="step-head">
            <strong>${interaction.direction === 'inbound' ? 'Inbound' : `Attempt ${interaction.attempt}`}</strong>
            <${Badge} value=${interaction.status} />
            ${interaction.outcome === null ? null : html`<${Badge} value=${interaction.outcome} kind="outcome" />`}
            ${interaction.test_mode ? html`<${Badge} value="test" />` : null}
          </div>
          <${Facts}
            rows=${[
              ['Started', html`<${Instant} at=${interaction.started_at} zones=${zones} />`],
              ['Ended', html`<${Instant} at=${interaction.ended_at} />`],
              ['Duration', interaction.duration_s === null ? '—' : `${interaction.duration_s} s`],
              ['Interaction', html`<code>${interaction.id}</code>`],
              ['Provider', interaction.provider_ref === null ? interaction.provider : html`${interaction.provider} · <code>${interaction.provider_ref}</code>`],
            ]}
          />
        </li>`,
      )}
    </ol>
  </section>`
}

/** How often the page reads the task again while something about it is under way or about to be. */
const REFRESH_MS = 2000
/** A next attempt (of a call or a delivery) this close counts as about to happen. */
const SOON_MS = 60_000

const soon = (iso) => iso === null || Date.parse(iso) - Date.now() < SOON_MS

const DELIVERY_STATES = { pending: 'pending', succeeded: 'delivered', failed: 'failed' }

function Delivery({ delivery }) {
  return html`<div class="delivery">
    <div class="step-head">
      <span>to <code>${delivery.endpoint_id}</code></span>
      <${Badge} value=${DELIVERY_STATES[delivery.status]} kind=${delivery.status} />
      ${delivery.next_attempt_at === null ? null : html`<span class="muted">next attempt <${Instant} at=${delivery.next_attempt_at} /></span>`}
    </div>
    ${delivery.attempts.length === 0
      ? html`<p class="muted">Not attempted yet.</p>`
      : html`<table class="attempts">
          <thead><tr><th>#</th><th>Sent</th><th>Answer</th><th>Latency</th><th>Error</th></tr></thead>
          <tbody>
            ${delivery.attempts.map(
              (attempt) => html`<tr>
                <td>${attempt.attempt}</td>
                <td><${Instant} at=${attempt.at} /></td>
                <td>${attempt.status_code === null ? '—' : html`<${Badge} value=${String(attempt.status_code)} kind=${attempt.status_code < 300 ? 'succeeded' : 'failed'} />`}</td>
                <td>${attempt.latency_ms} ms</td>
                <td>${attempt.error ?? ''}</td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </div>`
}

function Webhooks({ events, mayResend, onResend }) {
  return html`<section class="card">
    <h3>Webhooks</h3>
    ${events.length === 0
      ? html`<p class="muted">No event yet: one is sent as each interaction ends, and one as the task completes.</p>`
      : events.map(
          (event) => html`<article key=${event.id} class="event">
            <div class="step-head">
              <strong>${event.type}</strong>
              <${Instant} at=${event.timestamp} />
              <code class="muted">${event.id}</code>
              <span class="spacer"></span>
              ${mayResend ? html`<button type="button" class="secondary" onClick=${() => onResend(event)}>Resend</button>` : null}
            </div>
            ${event.deliveries.length === 0
              ? html`<p class="muted">No endpoint was subscribed to ${event.type} when it was written.</p>`
              : event.deliveries.map((delivery) => html`<${Delivery} delivery=${delivery} />`)}
          </article>`,
        )}
  </section>`
}

export function TaskPage({ credential, taskId }) {
  const action = useAction()
  const loaded = useLoad(async () => {
    const task = await call(credential.token, 'GET', `/api/v2/tasks/${encodeURIComponent(taskId)}`)
    const [trigger, events] = await Promise.all([
      call(credential.token, 'GET', `/api/v2/triggers/${encodeURIComponent(task.trigger_id)}`),
      call(credential.token, 'GET', `/api/v2/tasks/${encodeURIComponent(taskId)}/events`),
    ])
    return { task, trigger, events }
  }, [taskId])
  // Read again while a call runs, or the next attempt or delivery is about to happen; not for a task that waits for tomorrow.
  const moving = (data) =>
    data.task.status === 'in_progress' ||
    (data.task.status === 'pending' && soon(data.task.next_attempt_at)) ||
    data.events.some((event) => event.deliveries.some((delivery) => delivery.status === 'pending' && soon(delivery.next_attempt_at)))
  const unsettled = loaded.data !== undefined && moving(loaded.data)
  useEffect(() => {
    if (!unsettled) return undefined
    const timer = setTimeout(loaded.reload, REFRESH_MS)
    return () => clearTimeout(timer)
  }, [unsettled, loaded.data, loaded.error])
  if (loaded.error && loaded.data === undefined) return html`<div><p><a href="#/tasks">← Tasks</a></p><${Failure} error=${loaded.error} /></div>`
  if (loaded.loading) return html`<p class="loading">Loading the task…</p>`
  const { task, trigger, events } = loaded.data
  const mayCancel = credential.key.scopes.includes('triggers:write') && task.status !== 'completed'
  const cancel = () =>
    action.run(async () => {
      await call(credential.token, 'POST', `/api/v2/tasks/${encodeURIComponent(task.id)}/cancel`)
      loaded.reload()
    })
  const resend = (event) =>
    action.run(async () => {
      await call(credential.token, 'POST', `/api/v2/events/${encodeURIComponent(event.id)}/redeliver`)
      loaded.reload()
    })
  const zones = contactZones(task)
  return html`<div class="task">
    <p><a href=${`#/tasks${trigger.ids.length > 0 ? `?source=${encodeURIComponent(trigger.ids[0].source)}&type=${encodeURIComponent(trigger.ids[0].type)}&value=${encodeURIComponent(trigger.ids[0].value)}` : ''}`}>← Tasks</a></p>
    <div class="title-row">
      <h2>${contactName(task.contact)}</h2>
      <${Badge} value=${task.status} />
      ${task.outcome === null ? null : html`<${Badge} value=${task.outcome} kind="outcome" />`}
      ${task.test_mode ? html`<${Badge} value="test" />` : null}
      <span class="spacer"></span>
      ${mayCancel ? html`<${ConfirmButton} label="Cancel task" confirmLabel="Cancel it: no further attempt" onConfirm=${cancel} />` : null}
    </div>
    <${Failure} error=${action.error ?? loaded.error} />
    <p class="muted">${TASK_STATES[task.status]}${task.campaign_paused ? ' Its campaign is paused: nothing starts until it is resumed.' : ''}</p>
    <section class="card">
      <${Facts}
        rows=${[
          ['Task', html`<code>${task.id}</code>`],
          ['Campaign', `${task.campaign} · ${task.channel}`],
          ['Phone', task.contact?.phone ?? 'erased'],
          ['Attempts', String(task.attempts)],
          ['Next attempt', html`<${Instant} at=${task.next_attempt_at} zones=${zones} />`],
          ['Created', html`<${Instant} at=${task.created_at} />`],
          ['Expires', html`<${Instant} at=${task.expires_at} zones=${zones} />`],
          ['Completed', html`<${Instant} at=${task.completed_at} />`],
        ]}
      />
      <h4>Time zones</h4>
      ${task.candidate_timezones.length === 0
        ? html`<p class="muted">None: the campaign keeps a zone of its own.</p>`
        : html`<p>
            ${task.candidate_timezones.map((zone) => html`<code class="zone">${zone}</code> `)}
            <span class="muted">— ${ZONE_SOURCES[task.timezone_source] ?? task.timezone_source}</span>
          </p>`}
    </section>
    <${Interactions} task=${task} />
    <${Webhooks} events=${events} mayResend=${credential.key.scopes.includes('webhooks:manage')} onResend=${resend} />
    <${Trigger} trigger=${trigger} />
  </div>`
}
