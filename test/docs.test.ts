/**
 * The manual (README.md and every docs/**\/*.md), held to the code:
 *
 * - Links: every relative link resolves to a file or folder that exists, and
 *   every `#anchor` to a heading of its page (GitHub's slugs); every page is
 *   linked from the index (docs/README.md, or the providers' index), and the
 *   index from the front page.
 * - JSON samples: every ```json block, and every answer written as a comment
 *   under a curl command (`# 201 {...}`, `# {"data": ...}`), is JSON once its
 *   elisions are read (the rule below), and is valid against the OpenAPI
 *   document: an event against its webhook's payload, an error against its
 *   shape, an answer against its operation's response for its status, a
 *   request body against its operation's request body. A ```json block that is
 *   none of these names what it is in an HTML comment just before it
 *   (`<!-- answer: getTask 200 -->`, `<!-- request: createTrigger -->`,
 *   `<!-- schema: ContactabilityDecision -->`, `<!-- not the API: why -->`), or
 *   its page is one of FOREIGN_JSON. JSON in a block without a language is
 *   refused, so that none goes unchecked.
 * - Commands: every ```sh and ```bash block is read as shell (continued lines,
 *   quotes, `$(...)`, pipes and `&&`). A curl command must name an operation
 *   of the client or the admin document (method and path; its query
 *   parameters declared), its body valid against the operation's request
 *   body; `npm run X` a script of package.json, `npm X` a script or one of
 *   NPM_COMMANDS; the command line (`npm run cli -- ...`, `node dist/cli.js
 *   ...`, `docker run ... conversation-trigger-service ...`) a command of
 *   src/cli.ts's usage with options it lists; `node FILE` a file that exists.
 *   A variable given to the service (`NAME=... npm start`, `docker run -e
 *   NAME=...`) must be one the configuration reference names.
 *   Any other program must be one of UNCHECKED_PROGRAMS, which says why it is
 *   not checked: nothing is skipped unnoticed. A body read from a file
 *   (`-d @file`) has no text to check; its method and path still are.
 * - Configuration: the table of docs/configuration.md names exactly the
 *   environment variables src/ reads (and the few the OpenTelemetry SDK reads
 *   in-process, named in OTEL_SDK_VARIABLES).
 *
 * Elisions in JSON samples (`...` or `…`): `{...}` is any object and `[...]` any array
 * (nothing under them is checked); `...` where a member or an element would
 * be stands for more of them (an object with one is not held to `required`);
 * a string holding `...` or a shell variable (`"tsk_..."`, `"$VOICE_CAMPAIGN"`)
 * stands for any string (no format, pattern, enum or length is checked);
 * `X or Y` (`{...} or null`) stands for either, and only X is checked.
 * Nothing else is elided: the rest must be JSON as written.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { OPERATOR_TOKEN, startService, type TestService } from './support/service.ts'

const ROOT = path.resolve(import.meta.dirname, '..')

// ---------------------------------------------------------------------------
// The pages

function markdownFiles(): string[] {
  const found = ['README.md']
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(ROOT, dir)).sort()) {
      const relative = path.posix.join(dir, name)
      if (statSync(path.join(ROOT, relative)).isDirectory()) walk(relative)
      else if (name.endsWith('.md')) found.push(relative)
    }
  }
  walk('docs')
  return found
}

interface Block {
  lang: string
  text: string
  /** 1-based line of the opening fence. */
  line: number
  /** The HTML comment on the last non-blank line before the fence, if any. */
  marker?: string
}

interface Page {
  file: string
  text: string
  blocks: Block[]
  /** The page's text outside fenced blocks. */
  prose: string[]
  slugs: Set<string>
}

/** GitHub's heading anchors: lowercased, punctuation dropped, spaces to hyphens, repeats numbered. */
function slugsOf(headings: string[]): Set<string> {
  const slugs = new Set<string>()
  const seen = new Map<string, number>()
  for (const heading of headings) {
    const text = heading
      .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    slugs.add(count === 0 ? base : `${base}-${count}`)
  }
  return slugs
}

function readPage(file: string): Page {
  const text = readFileSync(path.join(ROOT, file), 'utf8')
  const lines = text.split('\n')
  const blocks: Block[] = []
  const prose: string[] = []
  const headings: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)\s*$/.exec(lines[i]!)
    if (fence) {
      const start = i
      const body: string[] = []
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!)
      let before = start - 1
      while (before >= 0 && lines[before]!.trim() === '') before--
      const marker = before >= 0 ? /^<!--\s*(.*?)\s*-->$/.exec(lines[before]!.trim())?.[1] : undefined
      blocks.push({ lang: fence[1]!, text: body.join('\n'), line: start + 1, marker })
      continue
    }
    prose.push(lines[i]!)
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(lines[i]!)
    if (heading) headings.push(heading[1]!)
  }
  return { file, text, blocks, prose, slugs: slugsOf(headings) }
}

