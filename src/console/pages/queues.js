/**
 * The service's queues, over every organization: due tasks, running
 * interactions, pending and retrying deliveries, and how long the oldest of
 * each has waited. Read again every few seconds while the page is open.
 */
import { call } from '../api.js'
import { Failure, html, Instant, useEffect, useLoad } from '../ui.js'

const REFRESH_MS = 5000

/** How long ago an instant was, in words. */
function waited(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))
  if (seconds < 90) return `${seconds} s`
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`
  return `${(seconds / 3600).toFixed(1)} h`
}

function Queue({ title, figures, oldest, oldestLabel }) {
  return html`<section class="card queue" aria-label=${title}>
    <h3>${title}</h3>
    <dl class="facts">${figures.map(([term, value]) => html`<div><dt>${term}</dt><dd class="figure">${value}</dd></div>`)}</dl>
    <p class="muted">${oldest === null ? `${oldestLabel}: none` : html`${oldestLabel}: <${Instant} at=${oldest} /> (${waited(oldest)} ago)`}</p>
  </section>`
}

export function QueuesPage({ credential }) {
  const depths = useLoad(() => call(credential.token, 'GET', '/admin/v1/queues'), [])
  useEffect(() => {
    const timer = setTimeout(depths.reload, REFRESH_MS)
    return () => clearTimeout(timer)
  }, [depths.data, depths.error])
  if (depths.error) return html`<div><h2>Queues</h2><${Failure} error=${depths.error} /></div>`
  if (depths.loading) return html`<p class="loading">Loading…</p>`
  const { tasks, interactions, deliveries } = depths.data
  return html`<div>
    <h2>Queues</h2>
    <div class="queues">
      <${Queue} title="Tasks" figures=${[['pending', tasks.pending], ['due now', tasks.due]]} oldest=${tasks.oldest_due_at} oldestLabel="Longest due" />
      <${Queue} title="Interactions" figures=${[['running', interactions.running]]} oldest=${interactions.oldest_started_at} oldestLabel="Longest running, since" />
      <${Queue}
        title="Webhook deliveries"
        figures=${[['pending', deliveries.pending], ['retrying', deliveries.retrying], ['due now', deliveries.due]]}
        oldest=${deliveries.oldest_due_at}
        oldestLabel="Most overdue"
      />
    </div>
    <p class="muted">Over every organization; read again every ${REFRESH_MS / 1000} s.</p>
  </div>`
}
