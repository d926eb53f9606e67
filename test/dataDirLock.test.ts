/**
 * One writer on an embedded data directory: the decision whether a lock's
 * holder still runs, the lock in one process, and real processes (`serve`,
 * the CLI, a process holding the directory through the same open path)
 * started on one directory in either order. Every process spawned here runs
 * on the embedded database, whatever this run tests: a DATABASE_URL takes no
 * lock, so none is passed on.
 */
import assert from 'node:assert/strict'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { DataDirInUse, judgeHolder, LOCK_FILE, type LockHolder, lockDataDir, type Observed, parseHolder, startTimeOf, type ThisProcess } from '../src/store/dataDirLock.ts'
import { openDatabase } from '../src/store/database.ts'
import { cliArguments, ROOT } from './support/cli.ts'
import { freePort, onPostgres, poolMode } from './support/service.ts'

const BOOT = 'f96bf9c3-cfc0-4763-b6df-ea9d88c6d61b'

describe('whether a lock is stale', () => {
  const self: ThisProcess = { pid: 500, host: 'vm', bootId: BOOT }
  const holder = (changes: Partial<LockHolder> = {}): LockHolder => ({
    pid: 400,
    startTime: 7000,
    bootId: BOOT,
    host: 'vm',
    command: 'serve',
    since: '2026-11-27T07:01:02.000Z',
    ...changes,
  })
  const running = (startTime: number | null): Observed => ({ running: true, startTime })
  const gone: Observed = { running: false }
  const cases: [string, LockHolder, Observed, ReturnType<typeof judgeHolder>, ThisProcess?][] = [
    ['its process runs, started when it took the lock', holder(), running(7000), { stale: false, elsewhere: false }],
    ['its pid names no process', holder(), gone, { stale: true, reason: 'no such process' }],
    ['its pid was given to a process started later', holder(), running(9100), { stale: true, reason: 'pid reused' }],
    ['its pid runs, and no start time was recorded (no /proc where it ran)', holder({ startTime: null }), running(9100), { stale: false, elsewhere: false }],
    ['its pid runs, and its start time cannot be read here', holder(), running(null), { stale: false, elsewhere: false }],
    ['no start time recorded, and no process', holder({ startTime: null }), gone, { stale: true, reason: 'no such process' }],
    ['taken before the machine restarted, though a process of that pid runs', holder(), running(7000), { stale: true, reason: 'machine restarted' }, { ...self, bootId: 'another-boot' }],
    ['no boot id recorded: the pid decides', holder({ bootId: null }), running(7000), { stale: false, elsewhere: false }],
    ['it names this very pid (a restarted container\'s pid 1)', holder({ pid: 500 }), running(7000), { stale: true, reason: 'our own pid' }],
    ['taken on another host: its pid means nothing here', holder({ host: 'other' }), gone, { stale: false, elsewhere: true }],
    ['taken on another host, even with this pid', holder({ host: 'other', pid: 500 }), running(1), { stale: false, elsewhere: true }],
  ]
  for (const [name, recorded, observed, verdict, asking = self] of cases) {
    test(name, () => assert.deepEqual(judgeHolder(recorded, asking, observed), verdict))
  }

  test('the lock file is read leniently, and a pid that is not a positive integer is no lock', () => {
    assert.deepEqual(parseHolder('{"pid":12,"start_time":5,"boot_id":"b","host":"h","command":"serve","since":"2026-11-27T07:01:02.000Z","admin_api":"http://localhost:8080/admin/v1"}'), {
      pid: 12,
      startTime: 5,
      bootId: 'b',
      host: 'h',
      command: 'serve',
      since: '2026-11-27T07:01:02.000Z',
      adminApi: 'http://localhost:8080/admin/v1',
    })
    assert.equal(parseHolder('{"pid":12}')?.host, hostname())
    for (const text of ['', '{"pid":', 'null', '[]', '{"pid":0}', '{"pid":-1}', '{"pid":1.5}', '{"pid":"12"}']) assert.equal(parseHolder(text), undefined, text)
  })

  test('a process\'s start time is field 22 of /proc/<pid>/stat', { skip: process.platform !== 'linux' && 'Linux only' }, async () => {
    const stat = await readFile('/proc/self/stat', 'utf8')
    assert.equal(startTimeOf(process.pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]))
    assert.ok(startTimeOf(process.pid)! > 0)
    assert.equal(startTimeOf(2 ** 30), null)
  })
})