const PAGES = markdownFiles().map(readPage)
const pageOf = (file: string) => PAGES.find((page) => page.file === file)

// ---------------------------------------------------------------------------
// Links

/** Every link and image of a page's prose (inline code left out), with its line. */
function linksOf(page: Page): { target: string; line: string }[] {
  const links: { target: string; line: string }[] = []
  for (const line of page.prose) {
    const bare = line.replace(/`[^`]*`/g, '``')
    for (const match of bare.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1]!, line })
    for (const match of bare.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/g)) links.push({ target: match[1]!, line })
  }
  return links
}

describe('the links of the manual', () => {
  test('every page is in the index, and the index is linked from the front page', () => {
    const linked = new Set(
      ['docs/README.md', 'README.md'].flatMap((file) =>
        linksOf(pageOf(file)!).map((link) => path.posix.normalize(path.posix.join(path.posix.dirname(file), link.target.split('#')[0]!))),
      ),
    )
    assert.ok(linked.has('docs/README.md'), 'README.md links docs/README.md')
    const indexed = new Set(
      PAGES.filter((page) => page.file === 'docs/README.md' || page.file === 'docs/providers/README.md').flatMap((page) =>
        linksOf(page).map((link) => path.posix.normalize(path.posix.join(path.posix.dirname(page.file), link.target.split('#')[0]!))),
      ),
    )
    for (const page of PAGES) {
      if (page.file === 'README.md' || page.file === 'docs/README.md') continue
      assert.ok(indexed.has(page.file), `${page.file} is linked from docs/README.md (or the providers' index)`)
    }
  })

  for (const page of PAGES) {
    test(`${page.file}: every relative link and anchor resolves`, () => {
      const broken: string[] = []
      for (const { target, line } of linksOf(page)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto: ... : not ours to resolve
        const [file, anchor] = target.split('#') as [string, string | undefined]
        const resolved = file === '' ? page.file : path.posix.normalize(path.posix.join(path.posix.dirname(page.file), decodeURIComponent(file)))
        if (resolved.startsWith('..') || !existsSync(path.join(ROOT, resolved))) {
          broken.push(`${target}: no file ${resolved}\n    in: ${line.trim()}`)
          continue
        }
        if (anchor === undefined || anchor === '') continue
        const targetPage = pageOf(resolved) ?? (resolved.endsWith('.md') ? readPage(resolved) : undefined)
        if (targetPage === undefined) broken.push(`${target}: an anchor into ${resolved}, which is not a page`)
        else if (!targetPage.slugs.has(decodeURIComponent(anchor))) broken.push(`${target}: ${resolved} has no heading #${anchor}\n    in: ${line.trim()}`)
      }
      assert.deepEqual(broken, [], `broken links in ${page.file}:\n${broken.join('\n')}`)
    })
  }
})

// ---------------------------------------------------------------------------
// Shell, as far as the samples use it

interface Command {
  /** Words with their quotes removed; `$(...)` is kept as the word `$(...)`. */
  words: string[]
  /** The variable assignments before the program (`DATABASE_URL=... npm test`). */
  assignments: string[]
  /** Comments after the command, each without its `#`. */
  comments: string[]
  /** The source text of the command. */
  source: string
}

/**
 * Splits a shell block into simple commands: words by bash's quoting rules
 * (single quotes literal, double quotes and `\` escapes, a `\` before a line
 * end joins lines), split at newlines, `;`, `&&`, `||`, `|` and `&`;
 * `$(...)` is parsed as commands of its own; `{ ...; }` groups are opened.
 */
