/**
 * What every page shares: the UI library (Preact with htm, one ES module of
 * the htm package, no build step) and the small pieces each page draws with.
 * Every value from a client is passed to htm as a value, which Preact sets as
 * text: nothing here ever writes HTML from data.
 */
import { html, useEffect, useState } from './vendor/preact-htm.js'

export { html, render, useEffect, useState } from './vendor/preact-htm.js'

/** The viewer's own time zone, as the browser reports it. */
export const VIEWER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone

const formats = new Map()

/**
 * An instant as a date and time in `zone` (the viewer's by default), with the
 * zone's short name, to the minute or (`precise`) to the millisecond; as the
 * UTC instant itself where this browser does not know the zone.
 */
export function formatInstant(iso, zone = VIEWER_ZONE, { precise = false } = {}) {
  if (iso === null || iso === undefined) return '—'
  const name = `${zone} ${precise}`
  let format = formats.get(name)
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat(undefined, {
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        ...(precise ? { second: '2-digit', fractionalSecondDigits: 3 } : {}),
        timeZone: zone,
        timeZoneName: 'short',
      })
    } catch {
      return iso
    }
    formats.set(name, format)
  }
  return format.format(new Date(iso))
}

/**
 * An instant in the viewer's zone, and beside it in the contact's zones when
 * they differ. `precise`: to the millisecond, for what a machine did (a
 * webhook sent, answered), where the order of two in one minute matters.
 */
export function Instant({ at, zones = [], precise = false }) {
  if (at === null || at === undefined) return html`<span class="muted">—</span>`
  const others = zones.filter((zone) => zone !== VIEWER_ZONE)
  return html`<span class="instant">
    <time datetime=${at} title=${at}>${formatInstant(at, VIEWER_ZONE, { precise })}</time>
    ${others.map((zone) => html`<span class="zone-time" title=${zone}>${formatInstant(at, zone, { precise })} · ${zone}</span>`)}
  </span>`
}

/** How often a page reads again what is under way or about to be (a call, a delivery's next attempt). */
export const REFRESH_MS = 2000
/** A next attempt (of a call or a delivery) this close counts as about to happen. */
const SOON_MS = 60_000

/** Whether an instant (null: none set, so at any time) is about to come. */
export const soon = (iso) => iso === null || Date.parse(iso) - Date.now() < SOON_MS

/** A failed call, in words, with the request id to quote to an operator. */
export function Failure({ error }) {
  if (error === undefined || error === null) return null
  return html`<div class="failure" role="alert">
    <strong>${error.message}</strong>
    ${error.requestId === undefined ? null : html`<span class="request-id">request_id <code>${error.requestId}</code></span>`}
  </div>`
}

/** What to do next when there is nothing to show. */
export function Empty({ title, children }) {
  return html`<div class="empty"><h3>${title}</h3><p>${children}</p></div>`
}

export function Badge({ value, kind = value }) {
  return html`<span class=${`badge badge-${String(kind).replace(/[^a-z_]/g, '')}`}>${value ?? '—'}</span>`
}

/**
 * The state of one load: `data` once it came, `error` if it failed, and a
 * `reload` to run it again. `load` reruns whenever `keys` change, and until
 * it answers for the new keys, what it answered for the old ones is not shown.
 * A reload that fails keeps the data it had, beside the error.
 */
export function useLoad(load, keys) {
  const current = JSON.stringify(keys)
  const [state, setState] = useState({ for: undefined })
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    let live = true
    load().then(
      (data) => live && setState({ for: current, data }),
      (error) => live && setState((previous) => ({ for: current, data: previous.for === current ? previous.data : undefined, error })),
    )
    return () => {
      live = false
    }
  }, [current, generation])
  const settled = state.for === current
  return { loading: !settled, data: settled ? state.data : undefined, error: settled ? state.error : undefined, reload: () => setGeneration((n) => n + 1) }
}

/**
 * An action the viewer starts (a save, a cancel), and its failure to show:
 * `run(act)` clears the last failure, awaits `act`, and keeps what it threw.
 */
export function useAction() {
  const [error, setError] = useState()
  const run = async (act) => {
    setError(undefined)
    try {
      await act()
    } catch (failure) {
      setError(failure)
    }
  }
  return { error, run }
}

/** A button for an action that cannot be undone: the first click asks, the second acts. */
export function ConfirmButton({ label, confirmLabel, onConfirm, disabled }) {
  const [asking, setAsking] = useState(false)
  const [busy, setBusy] = useState(false)
  if (!asking) return html`<button type="button" class="danger" disabled=${disabled} onClick=${() => setAsking(true)}>${label}</button>`
  const act = async () => {
    setBusy(true)
    try {
      await onConfirm()
    } finally {
      setBusy(false)
      setAsking(false)
    }
  }
  return html`<span class="confirm">
    <button type="button" class="danger" disabled=${busy} onClick=${act}>${confirmLabel}</button>
    <button type="button" class="secondary" disabled=${busy} onClick=${() => setAsking(false)}>Keep it</button>
  </span>`
}

/** A secret shown once, with a button that copies it. */
export function ShownOnce({ label, secret }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    await navigator.clipboard.writeText(secret)
    setCopied(true)
  }
  return html`<div class="shown-once" role="status">
    <p><strong>${label}</strong> It is shown this once: store it now.</p>
    <div class="secret-row"><code class="secret">${secret}</code><button type="button" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button></div>
  </div>`
}