let scratch: string
let dirs = 0
before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'data-dir-lock-'))
})
after(async () => {
  await rm(scratch, { recursive: true, force: true })
})
const freshDir = () => path.join(scratch, `data-${++dirs}`)
const lockFile = (dataDir: string) => path.join(dataDir, LOCK_FILE)
const readHolder = async (dataDir: string) => JSON.parse(await readFile(lockFile(dataDir), 'utf8'))
const exists = (file: string) => stat(file).then(() => true, () => false)

describe('the lock in one process', () => {
  test('taken, refused a second time, released: the file names the holder and is gone after', async () => {
    const dataDir = freshDir()
    const lock = await lockDataDir(dataDir, 'org create')
    const recorded = await readHolder(dataDir)
    assert.equal(recorded.pid, process.pid)
    assert.equal(recorded.command, 'org create')
    assert.equal(recorded.host, hostname())
    assert.equal(recorded.start_time, startTimeOf(process.pid))
    assert.match(recorded.since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    // A second database on the directory in this process would be a second writer as well.
    await assert.rejects(lockDataDir(dataDir, 'serve'), (error: Error) => error instanceof DataDirInUse && error.message.includes(`process ${process.pid} (org create, since `))
    lock.release()
    lock.release()
    assert.equal(await exists(lockFile(dataDir)), false)
    ;(await lockDataDir(dataDir, 'migrate')).release()
  })

  test('released, it deletes the file only if it is still its own', async () => {
    const dataDir = freshDir()
    const lock = await lockDataDir(dataDir, 'serve')
    const another = JSON.stringify({ pid: 1, start_time: 1, boot_id: null, host: hostname(), command: 'serve', since: new Date().toISOString() })
    await writeFile(lockFile(dataDir), another)
    lock.release()
    assert.equal(await readFile(lockFile(dataDir), 'utf8'), another)
  })

  test('announced, it names the admin API of its holder, and is still released', async () => {
    const dataDir = freshDir()
    const lock = await lockDataDir(dataDir, 'serve')
    lock.announce('http://localhost:8080/admin/v1')
    assert.equal((await readHolder(dataDir)).admin_api, 'http://localhost:8080/admin/v1')
    lock.release()
    assert.deepEqual(await readdir(dataDir), [])
  })

  test('an embedded database in memory takes none', async () => {
    const inMemory = await openDatabase({ databaseUrl: undefined, dataDir: 'memory://' })
    assert.equal(inMemory.dataDirLock, undefined)
    await inMemory.close()
  })

  test('a PostgreSQL database takes no lock on DATA_DIR', { skip: process.env.DATABASE_URL === undefined && 'with DATABASE_URL only' }, async () => {
    const dataDir = freshDir()
    const lock = await lockDataDir(dataDir, 'serve')
    try {
      const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, poolMode, dataDir })
      assert.equal(db.dataDirLock, undefined)
      await db.query('SELECT 1')
      await db.close()
    } finally {
      lock.release()
    }
  })
})

/** The environment of a spawned process: the embedded database in `dataDir`, never a DATABASE_URL of this run's. */
function environment(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'info', HOST: '127.0.0.1', ...extra }
}

function collect(child: ChildProcessWithoutNullStreams) {
  const output = { stdout: '', stderr: '' }
  child.stdout.on('data', (chunk) => (output.stdout += chunk))
  child.stderr.on('data', (chunk) => (output.stderr += chunk))
  return output
}

function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode)
    else child.on('close', (code) => resolve(code))
  })
}

async function runCli(dataDir: string, args: string[], extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, cliArguments(...args), { cwd: ROOT, env: environment(dataDir, extra) })
  const output = collect(child)
  // A refusal comes at once; a process that runs on instead is a failure, not a hung test.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  const code = await exited(child)
  clearTimeout(timer)
  return { code, ...output }
}

