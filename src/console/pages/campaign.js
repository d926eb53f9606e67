/**
 * A campaign's settings, new or changed, with a preview of what its schedule
 * means for one contact (POST /admin/v1/schedule-preview) before it is saved.
 */
import { call } from '../api.js'
import { Failure, html, Instant, useAction, useLoad, useState } from '../ui.js'

const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const RETRY_OUTCOMES = ['no_answer', 'busy', 'voicemail', 'failed']
const PROVIDERS = ['simulator', 'twilio', 'whatsapp_cloud', 'vapi', 'retell', 'elevenlabs']
/** Each provider's pace for its sender when the campaign sets none (Channel.senderPace). */
const PROVIDER_PACES = {
  twilio: "Twilio's: 1 call a second per account",
  whatsapp_cloud: "Meta's: 80 a second per number",
}
const DEFAULT_WINDOW = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '20:00' }
const PURPOSES = ['informational', 'transactional', 'healthcare', 'marketing']
const CONSENT_KINDS = [
  ['express', 'express'],
  ['express_written', 'express written'],
  ['whatsapp_opt_in', 'WhatsApp opt-in'],
]
const FALLBACK_CONDITIONS = [
  ['undelivered', 'the message was not delivered'],
  ['not_on_whatsapp', 'the number is not on WhatsApp (at once)'],
  ['no_reply', 'no reply'],
]

/**
 * The Twilio voicemail policy's fields, read out of provider_config.voicemail
 * (and the settings JSON shown without it), with what follows a message left
 * (attempts.voicemail_left).
 */
function voicemailDraftOf(campaign) {
  const { voicemail, ...rest } = campaign?.provider_config ?? {}
  const text = voicemail?.message?.text
  const after = campaign?.attempts?.voicemail_left
  return {
    providerConfig: campaign?.provider === 'twilio' ? rest : (campaign?.provider_config ?? {}),
    voicemail_policy: campaign?.provider === 'twilio' ? (voicemail?.policy ?? '') : '',
    voicemail_text: text === undefined ? '' : typeof text === 'string' ? text : JSON.stringify(text, null, 2),
    voicemail_audio_url: voicemail?.message?.audio_url ?? '',
    voicemail_then: after?.then ?? '',
    voicemail_delay_s: after?.delay_s === undefined ? '' : String(after.delay_s),
  }
}

/** provider_config.voicemail as the draft says, or undefined when no policy is chosen (the campaign then hangs up). */
function voicemailOf(draft) {
  if (draft.provider !== 'twilio' || draft.voicemail_policy === '') return undefined
  if (draft.voicemail_policy === 'hang_up') return { policy: 'hang_up' }
  const message = {}
  const text = draft.voicemail_text.trim()
  // Texts by language are typed as a JSON object; anything else is one text.
  if (text.startsWith('{')) message.text = parsedJson(text, 'Voicemail message text')
  else if (text !== '') message.text = draft.voicemail_text
  if (draft.voicemail_audio_url.trim() !== '') message.audio_url = draft.voicemail_audio_url.trim()
  return { policy: 'leave_message', message }
}

/** The form's fields, as text where the operator types, from a campaign (or the defaults for a new one). */
function draftOf(campaign) {
  const schedule = campaign?.schedule ?? { timezone: 'contact', windows: [DEFAULT_WINDOW] }
  const attempts = campaign?.attempts ?? {}
  const { providerConfig, ...voicemail } = voicemailDraftOf(campaign)
  return {
    routing_key: campaign?.routing_key ?? '',
    channel: campaign?.channel ?? 'voice',
    name: campaign?.name ?? '',
    zoneMode: schedule.timezone === 'contact' ? 'contact' : 'fixed',
    zone: schedule.timezone === 'contact' ? '' : schedule.timezone,
    fallback_timezone: schedule.fallback_timezone ?? '',
    windows: schedule.windows.map((window) => ({ ...window, days: [...window.days] })),
    blackout_dates: (schedule.blackout_dates ?? []).join(', '),
    starts_at: schedule.starts_at ?? '',
    ends_at: schedule.ends_at ?? '',
    max_attempts: attempts.max === undefined ? '' : String(attempts.max),
    retry_delays_s: Object.fromEntries(RETRY_OUTCOMES.map((outcome) => [outcome, attempts.retry_delays_s?.[outcome] === undefined ? '' : String(attempts.retry_delays_s[outcome])])),
    expire_after_s: attempts.expire_after_s === undefined ? '' : String(attempts.expire_after_s),
    provider: campaign?.provider ?? 'simulator',
    provider_config: JSON.stringify(providerConfig, null, 2),
    ...voicemail,
    max_concurrent: campaign?.max_concurrent === null || campaign?.max_concurrent === undefined ? '' : String(campaign.max_concurrent),
    per_second: campaign?.pacing?.per_second === undefined ? '' : String(campaign.pacing.per_second),
    context: JSON.stringify(campaign?.context ?? {}, null, 2),
    fallback_campaign: campaign?.fallback?.campaign_id ?? '',
    fallback_when: campaign?.fallback?.when ?? ['undelivered', 'no_reply'],
    no_reply_minutes: campaign?.fallback?.no_reply_minutes === undefined ? '' : String(campaign.fallback.no_reply_minutes),
    ...complianceDraftOf(campaign),
  }
}

