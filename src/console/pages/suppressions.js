/**
 * The organization's suppressed numbers: never contacted again, on any
 * channel. A number added here can be lifted here; one that opted out itself
 * (by reply, through its provider or in a conversation) only the operator can lift.
 */
import { call } from '../api.js'
import { Badge, ConfirmButton, Empty, Failure, html, Instant, useAction, useLoad, useState } from '../ui.js'

const PATH = '/api/v2/suppressions'
const PAGE = 100

const REASONS = { manual: 'added by you', reply: 'replied to stop', provider: 'opted out through the provider', conversation: 'asked in a conversation not to be contacted' }

export function SuppressionsPage({ credential }) {
  const [phone, setPhone] = useState('')
  const [after, setAfter] = useState([])
  const action = useAction()
  const cursor = after.at(-1)
  const page = useLoad(() => call(credential.token, 'GET', `${PATH}?limit=${PAGE}${cursor === undefined ? '' : `&after=${encodeURIComponent(cursor)}`}`), [cursor ?? ''])
  const add = (event) => {
    event.preventDefault()
    return action.run(async () => {
      await call(credential.token, 'POST', PATH, { phone: phone.trim() })
      setPhone('')
      page.reload()
    })
  }
  const lift = (suppression) =>
    action.run(async () => {
      await call(credential.token, 'DELETE', `${PATH}/${encodeURIComponent(suppression.phone)}`)
      page.reload()
    })
  let list
  if (page.error) list = html`<${Failure} error=${page.error} />`
  else if (page.loading) list = html`<p class="loading">Loading…</p>`
  else if (page.data.length === 0 && cursor === undefined) {
    list = html`<${Empty} title="No number is suppressed">A number that replies STOP, or opts out through its provider, is added here by the service; add one yourself when a person asks not to be contacted.</${Empty}>`
  } else {
    list = html`<table>
        <thead><tr><th>Number</th><th>Why</th><th>Since</th><th></th></tr></thead>
        <tbody>
          ${page.data.map(
            (suppression) => html`<tr key=${suppression.phone}>
              <td><code>${suppression.phone}</code></td>
              <td><${Badge} value=${REASONS[suppression.reason]} kind=${suppression.reason === 'manual' ? 'pending' : 'failed'} /></td>
              <td><${Instant} at=${suppression.created_at} /></td>
              <td>${suppression.reason === 'manual' ? html`<${ConfirmButton} label="Lift" confirmLabel="Lift: it may be contacted again" onConfirm=${() => lift(suppression)} />` : html`<span class="muted">only the operator can lift it</span>`}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <div class="actions pager">
        ${after.length > 0 ? html`<button type="button" class="secondary" onClick=${() => setAfter(after.slice(0, -1))}>Previous</button>` : null}
        ${page.data.length === PAGE ? html`<button type="button" class="secondary" onClick=${() => setAfter([...after, page.data.at(-1).phone])}>Next</button>` : null}
      </div>`
  }
  return html`<div>
    <h2>Suppressions</h2>
    <form class="card inline-form" onSubmit=${add} aria-label="Suppress a number">
      <label>Number <input name="phone" required placeholder="+44 20 7946 0958" value=${phone} onInput=${(event) => setPhone(event.target.value)} /></label>
      <button type="submit" disabled=${phone.trim() === ''}>Suppress</button>
    </form>
    <${Failure} error=${action.error} />
    ${list}
  </div>`
}
