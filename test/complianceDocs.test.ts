/**
 * docs/compliance.md's shell samples, run as written: every ```sh block that
 * calls curl against $BASE runs in bash, in the page's order, against a
 * service listening on 127.0.0.1, with BASE, API_KEY and OPERATOR_TOKEN set
 * as the page says. The only changes to a sample's text are its placeholders
 * (org_..., cmp_..., cns_..., reg_...), replaced by the ids of real objects,
 * and its comments, dropped (and, in the registries' listing, its command
 * line lines: see there). Where the page documents an answer (a `# 201
 * {...}` comment under a command, or a ```json block after the sample), the
 * real answer has its status and the same keys, recursively; values the page
 * elides ("cns_...", "...", {...}, [...]) are not compared, every other value
 * is. Every other answer of a sample is a 2xx.
 *
 * The test makes what the samples take for granted: an organization with a
 * key of the scopes they need, the campaign the dry run names (open
 * 09:00-20:00, made marketing by the page's own PATCH), the file of consents
 * the batch sample reads, the consents the revocation sample revokes, an
 * override for the profiles' listing to show, and the registry's file. The
 * registry is loaded by the page's command line sample, run through the CLI
 * (from the sources), whose printed report is checked as the page shows it.
 * The dry run's documented answer (deferred to 09:00 in Miami) is checked,
 * and so is what the page says the same request answers at 15:00Z.
 *
 * curl runs as a bash function that records each answer's status line and
 * body (the sample's own options untouched), so that a block of several
 * commands is checked command by command. The clock is fixed at
 * 2026-12-01T12:00Z, after the consent the page records was captured.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, test } from 'node:test'
import { COMMAND_LINE } from '../src/domain/audit.ts'
import type { ConsentKind, Purpose } from '../src/domain/callingLaw.ts'
import type { NationalPlan } from '../src/domain/registryFile.ts'
import { CallingLaw } from '../src/services/callingLaw.ts'
import { loadRegistry } from '../src/services/registries.ts'
import { hasCurl, runCli } from './support/cli.ts'
import { bearer, json, OPERATOR_TOKEN, onPostgres, PHONE_HASH_KEY, seedOrganization, startService, type TestService } from './support/service.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const PAGE = readFileSync(path.join(ROOT, 'docs', 'compliance.md'), 'utf8')
const EVERY_DAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
/** "A marketing campaign open 09:00–20:00", as the dry run's sample describes the campaign it names. */
const OPEN_9_TO_20 = { timezone: 'contact', windows: [{ days: EVERY_DAY, start: '09:00', end: '20:00' }] }
/** The number of the page's samples. */
const PHONE = '+13055550123'
/** Values the page gives as an example of a measurement: only their type is compared. */
const MEASURED = new Set(['seconds'])
const admin = bearer(OPERATOR_TOKEN)

const NO_CURL = 'no curl on this machine: install curl (apt-get install curl) to run the samples of docs/compliance.md'

// The page, read as its samples and the answers it documents for them.

interface Block {
  lang: string
  text: string
  /** The heading it is under. */
  section: string
}

/** The page's fenced blocks, in order. */
function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = []
  let section = ''
  let open: { lang: string; lines: string[] } | undefined
  for (const line of markdown.split('\n')) {
    if (open === undefined && line.startsWith('```')) open = { lang: line.slice(3).trim(), lines: [] }
    else if (open !== undefined && line.startsWith('```')) {
      blocks.push({ lang: open.lang, text: open.lines.join('\n'), section })
      open = undefined
    } else if (open !== undefined) open.lines.push(line)
    else if (/^#{1,6} /.test(line)) section = line
  }
  return blocks
}

/** What the page says a request answers: its status, its body's shape, or both. */
interface DocumentedAnswer {
  /** Which of the sample's curl commands it documents (0 is the first); undefined in a sample without curl. */
  call: number | undefined
  status?: number
  shape?: Shape
}

interface Sample {
  /** The sample's commands, its comments dropped. */
  commands: string
  documented: DocumentedAnswer[]
}