/** The compliance settings' fields: each left to its default unless the campaign sets it. */
function complianceDraftOf(campaign) {
  const compliance = campaign?.compliance ?? {}
  const channel = campaign?.channel ?? 'voice'
  const consent = compliance.consent?.[channel]
  return {
    purpose: compliance.purpose ?? 'informational',
    subject: compliance.subject ?? '',
    artificial_voice: compliance.artificial_voice === undefined ? '' : compliance.artificial_voice ? 'yes' : 'no',
    consent_default: consent === undefined,
    consent_kinds: consent ?? [],
  }
}

/** The compliance the draft describes, as the API takes it: what it leaves out takes its default. */
function complianceOf(draft) {
  const compliance = { purpose: draft.purpose }
  if (draft.subject.trim() !== '') compliance.subject = draft.subject.trim()
  if (draft.artificial_voice !== '') compliance.artificial_voice = draft.artificial_voice === 'yes'
  if (!draft.consent_default) compliance.consent = { [draft.channel]: CONSENT_KINDS.map(([kind]) => kind).filter((kind) => draft.consent_kinds.includes(kind)) }
  return compliance
}

/** The fallback step the draft names, as the API takes it; null for none. */
function fallbackOf(draft) {
  if (draft.fallback_campaign === '') return null
  const when = FALLBACK_CONDITIONS.map(([condition]) => condition).filter((condition) => draft.fallback_when.includes(condition))
  const fallback = { campaign_id: draft.fallback_campaign, when }
  if (when.includes('no_reply') && draft.no_reply_minutes.trim() !== '') fallback.no_reply_minutes = Number(draft.no_reply_minutes)
  return fallback
}

/** The schedule the draft describes, as the API takes it. */
function scheduleOf(draft) {
  const schedule = { timezone: draft.zoneMode === 'contact' ? 'contact' : draft.zone.trim(), windows: draft.windows }
  if (draft.fallback_timezone.trim() !== '') schedule.fallback_timezone = draft.fallback_timezone.trim()
  const dates = draft.blackout_dates.split(/[\s,]+/).filter((date) => date !== '')
  if (dates.length > 0) schedule.blackout_dates = dates
  if (draft.starts_at.trim() !== '') schedule.starts_at = draft.starts_at.trim()
  if (draft.ends_at.trim() !== '') schedule.ends_at = draft.ends_at.trim()
  return schedule
}

/** A whole number typed in a field, or undefined when it is empty (the API then keeps its default). */
const wholeOrUndefined = (text) => (text.trim() === '' ? undefined : Number(text))

/** JSON typed in a field, or a failure that says which field does not read as JSON. */
function parsedJson(text, field) {
  try {
    return JSON.parse(text)
  } catch {
    throw { message: `${field} is not valid JSON.` }
  }
}

