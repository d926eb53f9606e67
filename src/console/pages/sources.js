/**
 * An organization's sources, on the operator's organization page: the
 * systems its triggers cite in ids[].source, the id types each may send,
 * whether a trigger citing it may leave `contact` out, and the context keys
 * it must send. Once an organization has one, every trigger's ids are checked
 * against them.
 */
import { call } from '../api.js'
import { ConfirmButton, Failure, html, useAction, useState } from '../ui.js'

/** The words of a comma- or space-separated field. */
const words = (text) => text.split(/[\s,]+/).filter((word) => word !== '')

function NewSource({ credential, path, onAdded }) {
  const blank = { name: '', id_types: '', optional: false, required_context: '' }
  const [draft, setDraft] = useState(blank)
  const adding = useAction()
  const set = (field) => (event) => setDraft({ ...draft, [field]: event.target.value })
  const submit = (event) => {
    event.preventDefault()
    return adding.run(async () => {
      await call(credential.token, 'POST', path, {
        name: draft.name.trim(),
        id_types: words(draft.id_types),
        contact: draft.optional ? 'optional' : 'required',
        required_context: words(draft.required_context),
      })
      setDraft(blank)
      onAdded()
    })
  }
  return html`<form class="grid-form" onSubmit=${submit} aria-label="Add a source">
    <label>Source <input name="source-name" required placeholder="ats" value=${draft.name} onInput=${set('name')} /></label>
    <label>Id types <input name="id-types" required placeholder="candidate_id, application_id" value=${draft.id_types} onInput=${set('id_types')} /></label>
    <label>Context it must send <input name="required-context" placeholder="job_title" value=${draft.required_context} onInput=${set('required_context')} /></label>
    <label class="check"><input type="checkbox" checked=${draft.optional} onChange=${() => setDraft({ ...draft, optional: !draft.optional })} /> A trigger citing it may leave contact out (the person on file is reached)</label>
    <${Failure} error=${adding.error} />
    <div><button type="submit" disabled=${draft.name.trim() === '' || words(draft.id_types).length === 0}>Add source</button></div>
  </form>`
}

export function Sources({ credential, orgId, sources, onChanged }) {
  const path = `/admin/v1/organizations/${encodeURIComponent(orgId)}/sources`
  const removing = useAction()
  const remove = (source) =>
    removing.run(async () => {
      await call(credential.token, 'DELETE', `${path}/${encodeURIComponent(source.name)}`)
      onChanged()
    })
  return html`<section class="card" aria-label="Sources">
    <h3>Sources</h3>
    ${sources.length === 0
      ? html`<p class="muted">None: triggers may cite any source and id type. Add the organization's systems to have every trigger's ids checked against them.</p>`
      : html`<table>
          <thead><tr><th>Source</th><th>Id types</th><th>Contact</th><th>Context it must send</th><th></th></tr></thead>
          <tbody>
            ${sources.map(
              (source) => html`<tr key=${source.name}>
                <td><code>${source.name}</code></td>
                <td>${source.id_types.map((type) => html`<code>${type}</code> `)}</td>
                <td>${source.contact}</td>
                <td>${source.required_context.length === 0 ? html`<span class="muted">nothing</span>` : source.required_context.map((key) => html`<code>${key}</code> `)}</td>
                <td><${ConfirmButton} label="Remove" confirmLabel="Remove: triggers may no longer cite it" onConfirm=${() => remove(source)} /></td>
              </tr>`,
            )}
          </tbody>
        </table>`}
    <${Failure} error=${removing.error} />
    <h4>Add a source</h4>
    <${NewSource} credential=${credential} path=${path} onAdded=${onChanged} />
  </section>`
}