/** A sample: its commands, and the answers its comments and the ```json block after it (in its section) document. */
function readSample(block: Block, following: Block | undefined): Sample {
  const commands: string[] = []
  const documented: DocumentedAnswer[] = []
  let curls = 0
  let comment: string[] = []
  const note = (text: string) => {
    const answer = documentedAnswer(text, curls === 0 ? undefined : curls - 1)
    if (answer !== undefined) documented.push(answer)
  }
  const endComment = () => {
    if (comment.length > 0) note(comment.join('\n'))
    comment = []
  }
  for (const line of block.text.split('\n')) {
    const wholeLine = /^\s*#\s?(.*)$/.exec(line)
    if (wholeLine !== null) {
      comment.push(wholeLine[1]!)
      continue
    }
    endComment()
    const [, command, trailing] = /^(.*?)(?:\s+#\s(.*))?$/.exec(line)!
    commands.push(command!)
    curls += command!.match(/\bcurl /g)?.length ?? 0
    if (trailing !== undefined) note(trailing)
  }
  endComment()
  if (following?.lang === 'json' && following.section === block.section) {
    documented.push({ call: curls === 0 ? undefined : curls - 1, shape: parseShape(following.text) })
  }
  return { commands: commands.join('\n'), documented }
}

/** A comment read as a documented answer: `204; ...`, `201 {...}` or `{...}`; undefined for a comment that documents none. */
function documentedAnswer(comment: string, call: number | undefined): DocumentedAnswer | undefined {
  const [, status, rest] = /^(?:(\d{3})\b[;,]?\s*)?([\s\S]*)$/.exec(comment.trim())!
  const shape = /^[{[]/.test(rest!) ? parseShape(rest!) : undefined
  if (status === undefined && shape === undefined) return undefined
  return { call, ...(status === undefined ? {} : { status: Number(status) }), ...(shape === undefined ? {} : { shape }) }
}

const BLOCKS = fencedBlocks(PAGE)
const SAMPLES = new Map(BLOCKS.flatMap((block, index) => (block.lang === 'sh' ? [[block, readSample(block, BLOCKS[index + 1])] as const] : [])))
const CURL_SAMPLES = [...SAMPLES].filter(([block]) => /\bcurl .*\$BASE/.test(block.text)).map(([, sample]) => sample)
const samplesRun: Sample[] = []

/** The one sh sample whose text holds `marker`, noted as run. */
function sample(marker: string): Sample {
  const found = [...SAMPLES].filter(([block]) => block.text.includes(marker))
  assert.equal(found.length, 1, `one sh sample of the page holds ${JSON.stringify(marker)}`)
  samplesRun.push(found[0]![1])
  return found[0]![1]
}

// The page's answers are JSON with elisions: `...` for keys, elements or a value left out, "cns_..." for a string
// of which only the start is given, `{...} or null` for either.

type Shape =
  | { kind: 'any' }
  | { kind: 'number' }
  | { kind: 'literal'; value: string | number | boolean | null }
  | { kind: 'pattern'; text: string; pattern: RegExp }
  | { kind: 'object'; entries: [string, Shape][]; open: boolean }
  | { kind: 'array'; items: Shape[]; open: boolean }
  | { kind: 'either'; options: Shape[] }

function parseShape(text: string): Shape {
  const tokens = [...text.matchAll(/\.\.\.|[{}[\]:,]|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null|or\b|\S/g)].map((match) => match[0])
  let at = 0
  const next = () => tokens[at++]
  const take = (token: string) => assert.equal(next(), token, `${token} expected at token ${at} of the documented answer ${text}`)
  const value = (): Shape => {
    const first = single()
    if (tokens[at] !== 'or') return first
    const options = [first]
    while (tokens[at] === 'or') {
      next()
      options.push(single())
    }
    return { kind: 'either', options }
  }
  // One value, or the elision of a list's rest (`...` as a key or an element).
  const members = (close: string, member: () => void): boolean => {
    let open = false
    while (tokens[at] !== close) {
      if (tokens[at] === '...') {
        next()
        open = true
      } else member()
      if (tokens[at] === ',') next()
    }
    next()
    return open
  }
  const single = (): Shape => {
    const token = next()
    assert.ok(token !== undefined, `the documented answer ends early: ${text}`)
    if (token === '...') return { kind: 'any' }
    if (token === '{') {
      const entries: [string, Shape][] = []
      const open = members('}', () => {
        const key = JSON.parse(next()!) as string
        take(':')
        const shape = value()
        entries.push([key, MEASURED.has(key) && shape.kind === 'literal' ? { kind: 'number' } : shape])
      })
      return { kind: 'object', entries, open }
    }
    if (token === '[') {
      const items: Shape[] = []
      const open = members(']', () => items.push(value()))
      return { kind: 'array', items, open }
    }
    const literal = JSON.parse(token) as string | number | boolean | null
    if (typeof literal !== 'string' || !literal.includes('...')) return { kind: 'literal', value: literal }
    const pattern = literal.split('...').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    return { kind: 'pattern', text: literal, pattern: new RegExp(`^${pattern.join('[\\s\\S]*')}$`) }
  }
  const shape = value()
  assert.equal(at, tokens.length, `the documented answer is one value: ${text}`)
  return shape
}

/** Where `actual` is not as `shape` documents it, each with its path. */
function mismatches(shape: Shape, actual: unknown, at = '$'): string[] {
  const seen = JSON.stringify(actual)
  switch (shape.kind) {
    case 'any':
      return []
    case 'number':
      return typeof actual === 'number' ? [] : [`${at}: ${seen}, where the page has a number`]
    case 'literal':
      return actual === shape.value ? [] : [`${at}: ${seen}, where the page has ${JSON.stringify(shape.value)}`]
    case 'pattern':
      return typeof actual === 'string' && shape.pattern.test(actual) ? [] : [`${at}: ${seen}, where the page has ${JSON.stringify(shape.text)}`]
    case 'either':
      return shape.options.some((option) => mismatches(option, actual, at).length === 0) ? [] : [`${at}: ${seen} is none of the page's forms`]
    case 'array': {
      if (!Array.isArray(actual)) return [`${at}: ${seen}, where the page has an array`]
      const length = shape.open ? actual.length >= shape.items.length : actual.length === shape.items.length
      if (!length) return [`${at}: ${actual.length} elements, where the page has ${shape.items.length}${shape.open ? ' or more' : ''}: ${seen}`]
      return shape.items.flatMap((item, index) => mismatches(item, actual[index], `${at}[${index}]`))
    }
    case 'object': {
      if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return [`${at}: ${seen}, where the page has an object`]
      const documented = new Set(shape.entries.map(([key]) => key))
      const undocumented = shape.open ? [] : Object.keys(actual).filter((key) => !documented.has(key))
      return [
        ...shape.entries.flatMap(([key, entry]) => (key in actual ? mismatches(entry, (actual as Record<string, unknown>)[key], `${at}.${key}`) : [`${at}.${key}: missing`])),
        ...(undocumented.length === 0 ? [] : [`${at}: keys the page does not show: ${undocumented.join(', ')}`]),
      ]
    }
  }
}

function assertAsDocumented(shape: Shape, actual: unknown, what: string) {
  assert.deepEqual(mismatches(shape, actual), [], `${what} is not as the page documents it; it was:\n${JSON.stringify(actual, null, 2)}`)
}

// Running a sample.

interface Answer {
  status: number
  body: string
  /** The body read as JSON; undefined when it is not JSON. */
  json: unknown
}

let service: TestService
let base: string
let workDir: string
let org: Awaited<ReturnType<typeof seedOrganization>>
const now = Date.parse('2026-12-01T12:00:00Z')

/**
 * The sample run in bash, its placeholders replaced, in `cwd`; the answer to
 * each of its curl commands, in the order they ran. Each documented answer is
 * checked, and every other answer must be a 2xx.
 */
async function runSample(sample: Sample, placeholders: Record<string, string> = {}, cwd = workDir): Promise<Answer[]> {
  let script = sample.commands
  for (const [placeholder, value] of Object.entries(placeholders)) {
    assert.ok(script.includes(placeholder), `the sample holds ${placeholder}`)
    script = script.replaceAll(placeholder, value)
  }
  const calls = mkdtempSync(path.join(workDir, 'calls-'))
  // Each curl's status line goes to a file of its own (-D), and what it prints to another.
  const recordingCurl = 'calls=0; curl() { calls=$((calls + 1)); command curl -D "$CALLS/$calls.headers" "$@" > "$CALLS/$calls.out"; }'
  // HOME: no ~/.curlrc of the machine's changes what curl sends.
  const env = { PATH: process.env.PATH, HOME: workDir, BASE: base, API_KEY: org.key, OPERATOR_TOKEN, CALLS: calls }
  await promisify(execFile)('bash', ['-c', `${recordingCurl}\n${script}`], { cwd, env })
  const count = readdirSync(calls).filter((name) => name.endsWith('.out')).length
  const answers = Array.from({ length: count }, (_, index) => {
    const headers = readFileSync(path.join(calls, `${index + 1}.headers`), 'utf8')
    const statuses = [...headers.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)]
    assert.ok(statuses.length > 0, `curl ${index + 1} of the sample had an answer`)
    const body = readFileSync(path.join(calls, `${index + 1}.out`), 'utf8')
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      parsed = undefined
    }
    return { status: Number(statuses.at(-1)![1]), body, json: parsed }
  })
  for (const [index, answer] of answers.entries()) {
    const documented = sample.documented.filter((each) => each.call === index)
    const status = documented.find((each) => each.status !== undefined)?.status
    const what = `the answer to curl ${index + 1} of\n${script}\n`
    if (status === undefined) assert.ok(answer.status >= 200 && answer.status < 300, `${what}is a 2xx: ${answer.status} ${answer.body}`)
    else assert.equal(answer.status, status, `${what}has the page's status: ${answer.body}`)
    for (const { shape } of documented) if (shape !== undefined) assertAsDocumented(shape, answer.json, what)
  }
  assert.ok(
    sample.documented.every((each) => each.call !== undefined && each.call < answers.length),
    'every answer the page documents was asked for',
  )
  return answers
}

const data = (answer: Answer | undefined) => (answer?.json as { data: any }).data

/** A consent recorded through the API, for a sample to act on. */
async function recordConsent(payload: Record<string, unknown>): Promise<string> {
  const response = await service.app.inject({ method: 'POST', url: '/api/v2/consents', headers: bearer(org.key), payload: { source: 'web_form', captured_at: '2026-11-20T10:00:00Z', ...payload } })
  assert.equal(response.statusCode, 201, response.body)
  return json(response).data.id
}

const consentsOf = async (phone: string) =>
  json(await service.app.inject({ method: 'GET', url: `/api/v2/consents?phone=${encodeURIComponent(phone)}`, headers: bearer(org.key) })).data as any[]

describe("docs/compliance.md's shell samples, run with curl against a listening service", { skip: hasCurl || process.env.CI === 'true' ? false : NO_CURL }, () => {
  let consentId: string
  let registryId: string

  before(async () => {
    assert.ok(hasCurl, NO_CURL)
    workDir = mkdtempSync(path.join(tmpdir(), 'compliance-docs-'))
    service = await startService({ now: () => now, workers: false })
    base = await service.app.listen({ port: 0, host: '127.0.0.1' })
    org = await seedOrganization(service.app, { routingKey: 'renewal-offer', scopes: ['consents:manage', 'triggers:read'], schedule: OPEN_9_TO_20 })
  })
  after(async () => {
    await service?.close()
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true })
  })

  test("a campaign's compliance, set with PATCH", async () => {
    const [patched] = await runSample(sample('-X PATCH $BASE/admin/v1/organizations/org_.../campaigns/cmp_...'), { 'org_...': org.orgId, 'cmp_...': org.campaign.id })
    assert.equal(data(patched).routing_key, 'renewal-offer')
    assert.deepEqual(
      (({ purpose, subject, artificial_voice }) => ({ purpose, subject, artificial_voice }))(data(patched).compliance),
      { purpose: 'marketing', subject: 'policy-renewal', artificial_voice: true },
    )
  })

  test('recording one consent', async () => {
    const [recorded] = await runSample(sample('-X POST $BASE/api/v2/consents -H'))
    consentId = data(recorded).id
  })

  test('recording many, from a CSV file, one batch per 10,000 lines', async () => {
    const dir = path.join(workDir, 'batch')
    mkdirSync(dir)
    const lines = [
      ['+13055550140', 'express_written', '2026-11-28T10:00:00Z', 'https://forms.example.com/s/8790 submission 8790'],
      ['+13055550141', 'express', '2026-11-29T09:30:00Z', ''],
      ['+44 20 7946 0958', 'express', '2026-11-29T16:45:00Z', 'call recording rec_5521'],
    ]
    writeFileSync(path.join(dir, 'consents.csv'), ['phone,kind,captured_at,evidence', ...lines.map((line) => line.join(','))].join('\n') + '\n')
    const answers = await runSample(sample('consents.csv'), {}, dir)
    assert.deepEqual(answers.map((answer) => answer.body), ['consents-0.json 201\n'], 'one batch, recorded')
    for (const [phone, kind, capturedAt, evidence] of lines) {
      const [consent] = await consentsOf(phone!)
      assert.deepEqual(
        { kind: consent.kind, source: consent.source, captured_at: consent.captured_at, evidence: consent.evidence },
        { kind, source: 'import', captured_at: new Date(capturedAt!).toISOString(), evidence: evidence === '' ? null : evidence },
      )
    }
  })

  test('listing the consents of a number, and reading one', async () => {
    const [listed, read] = await runSample(sample('/api/v2/consents?phone=%2B13055550123'), { 'cns_...': consentId })
    assert.deepEqual(data(listed).map((consent: { id: string }) => consent.id), [consentId])
    assert.equal(data(read).id, consentId)
  })

  test('revoking one consent, and every consent of a number on a channel', async () => {
    // One of the file's consents is revoked by id; the number's WhatsApp opt-in by number. Its voice consent stays, for the dry run.
    const [fromFile] = await consentsOf('+13055550140')
    const optIn = await recordConsent({ phone: PHONE, channel: 'whatsapp', purpose: 'marketing', kind: 'whatsapp_opt_in' })
    const [one, ofNumber] = await runSample(sample('/api/v2/consents/cns_.../revoke'), { 'cns_...': fromFile.id })
    assert.deepEqual([data(one).id, data(one).status, data(one).revoked_by], [fromFile.id, 'revoked', 'api'])
    assert.deepEqual(data(ofNumber).revoked, [optIn])
  })

  test('the dry run: a Florida number at 20:30 in Miami, deferred to 09:00 there', async () => {
    await runSample(sample('$BASE/api/v2/contactability'))
    // What the page says of the same request at 15:00Z: allowed, with the consent, both hours rules and Florida's cap.
    const response = await service.app.inject({
      method: 'POST',
      url: '/api/v2/contactability',
      headers: bearer(org.key),
      payload: { phone: PHONE, channel: 'voice', campaign: 'renewal-offer', at: '2026-12-08T15:00:00Z' },
    })
    assert.equal(response.statusCode, 200, response.body)
    const allowed = json(response).data
    assert.equal(allowed.decision, 'allowed')
    assert.deepEqual(
      allowed.reasons.map(({ code, rule, consent_id }: { code: string; rule: string; consent_id?: string }) => [code, rule, consent_id]),
      [
        ['consent_on_file', 'campaign.consent', consentId],
        ['consent_on_file', 'us-federal.artificial_voice_marketing_consent', consentId],
        ['within_legal_hours', 'us-federal.telephone_solicitation_hours', undefined],
        ['within_legal_hours', 'us-fl.hours', undefined],
        ['under_legal_cap', 'us-fl.cap', undefined],
      ],
    )
  })

  test('the profiles in force, with an override', async () => {
    const disabled = await service.app.inject({ method: 'POST', url: '/admin/v1/calling-law/rules/fr.cap/disable', headers: admin, payload: { reason: 'An override, for the listing to show one.' } })
    assert.equal(disabled.statusCode, 200, disabled.body)
    await runSample(sample('curl -s $BASE/admin/v1/calling-law -H'))
  })

  test('replacing a shipped rule', async () => {
    await runSample(sample('-X PUT $BASE/admin/v1/calling-law/rules/us-fl.hours'))
  })

  test('disabling a shipped rule', async () => {
    await runSample(sample('/calling-law/rules/gb.electronic_mail_consent/disable'))
  })

  test('removing an override', async () => {
    const [removed] = await runSample(sample('/calling-law/rules/us-fl.hours/override'))
    assert.equal(removed!.body, '204\n')
  })

  test('loading a registry with the command line', async () => {
    const cliSample = sample('npm run cli -- registry load')
    // `npm run cli` builds dist/ first; the test runs the same command line from the sources (test/support/cli.ts).
    const args = cliSample.commands.replaceAll('\\\n', ' ').replace(/^npm run cli -- /, '').trim().split(/\s+/)
    const file = path.join(workDir, args[args.indexOf('--file') + 1]!)
    args[args.indexOf('--file') + 1] = file
    // Six numbers, one of them twice, and a line that is none: the report the page shows.
    writeFileSync(file, ['3055550188', '305,5550189', '1-305-555-0190', '(305) 555-0191', '+1 305 555 0192', '3055550188', '0123', ''].join('\n'))
    // On PostgreSQL the command line loads the service's own database. The embedded database under test lives in
    // this process's memory, which no other process can open: there the command line loads one of its own, and the
    // service's registry is loaded from the same file and options by loadRegistry, the code the command line calls.
    const env = { PATH: process.env.PATH, DATA_DIR: path.join(workDir, 'cli-data'), PHONE_HASH_KEY, LOG_LEVEL: 'warn', ...service.environment }
    const loaded = await runCli(args, env)
    assert.equal(loaded.code, 0, loaded.stderr)
    const report = JSON.parse(loaded.stdout)
    assert.equal(cliSample.documented.length, 1, 'the page shows what the command prints')
    assertAsDocumented(cliSample.documented[0]!.shape!, report, 'what the command line printed')
    if (onPostgres) registryId = report.id
    else {
      const option = (name: string) => args[args.indexOf(`--${name}`) + 1]!
      const { registry } = await loadRegistry({ db: service.db, now: () => now, phoneHashKey: Buffer.from(PHONE_HASH_KEY), law: new CallingLaw({ now: () => now }) }, COMMAND_LINE, {
        orgId: null,
        name: option('name'),
        purposes: option('purposes').split(',') as Purpose[],
        overriddenBy: option('overridden-by').split(',') as ConsentKind[],
        listDate: option('list-date'),
        plan: option('plan') as NationalPlan,
        lines: readFileSync(file, 'utf8').split('\n'),
      })
      registryId = registry.id
    }
  })

  test('listing, reading and deleting registries over the admin API', async () => {
    const listing = sample('$BASE/admin/v1/registries?org_id=org_...')
    // Its curl lines only: `registry list [--org org_...]` is the usage's notation, and `registry delete` would take
    // the registry the curl lines then read and delete.
    const curlLines = { ...listing, commands: listing.commands.split('\n').filter((line) => !line.startsWith('npm run cli')).join('\n') }
    const [listed, read] = await runSample(curlLines, { 'org_...': org.orgId, 'reg_...': registryId })
    assert.deepEqual(data(listed).map((registry: { id: string }) => registry.id), [registryId])
    assert.deepEqual([data(read).id, data(read).name, data(read).numbers], [registryId, 'us-national-dnc', 5])
    const gone = await service.app.inject({ method: 'GET', url: `/admin/v1/registries/${registryId}`, headers: admin })
    assert.equal(gone.statusCode, 404)
  })

  test('every curl sample of the page was run', () => {
    assert.deepEqual(
      CURL_SAMPLES.filter((each) => !samplesRun.includes(each)).map((each) => each.commands),
      [],
      'samples of the page this test does not run',
    )
  })
})
