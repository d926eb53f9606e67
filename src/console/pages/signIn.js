/**
 * Signing in: an organization API key or the operator token, pasted once and
 * kept in this tab's sessionStorage. Which it is, the service says: a key
 * describes itself at GET /api/v2/key, the operator token lists organizations.
 */
import { ApiFailure, call, storeCredential } from '../api.js'
import { Failure, html, useState } from '../ui.js'

/** The shape of an organization API key (services/credentials.ts): anything else is tried as the operator token. */
const API_KEY_SHAPE = /^ctk_[0-9a-z]{12}_[A-Za-z0-9_-]{43}$/

async function identify(token) {
  // Asked first where it is likely to be accepted, so that signing in logs no refused request in the browser.
  if (API_KEY_SHAPE.test(token)) {
    try {
      return { kind: 'key', token, key: await call(token, 'GET', '/api/v2/key') }
    } catch (error) {
      // An operator token shaped like a key is refused on the client API with 403; a key that is not valid with 401.
      if (!(error instanceof ApiFailure) || error.status !== 403) throw error
    }
  }
  await call(token, 'GET', '/admin/v1/organizations?limit=1')
  return { kind: 'operator', token }
}

export function SignIn({ onSignedIn }) {
  const [token, setToken] = useState('')
  const [error, setError] = useState()
  const [busy, setBusy] = useState(false)
  const submit = async (event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const credential = await identify(token.trim())
      storeCredential(credential)
      onSignedIn(credential)
    } catch (failure) {
      setError(failure.status === 401 ? { ...failure, message: 'That is not a valid API key or operator token (or the key was revoked).' } : failure)
    } finally {
      setBusy(false)
    }
  }
  return html`<div class="sign-in">
    <form class="card" onSubmit=${submit}>
      <h1>Conversation Trigger Service</h1>
      <p class="muted">Sign in with one of your organization's API keys, or with the operator token. It stays in this browser tab only, until you sign out or close it.</p>
      <label for="token">API key or operator token</label>
      <input id="token" name="token" type="password" autocomplete="off" spellcheck=${false} required value=${token} onInput=${(event) => setToken(event.target.value)} />
      <${Failure} error=${error} />
      <button type="submit" disabled=${busy || token.trim() === ''}>${busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
  </div>`
}