/** The body to POST (new) or PATCH (changed). */
function bodyOf(draft, isNew) {
  const retries = Object.fromEntries(
    Object.entries(draft.retry_delays_s)
      .filter(([, text]) => text.trim() !== '')
      .map(([outcome, text]) => [outcome, Number(text)]),
  )
  const attempts = {}
  if (wholeOrUndefined(draft.max_attempts) !== undefined) attempts.max = wholeOrUndefined(draft.max_attempts)
  if (Object.keys(retries).length > 0) attempts.retry_delays_s = retries
  if (wholeOrUndefined(draft.expire_after_s) !== undefined) attempts.expire_after_s = wholeOrUndefined(draft.expire_after_s)
  if (draft.voicemail_then !== '') {
    attempts.voicemail_left = { then: draft.voicemail_then }
    if (draft.voicemail_then === 'retry' && wholeOrUndefined(draft.voicemail_delay_s) !== undefined) attempts.voicemail_left.delay_s = wholeOrUndefined(draft.voicemail_delay_s)
  }
  const providerConfig = parsedJson(draft.provider_config, 'Provider settings')
  const voicemail = voicemailOf(draft)
  if (voicemail !== undefined) providerConfig.voicemail = voicemail
  const body = {
    ...(isNew ? { routing_key: draft.routing_key.trim(), channel: draft.channel } : {}),
    ...(draft.name.trim() === '' ? {} : { name: draft.name.trim() }),
    context: parsedJson(draft.context, 'Default context'),
    schedule: scheduleOf(draft),
    attempts,
    provider: draft.provider,
    provider_config: providerConfig,
    max_concurrent: draft.max_concurrent.trim() === '' ? null : Number(draft.max_concurrent),
    // Empty: the provider's own pace.
    pacing: draft.per_second.trim() === '' ? {} : { per_second: Number(draft.per_second) },
    fallback: fallbackOf(draft),
    compliance: complianceOf(draft),
  }
  if (isNew && body.max_concurrent === null) delete body.max_concurrent
  if (isNew && body.fallback === null) delete body.fallback
  return body
}

function WindowRow({ window, onChange, onRemove }) {
  const toggle = (day) => onChange({ ...window, days: window.days.includes(day) ? window.days.filter((d) => d !== day) : WEEKDAYS.filter((d) => d === day || window.days.includes(d)) })
  return html`<div class="window-row">
    <div class="days">
      ${WEEKDAYS.map((day) => html`<label class="check"><input type="checkbox" checked=${window.days.includes(day)} onChange=${() => toggle(day)} /> ${day}</label>`)}
    </div>
    <label>From <input type="time" value=${window.start} onInput=${(event) => onChange({ ...window, start: event.target.value })} /></label>
    <label>Until <input value=${window.end} placeholder="20:00 or 24:00" onInput=${(event) => onChange({ ...window, end: event.target.value })} /></label>
    <button type="button" class="secondary" onClick=${onRemove}>Remove</button>
  </div>`
}