function parseShell(text: string): Command[] {
  const commands: Command[] = []
  let words: string[] = []
  let comments: string[] = []
  let word: string | undefined
  let start = 0
  let attachable = false
  const end = (at: number) => {
    if (word !== undefined) words.push(word)
    word = undefined
    const filtered = words.filter((each) => each !== '{' && each !== '}')
    if (filtered.length > 0 || comments.length > 0) {
      // Shell's own words: `for NAME in ...` is the loop itself; `do`, `then`, `if`, `while` lead a command; `done` and `fi` end one.
      if (filtered[0] === 'for') filtered.length = 0
      while (['do', 'then', 'else', 'if', 'while', 'until', '!'].includes(filtered[0]!)) filtered.shift()
      if (filtered.length === 1 && ['done', 'fi'].includes(filtered[0]!)) filtered.length = 0
      const assignments: string[] = []
      while (filtered.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(filtered[0]!)) assignments.push(filtered.shift()!)
      if (filtered.length > 0 || assignments.length > 0) commands.push({ words: filtered, assignments, comments, source: text.slice(start, at).trim() })
      else if (commands.length > 0) commands[commands.length - 1]!.comments.push(...comments)
    }
    words = []
    comments = []
    start = at
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === '\\' && text[i + 1] === '\n') {
      i++
      continue
    }
    if (c === "'") {
      const close = text.indexOf("'", i + 1)
      assert.ok(close > i, `an unclosed single quote in:\n${text}`)
      word = (word ?? '') + text.slice(i + 1, close)
      i = close
      continue
    }
    if (c === '"') {
      let value = ''
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === '\\' && /["\\$`]/.test(text[i + 1] ?? '')) value += text[++i]
        else if (text[i] === '$' && text[i + 1] === '(') {
          const close = matchingParen(text, i + 1)
          commands.push(...parseShell(text.slice(i + 2, close)))
          value += '$(...)'
          i = close
        } else value += text[i]
      }
      word = (word ?? '') + value
      continue
    }
    if (c === '$' && text[i + 1] === '(') {
      const close = matchingParen(text, i + 1)
      commands.push(...parseShell(text.slice(i + 2, close)))
      word = (word ?? '') + '$(...)'
      i = close
      continue
    }
    if (c === '\\') {
      word = (word ?? '') + (text[i + 1] ?? '')
      i++
      continue
    }
    if (c === '#' && word === undefined) {
      const close = text.indexOf('\n', i)
      comments.push(text.slice(i + 1, close === -1 ? text.length : close).trim())
      i = (close === -1 ? text.length : close) - 1
      continue
    }
    if (c === '\n' || c === ';' || c === '|' || c === '&') {
      if (word !== undefined) words.push(word)
      word = undefined
      if (words.length === 0) {
        // A comment line right under a command belongs to it (`# {"data": ...}` under a curl); a blank line ends that.
        if (comments.length > 0 && attachable && commands.length > 0) commands[commands.length - 1]!.comments.push(...comments)
        else if (comments.length === 0 && c === '\n') attachable = false
        comments = []
        start = i + 1
        continue
      }
      end(i)
      attachable = c === '\n'
      if ((c === '|' || c === '&') && text[i + 1] === c) i++
      continue
    }
    if (c === ' ' || c === '\t') {
      if (word !== undefined) words.push(word)
      word = undefined
      continue
    }
    word = (word ?? '') + c
  }
  end(text.length)
  return commands
}

function matchingParen(text: string, open: number): number {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === "'") i = text.indexOf("'", i + 1)
    else if (text[i] === '(') depth++
    else if (text[i] === ')' && --depth === 0) return i
  }
  throw new Error(`an unclosed $( in:\n${text}`)
}

// ---------------------------------------------------------------------------
// JSON samples and their elisions

const ANY_OBJECT = '\u0000{...}'
const ANY_ARRAY = '\u0000[...]'
const ANY_ELEMENT = '\u0000...'
const MORE = '\u0000more'

/** The sample as JSON, its elisions replaced by markers (see the top of the file); throws when it is not JSON. */
function parseSample(sample: string): unknown {
  let out = ''
  const stack: string[] = []
  for (let i = 0; i < sample.length; i++) {
    const c = sample[i]!
    if (c === '"') {
      let j = i + 1
      while (j < sample.length && sample[j] !== '"') j += sample[j] === '\\' ? 2 : 1
      out += sample.slice(i, j + 1)
      i = j
      continue
    }
    const alternative = /^\s+or\s+(?:null|true|false|-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|\{\s*\.\.\.\s*\}|\[\s*\.\.\.\s*\])/.exec(sample.slice(i))
    if (alternative) {
      i += alternative[0].length - 1
      continue
    }
    const whole = /^([{[])\s*(?:\.\.\.|…)\s*([}\]])/.exec(sample.slice(i))
    if (whole && (whole[1] === '{') === (whole[2] === '}')) {
      out += JSON.stringify(whole[1] === '{' ? ANY_OBJECT : ANY_ARRAY)
      i += whole[0].length - 1
      continue
    }
    if (sample.startsWith('...', i) || c === '…') {
      out += stack.at(-1) === '{' ? `${JSON.stringify(MORE)}: true` : JSON.stringify(ANY_ELEMENT)
      i += c === '…' ? 0 : 2
      continue
    }
    if (c === '{' || c === '[') stack.push(c)
    if (c === '}' || c === ']') stack.pop()
    out += c
  }
  return JSON.parse(out)
}

