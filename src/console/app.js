/**
 * The console: the shell (who is signed in, the navigation) and the routes,
 * which live in the URL's fragment (#/tasks/tsk_...) so that the service
 * serves one page and a reload or a shared link opens the same view.
 */
import { forgetCredential, storedCredential } from './api.js'
import { CampaignPage } from './pages/campaign.js'
import { EventPage } from './pages/event.js'
import { OrganizationPage, OrganizationsPage } from './pages/organizations.js'
import { QueuesPage } from './pages/queues.js'
import { SignIn } from './pages/signIn.js'
import { TaskPage } from './pages/task.js'
import { SuppressionsPage } from './pages/suppressions.js'
import { TasksPage } from './pages/tasks.js'
import { WebhooksPage } from './pages/webhooks.js'
import { html, render, useEffect, useState } from './ui.js'

/** The route in the fragment: its path parts and its query. */
function currentRoute() {
  const [path, search = ''] = location.hash.replace(/^#/, '').split('?')
  const decoded = (part) => {
    try {
      return decodeURIComponent(part)
    } catch {
      // A malformed escape names no page: shown as not found.
      return '\u0000'
    }
  }
  return { parts: path.split('/').filter((part) => part !== '').map(decoded), query: new URLSearchParams(search) }
}

function useRoute() {
  const [route, setRoute] = useState(currentRoute)
  useEffect(() => {
    const changed = () => setRoute(currentRoute())
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return route
}

function Shell({ credential, onSignOut, children }) {
  const identity =
    credential.kind === 'operator'
      ? html`<span class="who">Operator</span>`
      : html`<span class="who">${credential.key.organization.name} <span class="muted">· key ${credential.key.name}</span></span>`
  const links =
    credential.kind === 'operator'
      ? [
          ['#/organizations', 'Organizations'],
          ['#/queues', 'Queues'],
        ]
      : [
          ...(credential.key.scopes.includes('triggers:read') ? [['#/tasks', 'Tasks']] : []),
          ...(credential.key.scopes.includes('webhooks:manage') ? [['#/webhooks', 'Webhooks']] : []),
          ...(credential.key.scopes.includes('suppressions:manage') ? [['#/suppressions', 'Suppressions']] : []),
        ]
  return html`<div class="shell">
    <header class="top">
      <a class="brand" href="#/">Conversation Trigger Service</a>
      <nav>${links.map(([href, label]) => html`<a href=${href}>${label}</a>`)}</nav>
      <div class="identity">${identity}<button type="button" class="secondary" onClick=${onSignOut}>Sign out</button></div>
    </header>
    <section class="page">${children}</section>
  </div>`
}

/** The start page of a key that may not read tasks: what it may do instead. */
function KeyWithoutReads({ credential }) {
  return html`<div class="empty">
    <h3>This key cannot read tasks</h3>
    <p>Its scopes are ${credential.key.scopes.join(', ')}. The pages it may use are in the menu above; ask your operator for a key with triggers:read to follow tasks.</p>
  </div>`
}

function NotFound() {
  return html`<div class="empty"><h3>Nothing here</h3><p>This page does not exist. <a href="#/">Back to the start.</a></p></div>`
}

function pageFor(credential, { parts, query }) {
  if (credential.kind === 'operator') {
    if (parts.length === 0 || (parts[0] === 'organizations' && parts.length === 1)) return html`<${OrganizationsPage} credential=${credential} />`
    if (parts[0] === 'queues' && parts.length === 1) return html`<${QueuesPage} credential=${credential} />`
    // Keyed by what they show, so that nothing of one organization or campaign stays on another's page.
    if (parts[0] === 'organizations' && parts.length === 2) return html`<${OrganizationPage} key=${parts[1]} credential=${credential} orgId=${parts[1]} />`
    if (parts[0] === 'organizations' && parts[2] === 'campaigns' && parts.length === 4) {
      return html`<${CampaignPage} key=${parts[3]} credential=${credential} orgId=${parts[1]} campaignId=${parts[3]} />`
    }
    return html`<${NotFound} />`
  }
  const may = (scope) => credential.key.scopes.includes(scope)
  if (parts.length === 0 && !may('triggers:read')) return html`<${KeyWithoutReads} credential=${credential} />`
  if ((parts.length === 0 || (parts[0] === 'tasks' && parts.length === 1)) && may('triggers:read')) return html`<${TasksPage} credential=${credential} query=${query} />`
  if (parts[0] === 'tasks' && parts.length === 2 && may('triggers:read')) return html`<${TaskPage} key=${parts[1]} credential=${credential} taskId=${parts[1]} />`
  if (parts[0] === 'events' && parts.length === 2 && may('triggers:read')) return html`<${EventPage} key=${parts[1]} credential=${credential} eventId=${parts[1]} />`
  if (parts[0] === 'webhooks' && parts.length === 1 && may('webhooks:manage')) return html`<${WebhooksPage} credential=${credential} />`
  if (parts[0] === 'suppressions' && parts.length === 1 && may('suppressions:manage')) return html`<${SuppressionsPage} credential=${credential} />`
  return html`<${NotFound} />`
}

function App() {
  const [credential, setCredential] = useState(storedCredential)
  const route = useRoute()
  if (credential === undefined) return html`<${SignIn} onSignedIn=${setCredential} />`
  const signOut = () => {
    forgetCredential()
    setCredential(undefined)
    location.hash = ''
  }
  return html`<${Shell} credential=${credential} onSignOut=${signOut}>${pageFor(credential, route)}</${Shell}>`
}

const root = document.getElementById('console')
// The loading line is the server's; Preact draws into an empty element.
root.textContent = ''
render(html`<${App} />`, root)
