/**
 * One task's story: the trigger as recorded, the zones it is scheduled in and
 * why, the decision that holds it for the law or blocked it, each interaction
 * on a timeline with the decision that placed it and its conversation's
 * result, what was sent about it (pages/event.js), and cancel while it is
 * not completed.
 */
import { call } from '../api.js'
import { Badge, ConfirmButton, Failure, html, Instant, REFRESH_MS, soon, useAction, useEffect, useLoad } from '../ui.js'
import { deliveryDueSoon, EventHistory } from './event.js'
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

/** What may hold a pending task past its window, as its `waiting.for` says. */
const WAITING_FOR = {
  sender: "Waiting for its sender, whose pace other attempts from the same number or account took first (its attempts not spent),",
  contact_cap: "Held by the organization's cap on attempts to this number across campaigns",
  provider: "Its provider turned its last start away for now, throttling or in a moment's outage; it waits, its attempts not spent,",
  law: "Waiting for the law of the number's jurisdictions, as the decision below says (its attempts not spent),",
  callback: 'The person called back: while that call runs no attempt dials them (its attempts not spent), at the longest',
}

/** A decision's reasons in words, by code (the decision's `reasons[].code`). */
const REASONS = {
  consent_on_file: 'Consent on file',
  within_legal_hours: 'Within legal hours',
  under_legal_cap: 'Under the legal cap',
  registry_overridden: 'Listed on a do-not-call registry, overridden by consent',
  outside_campaign_window: "Outside the campaign's window",
  outside_legal_hours: 'Outside legal hours',
  legal_holiday: 'A legal holiday',
  legal_cap_reached: 'Legal cap on attempts reached',
  number_suppressed: 'The number is suppressed',
  consent_missing: 'Consent missing',
  consent_revoked: 'Consent revoked',
  consent_expired: 'Consent expired',
  registry_listed: 'Listed on a do-not-call registry',
}

/** Each reason of a decision: what it is, the consent, registry or holiday it names, and the rule with its source and profile. */
function Reasons({ reasons }) {
  return html`<ul class="reasons">
    ${reasons.map(
      (reason) => html`<li>
        <strong>${REASONS[reason.code] ?? reason.code}</strong>
        ${reason.consent_id === undefined ? null : html` · consent <code>${reason.consent_id}</code>`}
        ${reason.registry_id === undefined ? null : html` · registry <code>${reason.registry_id}</code>`}
        ${reason.holiday === undefined ? null : ` · ${reason.holiday}`}
        <div class="muted">
          ${reason.rule === null ? null : html`<code>${reason.rule}</code> · `}${reason.source}${reason.profile === undefined ? null : html` · <code>${reason.profile}</code>`}
        </div>
      </li>`,
    )}
  </ul>`
}

/** The calling-law profiles a decision applied: those of the jurisdictions the number may be in. */
function Profiles({ profiles }) {
  return profiles.length === 0
    ? html`<p class="muted">No calling-law profile covers the number's jurisdictions.</p>`
    : html`<p class="muted">Profiles applied: ${profiles.map((profile) => html`<code class="profile">${profile}</code> `)}</p>`
}

/**
 * The task's last decision that started no attempt: the deferral holding it
 * for the law (kept by a task cancelled or expired meanwhile), or the block
 * that completed it not_permitted.
 */
function TaskDecision({ task, zones }) {
  const decision = task.decision
  if (decision === null) return null
  const decided = html`Decided at <${Instant} at=${decision.at} />`
  return html`<section class=${`card decision-${decision.decision}`} aria-label="Decision">
    ${decision.decision === 'blocked'
      ? html`<h3>Not permitted</h3>
          <p class="muted">${decided}, before its ${task.attempts === 0 ? 'first' : 'next'} attempt, which was not made.</p>`
      : html`<h3>Held by the law</h3>
          <p class="muted">${decided}: ${decision.not_before === null ? 'the law allows no attempt before the task expires.' : html`no attempt before <${Instant} at=${decision.not_before} zones=${zones} />`}</p>`}
    <${Reasons} reasons=${decision.reasons} />
    <${Profiles} profiles=${decision.profiles} />
  </section>`
}