/** `serve` on `dataDir`, once it has logged that it is ready. */
async function startServe(dataDir: string) {
  const port = await freePort()
  const child = spawn(process.execPath, cliArguments('serve'), { cwd: ROOT, env: environment(dataDir, { PORT: String(port) }) })
  const output = collect(child)
  for (let waited = 0; !output.stdout.includes('"msg":"ready"'); waited += 50) {
    if (child.exitCode !== null || waited > 30_000) {
      child.kill('SIGKILL')
      throw new Error(`serve did not start: ${output.stdout}${output.stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const base = `http://127.0.0.1:${port}`
  const token = (await readFile(path.join(dataDir, 'operator-token'), 'utf8')).trim()
  return {
    pid: child.pid!,
    base,
    async createOrganization(name: string) {
      const response = await fetch(`${base}/admin/v1/organizations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      })
      assert.equal(response.status, 201)
    },
    stop: () => {
      child.kill('SIGTERM')
      return exited(child)
    },
  }
}

/**
 * A process that holds the directory through the open path every command
 * takes (openDatabase), as `org create` does: it creates an organization and
 * keeps the database open until SIGTERM, then closes it. The admin commands
 * end too fast to be caught running.
 */
async function holdAsTheCommandLine(dataDir: string) {
  const module = (file: string) => JSON.stringify(pathToFileURL(path.join(ROOT, file)).href)
  const script = `
    const { openDatabase } = await import(${module('src/store/database.ts')})
    const { migrate } = await import(${module('src/store/migrate.ts')})
    const { createOrganization } = await import(${module('src/services/administration.ts')})
    const { COMMAND_LINE } = await import(${module('src/domain/audit.ts')})
    const db = await openDatabase({ databaseUrl: undefined, dataDir: process.env.DATA_DIR, command: 'org create' })
    await migrate(db)
    const org = await createOrganization({ db, now: Date.now, channels: undefined }, COMMAND_LINE, 'Held by the command line')
    process.on('SIGTERM', () => db.close().then(() => process.exit(0)))
    process.stdout.write(JSON.stringify(org) + '\\n')
    setInterval(() => {}, 60_000)
  `
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: environment(dataDir) })
  const output = collect(child)
  for (let waited = 0; !output.stdout.includes('\n'); waited += 20) {
    if (child.exitCode !== null || waited > 30_000) throw new Error(`the holder did not start: ${output.stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return {
    pid: child.pid!,
    stop: () => {
      child.kill('SIGTERM')
      return exited(child)
    },
  }
}

/** Every file under `dir` with its size and modification time: what a refused process must leave as it was. */
async function snapshot(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true })
  return Promise.all(
    entries.sort().map(async (entry) => {
      const info = await stat(path.join(dir, entry))
      return `${entry} ${info.isDirectory() ? 'dir' : info.size} ${info.mtimeMs}`
    }),
  )
}

/**
 * The organizations of the embedded database in `dataDir`, read by this
 * process, which holds the directory as any other would until it closes it.
 */
async function organizationNamesIn(dataDir: string): Promise<string[]> {
  const db = await openDatabase({ databaseUrl: undefined, dataDir, command: 'a test' })
  try {
    assert.equal(db.dataDirLock?.holder.pid, process.pid)
    assert.equal((await readHolder(dataDir)).command, 'a test')
    await assert.rejects(openDatabase({ databaseUrl: undefined, dataDir }), DataDirInUse)
    return (await db.query<{ name: string }>('SELECT name FROM organizations ORDER BY name')).map((row) => row.name)
  } finally {
    await db.close()
    assert.equal(await exists(lockFile(dataDir)), false, 'released by close()')
  }
}

const sinceOf = (holder: { since: string }) => holder.since.replace(/\.\d{3}Z$/, 'Z')

// Every process here runs on an embedded database of its own, whatever DATABASE_URL this run has: a run on PostgreSQL would only repeat them.
describe('processes on one data directory', { skip: onPostgres && 'on the embedded database whatever the run: tested in the PGlite run' }, () => {
  test('serve first: the command line, a second serve, a worker and migrate are refused with one line, and nothing is lost', async () => {
    const dataDir = freshDir()
    const server = await startServe(dataDir)
    let stopped = false
    try {
      await server.createOrganization('Through the API')
      const holder = await readHolder(dataDir)
      assert.equal(holder.pid, server.pid)
      assert.equal(holder.admin_api, `${server.base}/admin/v1`)
      const line =
        `DATA_DIR ${dataDir} is in use by process ${server.pid} (serve, since ${sinceOf(holder)}): ` +
        `stop it first, or use the admin API of the running service (${server.base}/admin/v1) instead of the command line.\n`
      const intruder = await runCli(dataDir, ['org', 'create', '--name', 'Intruder'])
      assert.deepEqual(intruder, { code: 1, stdout: '', stderr: line })
      const port = String(await freePort())
      const others = [['serve'], ['worker'], ['migrate']]
      const refused = await Promise.all(others.map((command) => runCli(dataDir, command, { PORT: port, METRICS_PORT: port })))
      others.forEach((command, index) => assert.deepEqual(refused[index], { code: 1, stdout: '', stderr: line }, command.join(' ')))
      assert.equal(await server.stop(), 0)
      stopped = true
      assert.equal(await exists(lockFile(dataDir)), false, 'released on a graceful shutdown')

      const later = await runCli(dataDir, ['org', 'create', '--name', 'After the server'])
      assert.equal(later.code, 0, later.stderr)
      assert.deepEqual(await organizationNamesIn(dataDir), ['After the server', 'Through the API'])
    } finally {
      if (!stopped) assert.equal(await server.stop(), 0)
    }
  })

  test('the command line first: serve and another command are refused, change nothing, and its organization is kept', async () => {
    const dataDir = freshDir()
    const holder = await holdAsTheCommandLine(dataDir)
    let held = true
    try {
      const recorded = await readHolder(dataDir)
      assert.equal(recorded.pid, holder.pid)
      const before = await snapshot(dataDir)
      const line = `DATA_DIR ${dataDir} is in use by process ${holder.pid} (org create, since ${sinceOf(recorded)}): wait for it to end.\n`
      const port = String(await freePort())
      const refused = await Promise.all([runCli(dataDir, ['serve'], { PORT: port }), runCli(dataDir, ['org', 'create', '--name', 'Intruder'])])
      for (const result of refused) assert.deepEqual(result, { code: 1, stdout: '', stderr: line })
      assert.deepEqual(await snapshot(dataDir), before)
      assert.equal(await exists(path.join(dataDir, 'operator-token')), false, 'no secret made by a refused serve')
      assert.equal(await exists(path.join(dataDir, 'phone-hash-key')), false)

      assert.equal(await holder.stop(), 0)
      held = false
      assert.equal(await exists(lockFile(dataDir)), false)
      assert.deepEqual(await organizationNamesIn(dataDir), ['Held by the command line'])
    } finally {
      if (held) await holder.stop()
    }
  })

  test('a refused process creates nothing in the directory: not the database, not the secrets', async () => {
    const dataDir = freshDir()
    // This test's own process holds it, as any process of another command would.
    const lock = await lockDataDir(dataDir, 'migrate')
    try {
      const refused = await runCli(dataDir, ['serve'], { PORT: String(await freePort()) })
      assert.equal(refused.code, 1)
      assert.match(refused.stderr, new RegExp(`^DATA_DIR \\S+ is in use by process ${process.pid} \\(migrate, since \\S+Z\\): wait for it to end\\.\\n$`))
      assert.deepEqual(await readdir(dataDir), [LOCK_FILE])
    } finally {
      lock.release()
    }
  })

  test('a stale lock is taken over: its pid gone, its pid given to another process, or never written', async () => {
    const dead = spawn(process.execPath, ['-e', ''])
    await new Promise((resolve) => dead.on('close', resolve))
    const bootId = process.platform === 'linux' ? (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim() : null
    const ownStart = startTimeOf(process.pid)
    const stale = (changes: Record<string, unknown>) =>
      JSON.stringify({ pid: dead.pid, start_time: 1, boot_id: bootId, host: hostname(), command: 'serve', since: '2026-11-27T07:01:02.000Z', ...changes })
    // One directory for all: a database made once opens faster.
    const dataDir = freshDir()
    await mkdir(dataDir, { recursive: true })
    const leaveStale = async (text: string) => {
      await writeFile(lockFile(dataDir), text)
      const longAgo = new Date(Date.now() - 60_000)
      await utimes(lockFile(dataDir), longAgo, longAgo)
    }

    await leaveStale(stale({}))
    const server = await startServe(dataDir)
    try {
      assert.equal((await readHolder(dataDir)).pid, server.pid)
      await server.createOrganization('its pid is gone')
    } finally {
      assert.equal(await server.stop(), 0)
    }
    await leaveStale(stale({ pid: process.pid, start_time: (ownStart ?? 0) + 1 }))
    const reused = await runCli(dataDir, ['org', 'create', '--name', 'its pid is this running test, started at another time'])
    // Where there is no /proc, a running pid holds it: only where start times are known can a reused pid be told apart.
    assert.equal(reused.code, ownStart === null ? 1 : 0, reused.stderr)
    await leaveStale('')
    const empty = await runCli(dataDir, ['org', 'create', '--name', 'an empty file its creator never wrote'])
    assert.equal(empty.code, 0, empty.stderr)

    assert.deepEqual(await readdir(dataDir).then((names) => names.sort()), ['operator-token', 'pglite', 'phone-hash-key'])
    const expected = ['an empty file its creator never wrote', 'its pid is gone', ...(ownStart === null ? [] : ['its pid is this running test, started at another time'])]
    assert.deepEqual(await organizationNamesIn(dataDir), expected)
  })

  test('a lock taken on another host is not judged from here: refused, with the file to remove if its process is gone', async () => {
    const dataDir = freshDir()
    await mkdir(dataDir, { recursive: true })
    await writeFile(lockFile(dataDir), JSON.stringify({ pid: 1, start_time: 1, boot_id: null, host: 'another-host', command: 'serve', since: '2026-11-27T07:01:02.000Z' }))
    const refused = await runCli(dataDir, ['org', 'create', '--name', 'Intruder'])
    assert.deepEqual(refused, {
      code: 1,
      stdout: '',
      stderr: `DATA_DIR ${dataDir} is in use by process 1 on host another-host (serve, since 2026-11-27T07:01:02Z): stop it first; if it no longer runs, remove ${lockFile(dataDir)}.\n`,
    })
  })

  test('processes taking over one stale lock at the same instant: exactly one gets it', async () => {
    const contenders = 8
    const module = JSON.stringify(pathToFileURL(path.join(ROOT, 'src/store/dataDirLock.ts')).href)
    // Each waits for the same instant, then tries; the one that gets the lock holds it until SIGTERM.
    const script = `
      const { lockDataDir } = await import(${module})
      const at = Number(process.env.AT)
      await new Promise((resolve) => setTimeout(resolve, at - Date.now() - 5))
      while (Date.now() < at) {}
      try {
        await lockDataDir(process.env.DATA_DIR, 'contender')
        process.on('SIGTERM', () => process.exit(0))
        process.stdout.write('got it\\n')
        setInterval(() => {}, 60_000)
      } catch (error) {
        process.stdout.write(error.message + '\\n')
      }
    `
    // 2^22 is the most pids Linux gives: this one names no process.
    const deadHolder = JSON.stringify({ pid: 2 ** 22 + 1, start_time: 1, boot_id: null, host: hostname(), command: 'serve', since: new Date().toISOString() })
    for (const [name, staleText, leftBehind] of [
      ['a dead pid', deadHolder, []],
      ['an empty file', '', []],
      // A process killed while it removed a stale lock leaves its guard, which stays: the next level serves.
      ['a dead pid, and a guard left by a process killed while removing it', deadHolder, [`${LOCK_FILE}.takeover-0`]],
    ] as const) {
      const dataDir = freshDir()
      await mkdir(dataDir, { recursive: true })
      const longAgo = new Date(Date.now() - 60_000)
      for (const file of [LOCK_FILE, ...leftBehind]) {
        await writeFile(path.join(dataDir, file), staleText)
        await utimes(path.join(dataDir, file), longAgo, longAgo)
      }
      const at = String(Date.now() + 2_500)
      const children = Array.from({ length: contenders }, () =>
        spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: environment(dataDir, { AT: at }) }),
      )
      const outputs = children.map(collect)
      try {
        for (let waited = 0; outputs.some((output) => !output.stdout.includes('\n')); waited += 20) {
          if (waited > 30_000) throw new Error(`no answer from every contender: ${JSON.stringify(outputs)}`)
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        const winners = children.filter((_, index) => outputs[index]!.stdout === 'got it\n')
        assert.equal(winners.length, 1, `${name}: ${outputs.map((output) => output.stdout.trim()).join(' | ')}`)
        const winner = winners[0]!
        assert.equal((await readHolder(dataDir)).pid, winner.pid, name)
        for (const output of outputs.filter((output) => output.stdout !== 'got it\n')) {
          assert.match(output.stdout, new RegExp(`^DATA_DIR \\S+ is in use by process ${winner.pid} \\(contender, since `), name)
        }
        assert.deepEqual((await readdir(dataDir)).sort(), [LOCK_FILE, ...leftBehind], `${name}: no guard left behind`)
        winner.kill('SIGTERM')
        assert.equal(await exited(winner), 0)
        assert.deepEqual(await readdir(dataDir), [...leftBehind], `${name}: released on process.exit()`)
      } finally {
        for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
      }
    }
  })
})
