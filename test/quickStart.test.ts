/**
 * The README's quick start, run as written: `npm start` on a fresh embedded
 * database, then every `sh` block of "Your first trigger, and its webhook on
 * your machine", in order, in one bash session (as one terminal); it ends
 * when the receiver prints the task's task.completed with its signature
 * checked, and every line of the README's sample output must be among what
 * the terminal printed (ids, times and latencies aside).
 *
 * Three things are moved so that the run disturbs nothing on the machine: the
 * service's port (8080), the receiver's (9000) and the data directory
 * (./data), each replaced in the commands' text by a temporary one. The
 * quick start is the embedded database's: on a PostgreSQL run it is skipped.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { hasCurl } from './support/cli.ts'
import { freePort, onPostgres } from './support/service.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
const SECTION = README.slice(README.indexOf('### Your first trigger, and its webhook on your machine'), README.indexOf('### In the console'))
/** The first terminal's command, as the quick start's first block gives it. */
const START = 'npm start'
const skip = onPostgres ? 'the quick start runs on the embedded database: tested in the PGlite run' : hasCurl ? false : 'no curl on this machine'

/** The code blocks of a kind in the section, in order. */
function blocks(kind: string): string[] {
  return [...SECTION.matchAll(new RegExp('```' + kind + '\\n([\\s\\S]*?)```', 'g'))].map((match) => match[1]!)
}

/** A line of the sample output as a pattern: its ids, times and latencies stand for any. */
function samplePattern(line: string): RegExp {
  const escaped = line.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(
    escaped
      .replace(/(trg|tsk|evt|int|req)_[0-9a-z]{26}/g, '$1_[0-9a-z]{26}')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\\\.\d{3}Z/g, '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z')
      .replace(/\\\(\d+ ms\\\)/g, '\\(\\d+ ms\\)'),
  )
}

/** Everything a process printed, and a way to wait for a line of it. */
class Terminal {
  output = ''
  readonly #waiters = new Set<() => void>()

  constructor(readonly process: ChildProcess) {
    const take = (chunk: Buffer) => {
      this.output += chunk.toString('utf8')
      for (const waiter of this.#waiters) waiter()
    }
    process.stdout!.on('data', take)
    process.stderr!.on('data', take)
  }

  /** Until the output matches; a real wait (a service starting, a webhook arriving), bounded generously. */
  until(pattern: RegExp | string, what: string, timeoutMs = 90_000): Promise<void> {
    const matches = () => (typeof pattern === 'string' ? this.output.includes(pattern) : pattern.test(this.output))
    if (matches()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check)
        reject(new Error(`${what}: not seen within ${timeoutMs / 1000} s; the terminal printed:\n${this.output}`))
      }, timeoutMs)
      const check = () => {
        if (!matches()) return
        clearTimeout(timer)
        this.#waiters.delete(check)
        resolve()
      }
      this.#waiters.add(check)
      this.process.once('exit', (code) => reject(new Error(`${what}: the process exited (${code}) first; it printed:\n${this.output}`)))
    })
  }

  /** Stops the process and whatever it started (its process group). */
  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return
    const exited = new Promise((resolve) => this.process.once('exit', resolve))
    try {
      process.kill(-this.process.pid!, 'SIGTERM')
    } catch {
      // Gone already.
    }
    await exited
  }
}

const started: Terminal[] = []
const workDir = mkdtempSync(path.join(tmpdir(), 'quick-start-'))
after(async () => {
  for (const terminal of started.reverse()) await terminal.stop()
  rmSync(workDir, { recursive: true, force: true })
})

test("the README's quick start ends in a signed webhook printed by the developer's terminal", { skip }, async () => {
  assert.match(README, new RegExp(`npm install && ${START} `), "the quick start's first command starts the service so")
  const commands = blocks('sh')
  const [sample, ...more] = blocks('text')
  assert.ok(commands.length >= 3 && sample !== undefined && more.length === 0, 'the section has its commands and one sample of what they print')

  const [servicePort, receiverPort] = [await freePort(), await freePort()]
  const dataDir = path.join(workDir, 'data')
  const { DATABASE_URL: _, ...environment } = process.env
  const moved = (text: string) =>
    text.replaceAll('localhost:8080', `localhost:${servicePort}`).replaceAll('127.0.0.1:9000', `127.0.0.1:${receiverPort}`).replaceAll('data/operator-token', `${dataDir}/operator-token`)

  const service = new Terminal(
    spawn('bash', ['-c', START], { cwd: ROOT, detached: true, env: { ...environment, DATA_DIR: dataDir, PORT: String(servicePort), LOG_LEVEL: 'warn' } }),
  )
  started.push(service)
  await service.until('Operator token (shown once)', 'the service printed its operator token')
  for (;;) {
    const ready = await fetch(`http://127.0.0.1:${servicePort}/readyz`).then((response) => response.ok, () => false)
    if (ready) break
    await new Promise((resolve) => setTimeout(resolve, 200))
  }

  // The second terminal: the receiver takes its port as `npm run receiver` reads it, from PORT.
  const shell = new Terminal(spawn('bash', [], { cwd: ROOT, detached: true, env: { ...environment, PORT: String(receiverPort) } }))
  started.push(shell)
  for (const [n, block] of commands.entries()) {
    shell.process.stdin!.write(`${moved(block)}\necho "~ block ${n} done"\n`)
    await shell.until(`~ block ${n} done`, `block ${n}`)
    if (block.includes('npm run receiver')) await shell.until('receiving webhooks on', 'the receiver started')
    if (block.includes(' listen ')) await shell.until('forwarding events to', 'listen started')
  }
  await shell.until(/\(signature checked\) task\.completed evt_/, "the receiver printed the task's task.completed")
  await shell.until(/task\.completed evt_\w+ -> 204/, "listen printed the receiver's answer to it")

  for (const line of sample.split('\n').filter((each) => each.trim() !== '')) {
    assert.match(shell.output, samplePattern(line), `the README's sample line is among what the terminal printed:\n${line}`)
  }
  assert.doesNotMatch(shell.output, /refused: /, 'no webhook failed its signature check')
})