/** A sample that may be elided at any depth: markers and placeholders stand for what the schema asks. */
function elidedAt(sample: unknown, pointer: string): 'whole' | 'string' | 'members' | undefined {
  let value: any = sample
  for (const part of pointer.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined
    value = value[part.replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  if (value === ANY_OBJECT || value === ANY_ARRAY || value === ANY_ELEMENT) return 'whole'
  if (typeof value === 'string' && (value.includes('...') || value.includes('…') || /\$\{?[A-Za-z_]/.test(value))) return 'string'
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && MORE in value) return 'members'
  return undefined
}

interface SchemaError {
  instancePath: string
  schemaPath: string
  keyword: string
  params: any
  message?: string
}

/** The errors that remain once the sample's elisions are read; a branch of anyOf/oneOf that fails only for them passes. */
function remainingErrors(sample: unknown, errors: SchemaError[]): SchemaError[] {
  const excused = (error: SchemaError) => {
    for (let pointer = error.instancePath; ; pointer = pointer.slice(0, pointer.lastIndexOf('/'))) {
      if (elidedAt(sample, pointer) === 'whole') return true
      if (pointer === '') break
    }
    const here = elidedAt(sample, error.instancePath)
    if (here === 'string' && ['format', 'pattern', 'enum', 'const', 'minLength', 'maxLength'].includes(error.keyword)) return true
    if (here === 'members' && error.keyword === 'required') return true
    if (error.keyword === 'additionalProperties' && error.params.additionalProperty === MORE) return true
    if (error.keyword === 'propertyNames' || (error.keyword === 'pattern' && error.instancePath.endsWith('/' + MORE))) return true
    return false
  }
  let kept = errors.filter((error) => !excused(error))
  // anyOf/oneOf, deepest first: satisfied when one of its branches has no error left. Ajv writes a branch's errors
  // just before the combinator's own, at or under its instance; a branch that is a $ref has its errors' schemaPath in the
  // referenced schema, so those count as one branch of their own.
  const combinators = errors
    .map((error, index) => ({ error, index }))
    .filter(({ error }) => error.keyword === 'anyOf' || error.keyword === 'oneOf')
    .sort((a, b) => b.error.instancePath.split('/').length - a.error.instancePath.split('/').length || a.index - b.index)
  for (const { error: combinator, index } of combinators) {
    const under = (error: SchemaError) => error.instancePath === combinator.instancePath || error.instancePath.startsWith(`${combinator.instancePath}/`)
    const branchErrors: SchemaError[] = []
    for (let i = index - 1; i >= 0 && under(errors[i]!); i--) branchErrors.push(errors[i]!)
    const prefix = `${combinator.schemaPath}/`
    const branchOf = (error: SchemaError) => (error.schemaPath.startsWith(prefix) ? error.schemaPath.slice(prefix.length).split('/')[0]! : '$ref')
    const branches = new Set(branchErrors.map(branchOf))
    const passing = [...branches].some((branch) => !branchErrors.some((error) => branchOf(error) === branch && kept.includes(error)))
    if (passing) kept = kept.filter((error) => error !== combinator && !branchErrors.includes(error))
  }
  return kept
}

// ---------------------------------------------------------------------------
// The OpenAPI documents, and what a sample is checked against

let service: TestService
const documents: Record<'client' | 'admin', any> = { client: undefined, admin: undefined }
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
// ajv-formats is CommonJS: its function is the default export, or that export's `default`.
;((formats as any).default ?? formats)(ajv)

before(async () => {
  service = await startService()
  for (const [name, url] of [['client', '/openapi.json'], ['admin', '/admin/openapi.json']] as const) {
    const response = await service.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
    assert.equal(response.statusCode, 200, url)
    documents[name] = response.json()
    ajv.addSchema({ ...documents[name], $id: `${name}.json` })
  }
})
after(() => service?.close())

const pointer = (...parts: string[]) => parts.map((part) => '/' + part.replace(/~/g, '~0').replace(/\//g, '~1')).join('')

interface Operation {
  document: 'client' | 'admin'
  path: string
  method: string
  operation: any
}

function operations(): Operation[] {
  const found: Operation[] = []
  for (const document of ['client', 'admin'] as const) {
    for (const [route, methods] of Object.entries<any>(documents[document].paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        if (operation?.responses !== undefined) found.push({ document, path: route, method: method.toUpperCase(), operation })
      }
    }
  }
  return found
}

/** The operation a method and a concrete path (`/api/v2/tasks/tsk_...`) name: literal segments first. */
function operationAt(method: string, concrete: string): Operation | undefined {
  const segments = concrete.split('/')
  const candidates = operations().filter((each) => {
    if (each.method !== method) return false
    const template = each.path.split('/')
    return template.length === segments.length && template.every((part, i) => (/^\{.+\}$/.test(part) ? segments[i] !== '' : part === segments[i]))
  })
  const literals = (each: Operation) => each.path.split('/').filter((part) => !part.startsWith('{')).length
  return candidates.sort((a, b) => literals(b) - literals(a))[0]
}

function operationById(id: string): Operation {
  const found = operations().find((each) => each.operation.operationId === id)
  assert.ok(found, `no operation ${id} in the OpenAPI documents`)
  return found
}

/** Validates a sample against the schema at a JSON pointer of a document; the errors left after its elisions. */
function check(document: 'client' | 'admin', at: string, sample: unknown): string[] {
  const validate = ajv.getSchema(`${document}.json#${at}`)
  assert.ok(validate, `no schema at ${document}.json#${at}`)
  if (validate(sample)) return []
  return remainingErrors(sample, (validate.errors ?? []) as SchemaError[]).map(
    (error) => `${error.instancePath || '(the sample)'} ${error.message} ${JSON.stringify(error.params)}`,
  )
}

const requestAt = (op: Operation) => {
  assert.ok(op.operation.requestBody?.content?.['application/json'], `${op.method} ${op.path} takes no JSON body`)
  return pointer('paths', op.path, op.method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema')
}

function responseAt(op: Operation, status: string): string {
  const response = op.operation.responses[status]
  assert.ok(response, `${op.method} ${op.path} (${op.operation.operationId}) declares no ${status} answer: it has ${Object.keys(op.operation.responses).join(', ')}`)
  assert.ok(response.content?.['application/json'], `${op.operation.operationId}'s ${status} has no JSON body`)
  return pointer('paths', op.path, op.method.toLowerCase(), 'responses', status, 'content', 'application/json', 'schema')
}

/** The only success status of an operation: an answer written without one has it. */
function successOf(op: Operation): string {
  const statuses = Object.keys(op.operation.responses).filter((status) => /^2/.test(status))
  assert.equal(statuses.length, 1, `${op.operation.operationId} has several success statuses (${statuses.join(', ')}): write the sample's status`)
  return statuses[0]!
}

/** What a ```json block is, by its content or its marker. */
function checkJsonBlock(page: Page, block: Block): string[] {
  const sample = parseSample(block.text)
  const marker = block.marker
  if (marker?.startsWith('not the API:')) return []
  if (marker?.startsWith('answer:')) {
    const [, id, status] = marker.split(/\s+/)
    const op = operationById(id!)
    return check(op.document, responseAt(op, status ?? successOf(op)), sample)
  }
  if (marker?.startsWith('request:')) {
    const op = operationById(marker.split(/\s+/)[1]!)
    return check(op.document, requestAt(op), sample)
  }
  if (marker?.startsWith('schema:')) return check('client', pointer('components', 'schemas', marker.split(/\s+/)[1]!), sample)
  if (FOREIGN_JSON[page.file] !== undefined) return []
  const object = sample as Record<string, unknown>
  const webhooks = documents.client.webhooks
  if (typeof object?.type === 'string' && webhooks[object.type] !== undefined) {
    return check('client', pointer('webhooks', object.type, 'post', 'requestBody', 'content', 'application/json', 'schema'), sample)
  }
  if (object?.detail !== undefined) return check('client', pointer('components', 'schemas', 'ValidationErrorResponse'), sample)
  if (object?.error !== undefined) return check('client', pointer('components', 'schemas', 'ErrorResponse'), sample)
  return [`a json block that is not an event nor an error, with no <!-- answer: operationId status --> or <!-- schema: Name --> before it`]
}

/** Pages whose ```json blocks are not the API's documents, and who checks them. */
const FOREIGN_JSON: Record<string, string> = {
  'docs/callbacks.md':
    "the service's answers to the agent platforms' own callbacks, outside the OpenAPI documents; test/support/callbackDocs.ts and the provider tests hold them to the real answers",
  'docs/providers/voice-platforms.md': "the platforms' own wire formats, as they publish them",
}

// ---------------------------------------------------------------------------
// Commands

/** Programs whose commands are not checked here, and why. */
const UNCHECKED_PROGRAMS: Record<string, string> = {
  export: 'sets variables of the shell',
  cd: 'changes directory',
  echo: 'prints',
  printf: 'prints',
  cat: 'prints a file',
  kill: 'stops a job',
  base64: 'a coreutils filter',
  xxd: 'a hex filter',
  openssl: "checks a signature by hand; test/receiverScript.test.ts and the webhook tests check the service's",
  docker: "Docker's own commands; the container is tested by .ci/container (the service's commands in `docker run` are checked)",
  promtool: "Prometheus' checker; test/prometheusRules.test.ts runs these commands",
  psql: "PostgreSQL's client",
  'apt-get': "Debian's package manager",
}

/** npm's own commands the samples use (beside the package's scripts). */
const NPM_COMMANDS = new Set(['install', 'ci', 'prune'])

const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** The command line's commands and each one's options, from src/cli.ts's usage text. */
function cliUsage(): Map<string, Set<string>> {
  const source = readFileSync(path.join(ROOT, 'src/cli.ts'), 'utf8')
  const usage = /const USAGE = `([\s\S]*?)`/.exec(source)![1]!
  const settings = new Set([...(/SETTINGS, as on[\s\S]*?(?=\n\n)/.exec(usage)?.[0] ?? '').matchAll(/--[a-z0-9-]+/g)].map((match) => match[0]))
  const commands = new Map<string, Set<string>>()
  for (const line of usage.split('\n')) {
    const match = /^ {2}([a-z][a-z-]*(?: [a-z][a-z-]*)?)(?= |$)(.*)$/.exec(line)
    if (!match) continue
    // The signature is what comes before the description, three spaces or more apart.
    const signature = match[2]!.split(/ {3,}/)[0]!
    const options = new Set([...signature.matchAll(/--[a-z0-9-]+/g)].map((each) => each[0]))
    if (signature.includes('[SETTINGS]')) for (const option of settings) options.add(option)
    options.add('--help')
    commands.set(match[1]!, options)
  }
  return commands
}

function checkCli(args: string[]): string[] {
  const usage = cliUsage()
  const words = args.flatMap((word) => word.replace(/^\[|\]$/g, '').split('|')).filter((word) => word !== '' && word !== 'SETTINGS')
  const command = [words.slice(0, 2).join(' '), words[0]!].find((each) => usage.has(each))
  if (command === undefined) return [`no command "${words.slice(0, 2).join(' ')}" in src/cli.ts's usage`]
  const options = usage.get(command)!
  return words
    .slice(command.split(' ').length)
    .filter((word) => word.startsWith('--'))
    .map((word) => word.split('=')[0]!)
    .filter((option) => !options.has(option))
    .map((option) => `\`${command}\` takes no ${option} (src/cli.ts's usage: ${[...options].join(' ')})`)
}

/** A curl command: its method, path, query, body and the answer written under it. */
function checkCurl(command: Command): string[] {
  const problems: string[] = []
  let method: string | undefined
  let body: string | undefined
  let url: string | undefined
  const args = command.words.slice(1)
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '-X' || arg === '--request') method = args[++i]
    else if (['-d', '--data', '--data-raw', '--data-binary'].includes(arg)) body = args[++i]
    else if (['-H', '--header', '-o', '--output', '-w', '--write-out', '-u', '--user', '--max-time', '-m'].includes(arg)) i++
    else if (arg.startsWith('-')) continue
    else url = arg
  }
  if (url === undefined) return ['a curl command without a URL']
  method = (method ?? (body === undefined ? 'GET' : 'POST')).toUpperCase()
  const target = url.replace(/^(\$\{?[A-Z_]+\}?|https?:\/\/[^/]+)/, '')
  const [route, query] = target.split('?') as [string, string | undefined]
  const op = operationAt(method, route)
  if (op === undefined) return [`${method} ${route}: no such operation in the client or the admin OpenAPI document`]
  const declared = new Set(
    (op.operation.parameters ?? [])
      .map((parameter: any) => (parameter.$ref ? documents[op.document].components.parameters[parameter.$ref.split('/').pop()] : parameter))
      .filter((parameter: any) => parameter.in === 'query')
      .map((parameter: any) => parameter.name),
  )
  for (const name of new URLSearchParams(query ?? '').keys()) if (!declared.has(name)) problems.push(`${method} ${route}: no query parameter ${name}`)
  if (body !== undefined && body.startsWith('@')) {
    // A body read from a file (`-d @consents-0.json`): the page shows how the file is made, not its text; nothing to parse here.
  } else if (body !== undefined) {
    try {
      problems.push(...check(op.document, requestAt(op), parseSample(body)).map((problem) => `the body of ${method} ${route}: ${problem}`))
    } catch (error) {
      problems.push(`the body of ${method} ${route} is not JSON: ${(error as Error).message}`)
    }
  }
  // An answer written as comments under the command: `# 201 {...}` (over as many lines as it takes), or a status alone.
  const answer = answerOf(command.comments)
  if (answer !== undefined) {
    const status = answer.status ?? successOf(op)
    if (op.operation.responses[status] === undefined) problems.push(`${op.operation.operationId} declares no ${status} answer`)
    else if (answer.json !== undefined) {
      try {
        problems.push(...check(op.document, responseAt(op, status), parseSample(answer.json)).map((problem) => `the ${status} answer of ${method} ${route}: ${problem}`))
      } catch (error) {
        problems.push(`the answer under ${method} ${route} is not JSON: ${(error as Error).message}`)
      }
    }
  }
  return problems
}

/** The answer among a command's comments: the first that starts with a status or `{`, and the lines that close its brackets. */
function answerOf(comments: string[]): { status?: string; json?: string } | undefined {
  const first = comments.findIndex((comment) => /^(\d{3}\b|\{)/.test(comment))
  if (first === -1) return undefined
  const [, status, rest] = /^(\d{3})?\s*([\s\S]*)$/.exec(comments[first]!)!
  if (!rest!.startsWith('{')) return { status }
  let json = rest!
  for (let i = first + 1; depth(json) > 0 && i < comments.length; i++) json += '\n' + comments[i]
  return { status, json }
}

/** How many brackets a text leaves open, outside its strings. */
function depth(text: string): number {
  let open = 0
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '"') while (++i < text.length && text[i] !== '"') if (text[i] === '\\') i++
    if (text[i] === '{' || text[i] === '[') open++
    if (text[i] === '}' || text[i] === ']') open--
  }
  return open
}

/** The variables a command gives the service (`NAME=value npm start`, `docker run -e NAME=value ...`): each one the reference names. */
function checkServiceVariables(command: Command): string[] {
  const [program, ...args] = command.words
  const service =
    (program === 'npm' && (args[0] === 'start' || (args[0] === 'run' && ['cli', 'dev'].includes(args[1]!)))) ||
    (program === 'node' && args.includes('dist/cli.js')) ||
    (program === 'docker' && args[0] === 'run' && args.includes('conversation-trigger-service'))
  if (!service) return []
  const given = [
    ...command.assignments.map((assignment) => assignment.split('=')[0]!),
    ...args.flatMap((arg, i) => (args[i - 1] === '-e' && /^[A-Z_][A-Z0-9_]*=/.test(arg) ? [arg.split('=')[0]!] : [])),
  ]
  const documented = documentedVariables()
  return given.filter((name) => !documented.has(name)).map((name) => `${name}: given to the service, but not in the configuration reference`)
}

function checkCommand(command: Command): string[] {
  const problems = checkServiceVariables(command)
  return problems.length > 0 ? problems : checkProgram(command)
}

function checkProgram(command: Command): string[] {
  const [program, ...args] = command.words
  if (program === undefined) return [] // assignments alone
  if (program === 'curl') return checkCurl(command)
  if (program === 'npm') {
    if (args[0] === 'run') {
      const script = args[1]!
      if (PACKAGE.scripts[script] === undefined) return [`npm run ${script}: no such script in package.json`]
      if (script === 'cli') return args[2] === '--' ? checkCli(args.slice(3)) : ['npm run cli without -- before its arguments']
      return []
    }
    if (PACKAGE.scripts[args[0]!] !== undefined || NPM_COMMANDS.has(args[0]!)) return []
    return [`npm ${args[0]}: neither a script of package.json nor one of npm's commands the manual uses`]
  }
  if (program === 'node') {
    if (['-p', '-e', '-pe'].includes(args[0]!)) return []
    const script = args.find((arg) => !arg.startsWith('-'))!
    if (script === 'dist/cli.js') return checkCli(args.slice(args.indexOf(script) + 1))
    return existsSync(path.join(ROOT, script)) ? [] : [`node ${script}: no such file`]
  }
  if (program === 'docker' && args[0] === 'run') {
    const image = args.indexOf('conversation-trigger-service')
    return image === -1 || image === args.length - 1 ? [] : checkCli(args.slice(image + 1))
  }
  if (UNCHECKED_PROGRAMS[program] !== undefined) return []
  return [`${program}: a program this test neither checks nor lists in UNCHECKED_PROGRAMS`]
}

describe('the samples of the manual', () => {
  test('a block that holds JSON says so (```json), so that it is checked', () => {
    const unlabelled = PAGES.flatMap((page) =>
      page.blocks.filter((block) => block.lang === '' && /^\s*[{[]\s*"/.test(block.text)).map((block) => `${page.file}:${block.line}`),
    )
    assert.deepEqual(unlabelled, [])
  })
  for (const page of PAGES) {
    const jsonBlocks = page.blocks.filter((block) => block.lang === 'json')
    const shellBlocks = page.blocks.filter((block) => block.lang === 'sh' || block.lang === 'bash')
    if (jsonBlocks.length > 0) {
      test(`${page.file}: every json block is JSON and valid against the OpenAPI document`, () => {
        const problems = jsonBlocks.flatMap((block) => {
          try {
            return checkJsonBlock(page, block).map((problem) => `line ${block.line}: ${problem}`)
          } catch (error) {
            return [`line ${block.line}: ${(error as Error).message}`]
          }
        })
        assert.deepEqual(problems, [], `${page.file}:\n${problems.join('\n')}`)
      })
    }
    if (shellBlocks.length > 0) {
      test(`${page.file}: every command is checked (curl against the OpenAPI documents, npm scripts, the command line)`, () => {
        const problems = shellBlocks.flatMap((block) =>
          parseShell(block.text).flatMap((command) => checkCommand(command).map((problem) => `line ${block.line}: ${problem}\n    ${command.source.split('\n')[0]}`)),
        )
        assert.deepEqual(problems, [], `${page.file}:\n${problems.join('\n')}`)
      })
    }
  }
})

// ---------------------------------------------------------------------------
// The configuration reference

/** Variables the OpenTelemetry SDK reads itself, in the service's process, that the reference names. */
const OTEL_SDK_VARIABLES = ['OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TIMEOUT']

/** Every environment variable src/ names: `env.X`, `process.env.X`, the default names of provider secrets (`..._ENV = 'X'`), the SDK's `getNumberFromEnv('X')`. */
function variablesTheCodeReads(): Set<string> {
  const names = new Set<string>()
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name)
      if (statSync(file).isDirectory()) walk(file)
      else if (name.endsWith('.ts')) {
        const source = readFileSync(file, 'utf8')
        for (const pattern of [/\benv\.([A-Z][A-Z0-9_]+)/g, /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g, /_ENV = '([A-Z][A-Z0-9_]+)'/g, /FromEnv\('([A-Z][A-Z0-9_]+)'\)/g]) {
          for (const match of source.matchAll(pattern)) names.add(match[1]!)
        }
      }
    }
  }
  walk(path.join(ROOT, 'src'))
  return names
}

/** The variables the configuration reference's table names (its first column). */
function documentedVariables(): Set<string> {
  const page = pageOf('docs/configuration.md')!
  const start = page.prose.findIndex((line) => /^## Variables/.test(line))
  assert.ok(start >= 0, 'docs/configuration.md has a "## Variables" section')
  const rows = page.prose.slice(start + 1).filter((line, i, all) => line.startsWith('|') && !all.slice(0, i).some((before) => /^## /.test(before)))
  return new Set(rows.slice(2).flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]!)))
}

test('the configuration reference names exactly the environment variables the service reads', () => {
  const documented = documentedVariables()
  const read = variablesTheCodeReads()
  for (const name of OTEL_SDK_VARIABLES) read.add(name)
  assert.deepEqual([...read].filter((name) => !documented.has(name)).sort(), [], 'read by the code but missing from the table')
  assert.deepEqual([...documented].filter((name) => !read.has(name)).sort(), [], 'in the table but read by no code')
})

// ---------------------------------------------------------------------------
// The rules above, on samples made to fail

describe('the checks themselves', () => {
  test('a broken sample fails: a wrong field, a missing one, a bad path, an unknown option, bad JSON', () => {
    assert.notDeepEqual(check('client', pointer('components', 'schemas', 'TriggerRequest'), parseSample('{"campaign": 42}')), [])
    assert.notDeepEqual(check('client', pointer('components', 'schemas', 'TriggerAccepted'), parseSample('{"id": "trg_..."}')), [])
    assert.deepEqual(check('client', pointer('components', 'schemas', 'TriggerAccepted'), parseSample('{"id": "trg_...", ...}')), [])
    assert.throws(() => parseSample('{"a": 1,}'))
    assert.deepEqual(parseSample('{"rule": {...} or null, "b": [1, ...]}'), { rule: ANY_OBJECT, b: [1, ANY_ELEMENT] })
    const curl = (text: string) => parseShell(text).flatMap(checkCommand)
    assert.notDeepEqual(curl(`curl -s -X POST $BASE/api/v2/trigger -d '{"campaign": "x"}'`), [])
    assert.notDeepEqual(curl(`curl -s -X POST $BASE/api/v2/triggers -d '{"campaign": "x", "test_mode": "yes"}'`), [])
    assert.deepEqual(curl(`curl -s -X POST $BASE/api/v2/triggers -d '{"campaign": "x"}'\n# 201 {"data": {...}, "metadata": {...}}`), [])
    assert.notDeepEqual(curl(`curl -s -X POST $BASE/api/v2/triggers -d '{"campaign": "x"}'\n# 201 {"data": {"id": 1}, "metadata": {...}}`), [])
    assert.notDeepEqual(curl('npm run cli -- org create --nom Acme'), [])
    assert.notDeepEqual(curl('npm run nothing'), [])
    assert.notDeepEqual(curl('rm -rf data'), [])
    assert.notDeepEqual(curl('DATABASE_ADDRESS=postgres://db npm start'), [])
    assert.deepEqual(curl('DATABASE_URL=postgres://db npm start'), [])
  })
})