/** Why an attempt was placed: what the decision before it relied on. */
function Placed({ decision }) {
  return html`<div class="placed">
    <h4>Why it was placed</h4>
    ${decision.reasons.length === 0 ? html`<p class="muted">No consent or calling-law rule bound this attempt.</p>` : html`<${Reasons} reasons=${decision.reasons} />`}
    <${Profiles} profiles=${decision.profiles} />
  </div>`
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

/** A link to something the conversation kept elsewhere; only an https address is a link, anything else is shown as text. */
function KeptAt({ label, url }) {
  if (url === null || url === undefined) return null
  if (typeof url !== 'string' || !url.startsWith('https://')) return html`<span>${label}: <code>${String(url)}</code></span>`
  return html`<a href=${url} target="_blank" rel="noopener noreferrer">${label}</a>`
}

const SPEAKERS = { agent: 'Agent', contact: 'Contact' }

/**
 * The conversation turn by turn, as a chat: the agent's turns on the left,
 * the contact's on the right. Its own scrolling box, so that a long call
 * does not push the rest of the page away. A turn's time is in the viewer's
 * zone only (its exact instant in the tooltip): the contact's zones are beside
 * the interaction's start above, and a second line per turn would double it.
 */
function Transcript({ turns }) {
  return html`<ol class="transcript" aria-label="Transcript" tabindex="0">
    ${turns.map(
      (turn) => html`<li class=${`turn turn-${turn.role === 'contact' ? 'contact' : 'agent'}`}>
        <div class="turn-who">
          <strong>${SPEAKERS[turn.role] ?? turn.role}</strong>
          ${turn.at === undefined || turn.at === null ? null : html`<${Instant} at=${turn.at} />`}
        </div>
        <p>${turn.text}</p>
      </li>`,
    )}
  </ol>`
}

/** What the conversation handed back: how it went, what it learned, what was said, and where the rest is kept. */
function Result({ result, zones }) {
  // By name: the order the conversation sent is not kept (PostgreSQL's jsonb orders keys by length), and a sorted list is easier to scan.
  const data = result.data === null ? [] : Object.entries(result.data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return html`<div class="result">
    <h4>Conversation result</h4>
    ${result.disposition === null && !result.opt_out
      ? null
      : html`<div class="step-head">
          ${result.disposition === null ? null : html`<${Badge} value=${result.disposition} kind="disposition" />`}
          ${result.opt_out ? html`<span class="opt-out">Asked not to be contacted again</span>` : null}
        </div>`}
    ${result.summary === null ? null : html`<p class="summary">${result.summary}</p>`}
    <${Facts}
      rows=${[
        // The time the person asked for is theirs: shown in their zones, as the attempts are.
        ...(result.callback_at === null ? [] : [['Call back at', html`<${Instant} at=${result.callback_at} zones=${zones} />`]]),
        ['Received', html`<${Instant} at=${result.received_at} />`],
      ]}
    />
    ${data.length === 0
      ? null
      : html`<h5>Extracted data</h5>
          <table class="result-data">
            <thead><tr><th>Field</th><th>Value</th></tr></thead>
            <tbody>${data.map(([name, value]) => html`<tr><td><code>${name}</code></td><td>${asText(value)}</td></tr>`)}</tbody>
          </table>`}
    ${result.transcript === null || result.transcript.length === 0 ? null : html`<h5>Transcript</h5><${Transcript} turns=${result.transcript} />`}
    ${result.transcript_url === null && result.recording_url === null
      ? null
      : html`<p class="kept">
          <${KeptAt} label="Full transcript" url=${result.transcript_url} />
          <${KeptAt} label="Recording" url=${result.recording_url} />
        </p>`}
  </div>`
}

const HANDOFF_MODES = { redirect: 'redirect', stream: 'media stream', variables: "the agent's variables" }

/** How a call reached its conversation, and which values of the task a media stream or an agent's variables could not carry. */
function Handoff({ handoff, zones }) {
  return html`<div class="handoff">
    ${handoff.mode === 'voicemail'
      ? html`<p>A machine answered: the campaign's voicemail message was left after its greeting, at <${Instant} at=${handoff.at} zones=${zones} /></p>`
      : html`<p>Handed to the conversation by ${HANDOFF_MODES[handoff.mode] ?? handoff.mode} at <${Instant} at=${handoff.at} zones=${zones} /></p>`}
    ${handoff.left_out.length === 0
      ? null
      : html`<p class="muted">Not passed to the conversation:</p>
          <ul class="left-out muted">${handoff.left_out.map((left) => html`<li><code>${left.key}</code> — ${left.reason}</li>`)}</ul>`}
  </div>`
}

/** Outcomes of an outbound interaction where a conversation took place, so a result could have come. */
const CONVERSED = ['completed', 'replied']

/** An interaction's result, or in words why there is none (yet). */
function Outcome({ interaction, channel, zones }) {
  const result = interaction.result ?? null
  // Over, but held back until its conversation reports (results.wait_s), or a message thread kept open (results.conversation_s).
  const awaited =
    interaction.status !== 'ended'
      ? null
      : channel === 'voice'
        ? html`<p class="step-note awaiting">The call is over; its result is awaited. The interaction is reported when it comes, or when the campaign's wait for it runs out.</p>`
        : html`<p class="step-note awaiting">The conversation is open: what the person writes lands here until its result comes, or it closes (below).</p>`
  if (result !== null) return html`${awaited}<${Result} result=${result} zones=${zones} />`
  if (awaited !== null) return awaited
  if (interaction.status === 'finalized' && interaction.direction === 'outbound' && CONVERSED.includes(interaction.outcome)) {
    return html`<p class="step-note muted">No result reported.</p>`
  }
  return null
}

/** What a message sent in the conversation said: its text, or the body of its buttons or list. */
const messageText = (content) => content.text ?? content.buttons?.body ?? content.list?.body ?? ''

/**
 * A WhatsApp or SMS thread's state, read from the interaction's context
 * (GET /api/v2/interactions/{id}): until when WhatsApp's window lets any
 * message be sent, until when a conversation kept open stays open, and the
 * messages sent in it with their statuses. Read again while it runs, since
 * statuses change without the task changing.
 */
function Thread({ credential, interaction, zones }) {
  const loaded = useLoad(() => call(credential.token, 'GET', `/api/v2/interactions/${encodeURIComponent(interaction.id)}`), [interaction.id, interaction.status])
  const running = interaction.status !== 'finalized'
  useEffect(() => {
    if (!running || loaded.loading) return undefined
    const timer = setTimeout(loaded.reload, REFRESH_MS)
    return () => clearTimeout(timer)
  }, [running, loaded.data, loaded.error])
  if (loaded.data === undefined) return html`<${Failure} error=${loaded.error} />`
  const context = loaded.data
  const rows = [
    ...(context.window_closes_at === null ? [] : [[Date.parse(context.window_closes_at) > Date.now() ? 'Window open until' : 'Window closed at', html`<${Instant} at=${context.window_closes_at} zones=${zones} />`]]),
    ...(context.result_due_by === null ? [] : [['Conversation open until', html`<${Instant} at=${context.result_due_by} zones=${zones} />`]]),
  ]
  if (rows.length === 0 && context.messages.length === 0) return null
  return html`<div class="thread" aria-label="Thread">
    ${rows.length === 0 ? null : html`<${Facts} rows=${rows} />`}
    ${context.messages.length === 0
      ? null
      : html`<h5>Sent in the conversation</h5>
          <table class="attempts">
            <thead><tr><th>Sent</th><th>Message</th><th>Status</th></tr></thead>
            <tbody>
              ${context.messages.map(
                (message) => html`<tr key=${message.id}>
                  <td><${Instant} at=${message.created_at} /></td>
                  <td>${messageText(message.content)}</td>
                  <td><${Badge} value=${message.status} kind=${message.status === 'failed' ? 'failed' : 'succeeded'} />${message.error === null ? null : html` <span class="muted">${message.error}</span>`}</td>
                </tr>`,
              )}
            </tbody>
          </table>`}
  </div>`
}

const STEP_REASONS = { undelivered: 'the message was not delivered', not_on_whatsapp: 'the number is not on WhatsApp', no_reply: 'no reply came' }

/** The steps of a task that went on to its campaign's fallback step: each campaign, why it ended, its attempts. */
function Steps({ task }) {
  if (task.steps === undefined) return null
  const running = task.outcome === null
  return html`<section class="card" aria-label="Steps">
    <h3>Steps</h3>
    <ol class="timeline">
      ${task.steps.map(
        (step) => html`<li class="step">
          <div class="step-head">
            <strong>${step.campaign} · ${step.channel}</strong>
            <${Badge} value=${step.outcome} kind="outcome" />
          </div>
          <p class="muted">${STEP_REASONS[step.outcome] ? `Went on to the fallback step: ${STEP_REASONS[step.outcome]}.` : 'The last step.'} ${step.attempts} attempt${step.attempts === 1 ? '' : 's'}.</p>
        </li>`,
      )}
      ${running ? html`<li class="step"><div class="step-head"><strong>${task.campaign} · ${task.channel}</strong></div><p class="muted">Under way, in its campaign's window.</p></li>` : null}
    </ol>
  </section>`
}

function Interactions({ task, credential }) {
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
            <strong>${interaction.direction === 'inbound' ? (interaction.channel === 'voice' ? 'Called back' : 'Inbound') : interaction.attempt === null ? 'Attempt given back to a call back' : `Attempt ${interaction.attempt}`}</strong>
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
          ${interaction.decision === null || interaction.decision === undefined ? null : html`<${Placed} decision=${interaction.decision} />`}
          ${interaction.handoff === null || interaction.handoff === undefined ? null : html`<${Handoff} handoff=${interaction.handoff} zones=${zones} />`}
          <${Outcome} interaction=${interaction} channel=${interaction.channel} zones=${zones} />
          ${interaction.channel === 'voice' ? null : html`<${Thread} credential=${credential} interaction=${interaction} zones=${zones} />`}
        </li>`,
      )}
    </ol>
  </section>`
}

function Webhooks({ credential, events, onResend, onChanged }) {
  const mayResend = credential.key.scopes.includes('webhooks:manage')
  return html`<section class="card">
    <h3>Webhooks</h3>
    ${events.length === 0
      ? html`<p class="muted">No event yet: one is sent as each interaction ends, and one as the task completes.</p>`
      : events.map(
          (event) => html`<article key=${event.id} class="event" aria-label=${`${event.type} ${event.id}`}>
            <div class="step-head">
              <strong>${event.type}</strong>
              <${Instant} at=${event.timestamp} precise />
              <a href=${`#/events/${encodeURIComponent(event.id)}`}><code class="muted">${event.id}</code></a>
              <span class="spacer"></span>
              ${mayResend ? html`<button type="button" class="secondary" onClick=${() => onResend(event)}>Resend</button>` : null}
            </div>
            <${EventHistory} credential=${credential} event=${event} onChanged=${onChanged} />
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
    data.events.some(deliveryDueSoon)
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
    ${task.waiting === undefined ? null : html`<p class="notice" role="status">${WAITING_FOR[task.waiting.for] ?? `Held by ${task.waiting.for}`} until <${Instant} at=${task.waiting.until} zones=${zones} /></p>`}
    <${TaskDecision} task=${task} zones=${zones} />
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
    <${Steps} task=${task} />
    <${Interactions} task=${task} credential=${credential} />
    <${Webhooks} credential=${credential} events=${events} onResend=${resend} onChanged=${loaded.reload} />
    <${Trigger} trigger=${trigger} />
  </div>`
}