function Preview({ credential, draft }) {
  const [contact, setContact] = useState({ phone: '', timezone: '' })
  const [result, setResult] = useState()
  const previewing = useAction()
  const run = () =>
    previewing.run(async () => {
      setResult(undefined)
      const body = { schedule: scheduleOf(draft), count: 5 }
      if (contact.phone.trim() !== '') body.phone = contact.phone.trim()
      if (contact.timezone.trim() !== '') body.timezone = contact.timezone.trim()
      setResult(await call(credential.token, 'POST', '/admin/v1/schedule-preview', body))
    })
  return html`<section class="card" aria-label="Schedule preview">
    <h3>Preview</h3>
    <p class="muted">When this schedule lets outreach start for one contact: the next five periods open in every zone the contact may be in.</p>
    <div class="inline-form">
      <label>Phone <input name="preview-phone" placeholder="+34 612 34 56 78" value=${contact.phone} onInput=${(event) => setContact({ ...contact, phone: event.target.value })} /></label>
      <label>or zone <input name="preview-zone" placeholder="America/New_York" value=${contact.timezone} onInput=${(event) => setContact({ ...contact, timezone: event.target.value })} /></label>
      <button type="button" onClick=${run}>Preview</button>
    </div>
    <${Failure} error=${previewing.error} />
    ${result === undefined
      ? null
      : html`<div class="preview">
          <p>Read in ${result.zones.map((zone) => html`<code class="zone">${zone}</code> `)} <span class="muted">(${result.zone_source})</span></p>
          ${result.openings.length === 0
            ? html`<p class="muted">It never opens in all of them at once.</p>`
            : html`<table class="openings">
                <thead><tr><th>Opens</th><th>Closes</th></tr></thead>
                <tbody>
                  ${result.openings.map(
                    (opening) => html`<tr>
                      <td><${Instant} at=${opening.opens_at} zones=${result.zones} /></td>
                      <td>${opening.closes_at === null ? html`<span class="muted">stays open</span>` : html`<${Instant} at=${opening.closes_at} zones=${result.zones} />`}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
        </div>`}
  </section>`
}

/**
 * The fallback step: another campaign of the organization on the other
 * channel, and when the task goes on to it (each step in its own window).
 */
function FallbackSection({ draft, setDraft, others }) {
  const channel = draft.channel === 'voice' ? 'whatsapp' : 'voice'
  const candidates = others.filter((other) => other.channel === channel)
  const toggle = (condition) =>
    setDraft({ ...draft, fallback_when: draft.fallback_when.includes(condition) ? draft.fallback_when.filter((each) => each !== condition) : [...draft.fallback_when, condition] })
  return html`<section class="card" aria-label="Fallback step">
    <h3>Fallback step</h3>
    <p class="muted">The same task (its ids, contact, context and expiry) goes on to a ${channel} campaign, once, with that campaign's attempts and in its window in the contact's zones.</p>
    <div class="grid-form">
      <label>Then
        <select name="fallback_campaign" value=${draft.fallback_campaign} onChange=${(event) => setDraft({ ...draft, fallback_campaign: event.target.value })}>
          <option value="">no fallback step</option>
          ${candidates.map((other) => html`<option value=${other.id}>${other.routing_key} · ${other.channel}</option>`)}
        </select>
      </label>
      ${draft.fallback_campaign === ''
        ? null
        : html`<div class="days">
              ${FALLBACK_CONDITIONS.filter(([condition]) => condition !== 'not_on_whatsapp' || draft.channel === 'whatsapp').map(
                ([condition, label]) => html`<label class="check"><input type="checkbox" name=${`fallback-${condition}`} checked=${draft.fallback_when.includes(condition)} onChange=${() => toggle(condition)} /> ${label}</label>`,
              )}
            </div>
            ${draft.fallback_when.includes('no_reply')
              ? html`<label>No reply within (open minutes) <input name="no_reply_minutes" inputmode="numeric" value=${draft.no_reply_minutes} onInput=${(event) => setDraft({ ...draft, no_reply_minutes: event.target.value })} placeholder="the reply window" /></label>`
              : null}`}
    </div>
  </section>`
}

/**
 * What the campaign's tasks are for and what must be on file before each
 * attempt (docs/compliance.md): the calling-law profiles bind by purpose, and
 * the purpose sets the consent required unless the campaign names its own.
 */
function ComplianceSection({ draft, setDraft }) {
  const set = (field) => (event) => setDraft({ ...draft, [field]: event.target.value })
  const toggle = (kind) => setDraft({ ...draft, consent_kinds: draft.consent_kinds.includes(kind) ? draft.consent_kinds.filter((each) => each !== kind) : [...draft.consent_kinds, kind] })
  return html`<section class="card" aria-label="Compliance">
    <h3>Compliance</h3>
    <p class="muted">
      What its tasks are for. The law of each number binds by purpose (telephone-solicitation hours and caps bind marketing), and so does the consent required
      on file: by default, marketing requires express written consent by voice and a WhatsApp opt-in on WhatsApp, other purposes none of their own.
    </p>
    <div class="grid-form">
      <label>Purpose
        <select name="purpose" value=${draft.purpose} onChange=${set('purpose')}>${PURPOSES.map((purpose) => html`<option value=${purpose}>${purpose}</option>`)}</select>
      </label>
      <label>Subject, for caps per subject <input name="subject" value=${draft.subject} onInput=${set('subject')} placeholder="its routing key" /></label>
      ${draft.channel === 'voice'
        ? html`<label>Artificial voice
            <select name="artificial_voice" value=${draft.artificial_voice} onChange=${set('artificial_voice')}>
              <option value="">as its provider says</option>
              <option value="yes">yes (an AI agent, a recording)</option>
              <option value="no">no (a person)</option>
            </select>
          </label>`
        : null}
      <label class="check"><input type="checkbox" name="consent_default" checked=${draft.consent_default} onChange=${() => setDraft({ ...draft, consent_default: !draft.consent_default })} /> the purpose's default consent</label>
    </div>
    ${draft.consent_default
      ? null
      : html`<fieldset>
          <legend>Consent required on file, any one of (none checked: none of its own; the number's law may still require one)</legend>
          ${CONSENT_KINDS.filter(([kind]) => kind !== 'whatsapp_opt_in' || draft.channel === 'whatsapp').map(
            ([kind, label]) => html`<label class="check"><input type="checkbox" name=${`consent-${kind}`} checked=${draft.consent_kinds.includes(kind)} onChange=${() => toggle(kind)} /> ${label}</label>`,
          )}
        </fieldset>`}
  </section>`
}

function CampaignForm({ credential, orgId, campaign, others }) {
  const isNew = campaign === undefined
  const [draft, setDraft] = useState(() => draftOf(campaign))
  const saving = useAction()
  const [saved, setSaved] = useState(false)
  const set = (field) => (event) => setDraft({ ...draft, [field]: event.target.value })
  const path = `/admin/v1/organizations/${encodeURIComponent(orgId)}/campaigns`
  const save = (event) => {
    event.preventDefault()
    setSaved(false)
    return saving.run(async () => {
      const body = bodyOf(draft, isNew)
      const result = isNew ? await call(credential.token, 'POST', path, body) : await call(credential.token, 'PATCH', `${path}/${encodeURIComponent(campaign.id)}`, body)
      if (isNew) location.hash = `#/organizations/${encodeURIComponent(orgId)}/campaigns/${encodeURIComponent(result.id)}`
      else setSaved(true)
    })
  }
  const windows = (next) => setDraft({ ...draft, windows: next })
  return html`<div>
    <p><a href=${`#/organizations/${encodeURIComponent(orgId)}`}>← Organization</a></p>
    <h2>${isNew ? 'New campaign' : `${campaign.routing_key} · ${campaign.channel}`}</h2>
    <form onSubmit=${save} aria-label="Campaign settings">
      <section class="card grid-form">
        ${isNew
          ? html`<label>Routing key <input name="routing_key" required value=${draft.routing_key} onInput=${set('routing_key')} placeholder="screening" /></label>
              <label>Channel
                <select name="channel" value=${draft.channel} onChange=${set('channel')}><option value="voice">voice</option><option value="whatsapp">whatsapp</option></select>
              </label>`
          : null}
        <label>Name <input name="name" value=${draft.name} onInput=${set('name')} placeholder="Defaults to the routing key" /></label>
        <label>Provider
          <select name="provider" value=${draft.provider} onChange=${set('provider')}>${PROVIDERS.map((provider) => html`<option value=${provider}>${provider}</option>`)}</select>
        </label>
        <label>Most at once <input name="max_concurrent" inputmode="numeric" value=${draft.max_concurrent} onInput=${set('max_concurrent')} placeholder="no limit" /></label>
        <label>Starts a second, from its sender <input name="per_second" inputmode="numeric" value=${draft.per_second} onInput=${set('per_second')} placeholder=${PROVIDER_PACES[draft.provider] ?? 'no limit'} /></label>
      </section>
      <section class="card">
        <h3>Schedule</h3>
        <div class="grid-form">
          <label>Read in
            <select name="zone-mode" value=${draft.zoneMode} onChange=${set('zoneMode')}>
              <option value="contact">each contact's own zones</option>
              <option value="fixed">one zone for every contact</option>
            </select>
          </label>
          ${draft.zoneMode === 'fixed' ? html`<label>Zone <input name="zone" value=${draft.zone} onInput=${set('zone')} placeholder="Europe/Berlin" /></label>` : null}
          <label>Zone for numbers of no country <input name="fallback_timezone" value=${draft.fallback_timezone} onInput=${set('fallback_timezone')} placeholder="none" /></label>
          <label>Blackout dates <input name="blackout_dates" value=${draft.blackout_dates} onInput=${set('blackout_dates')} placeholder="2026-12-25, 2027-01-01" /></label>
          <label>Starts at <input name="starts_at" value=${draft.starts_at} onInput=${set('starts_at')} placeholder="2026-12-01T09:00:00+01:00" /></label>
          <label>Ends at <input name="ends_at" value=${draft.ends_at} onInput=${set('ends_at')} placeholder="none" /></label>
        </div>
        <h4>Windows (local time)</h4>
        ${draft.windows.map(
          (window, index) => html`<${WindowRow}
            window=${window}
            onChange=${(changed) => windows(draft.windows.map((each, i) => (i === index ? changed : each)))}
            onRemove=${() => windows(draft.windows.filter((_, i) => i !== index))}
          />`,
        )}
        <button type="button" class="secondary" onClick=${() => windows([...draft.windows, { ...DEFAULT_WINDOW, days: [...DEFAULT_WINDOW.days] }])}>Add a window</button>
      </section>
      <section class="card">
        <h3>Attempts</h3>
        <div class="grid-form">
          <label>Most attempts <input name="max_attempts" inputmode="numeric" value=${draft.max_attempts} onInput=${set('max_attempts')} placeholder="3" /></label>
          <label>Expires after (s) <input name="expire_after_s" inputmode="numeric" value=${draft.expire_after_s} onInput=${set('expire_after_s')} placeholder="604800" /></label>
          ${RETRY_OUTCOMES.map(
            (outcome) => html`<label>Retry after ${outcome} (s)
              <input inputmode="numeric" value=${draft.retry_delays_s[outcome]} onInput=${(event) => setDraft({ ...draft, retry_delays_s: { ...draft.retry_delays_s, [outcome]: event.target.value } })} placeholder="default" />
            </label>`,
          )}
        </div>
      </section>
      ${draft.channel === 'voice' && draft.provider === 'twilio'
        ? html`<section class="card" aria-label="Voicemail">
            <h3>Voicemail</h3>
            <p class="muted">
              What a call answered by a machine does. Hang up (the default) ends it <code>voicemail</code>; leave a message waits for the greeting's end,
              speaks the text in the contact's language (or plays the recording) and ends it <code>voicemail_left</code>. The text may name
              <code>{{first_name}}</code>, <code>{{last_name}}</code> and <code>{{context.key}}</code>; unknown names are left empty.
            </p>
            <div class="grid-form">
              <label>On a voicemail
                <select name="voicemail_policy" value=${draft.voicemail_policy} onChange=${set('voicemail_policy')}>
                  <option value="">hang up (default)</option>
                  <option value="hang_up">hang up</option>
                  <option value="leave_message">leave a message</option>
                </select>
              </label>
              ${draft.voicemail_policy === 'leave_message'
                ? html`<label>Message text (one text, or JSON by language: {"en": "…", "de": "…"})
                      <textarea name="voicemail_text" rows="3" value=${draft.voicemail_text} onInput=${set('voicemail_text')} placeholder="Hello {{first_name}}, this is North Clinic about {{context.appointment_time}}."></textarea>
                    </label>
                    <label>or recording (https URL) <input name="voicemail_audio_url" value=${draft.voicemail_audio_url} onInput=${set('voicemail_audio_url')} placeholder="https://…/message.mp3" /></label>`
                : null}
              <label>After a message is left
                <select name="voicemail_then" value=${draft.voicemail_then} onChange=${set('voicemail_then')}>
                  <option value="">stop: the task completes unreachable (default)</option>
                  <option value="stop">stop: the task completes unreachable</option>
                  <option value="retry">retry later</option>
                </select>
              </label>
              ${draft.voicemail_then === 'retry'
                ? html`<label>Retry after (s) <input name="voicemail_delay_s" inputmode="numeric" value=${draft.voicemail_delay_s} onInput=${set('voicemail_delay_s')} placeholder="93600: next day, another hour" /></label>`
                : null}
            </div>
          </section>`
        : null}
      <${ComplianceSection} draft=${draft} setDraft=${setDraft} />
      <${FallbackSection} draft=${draft} setDraft=${setDraft} others=${others.filter((other) => other.id !== campaign?.id)} />
      <section class="card grid-form">
        <label>Default context (JSON) <textarea name="context" rows="4" value=${draft.context} onInput=${set('context')}></textarea></label>
        <label>Provider settings (JSON) <textarea name="provider_config" rows="4" value=${draft.provider_config} onInput=${set('provider_config')}></textarea></label>
      </section>
      <${Failure} error=${saving.error} />
      ${saved ? html`<p class="saved" role="status">Saved. Tasks already waiting follow the new settings from their next step on.</p>` : null}
      <button type="submit">${isNew ? 'Create campaign' : 'Save changes'}</button>
    </form>
    <${Preview} credential=${credential} draft=${draft} />
  </div>`
}

export function CampaignPage({ credential, orgId, campaignId }) {
  // Every campaign of the organization: this one's settings, and the others a fallback step may name.
  const loaded = useLoad(() => call(credential.token, 'GET', `/admin/v1/organizations/${encodeURIComponent(orgId)}/campaigns`), [orgId, campaignId])
  if (loaded.error) return html`<${Failure} error=${loaded.error} />`
  if (loaded.loading) return html`<p class="loading">Loading…</p>`
  if (campaignId === 'new') return html`<${CampaignForm} credential=${credential} orgId=${orgId} others=${loaded.data} />`
  const campaign = loaded.data.find((each) => each.id === campaignId)
  if (campaign === undefined) return html`<${Failure} error=${{ message: `No campaign ${campaignId} in this organization.` }} />`
  return html`<${CampaignForm} key=${campaign.id + campaign.updated_at} credential=${credential} orgId=${orgId} campaign=${campaign} others=${loaded.data} />`
}
