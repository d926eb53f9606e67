/**
 * One writer on an embedded data directory. PGlite takes no lock on the
 * directory it keeps its files in (electric-sql/pglite#1106), so nothing
 * stopped a second process from opening it beside the first: `org create` run
 * while `serve` ran succeeded, and once the server stopped, the organization
 * was gone and the next write failed on a duplicate key of the audit log
 * (once, with a WebAssembly crash). Both processes had written the same files.
 *
 * Every process that opens the embedded database on a directory therefore
 * first creates `DATA_DIR/pid.lock` (O_EXCL), naming itself, and deletes it
 * when it closes the database or exits. A process that finds the file held
 * by a running process is refused before it changes anything in the
 * directory. One left by a process that is gone (killed, or its machine
 * restarted) is taken over.
 */
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import path from 'node:path'

export const LOCK_FILE = 'pid.lock'

/** What the lock file records, as JSON with snake_case keys (`start_time`, `boot_id`, `admin_api`). */
export interface LockHolder {
  pid: number
  /**
   * When the process started: field 22 of /proc/<pid>/stat (clock ticks since
   * boot), read for the holder by the holder itself, so that another process
   * compares it with what it reads for that pid. Null where there is no /proc.
   */
  startTime: number | null
  /** The kernel's boot id: a lock taken before the machine restarted names a process that is gone. */
  bootId: string | null
  /**
   * Where it runs. A pid of another machine means nothing here, nor one of a
   * container (which has a hostname of its own unless it shares the host's
   * network) to the host or another container, so such a lock is never judged
   * stale from here. A container restarted after a crash keeps its hostname,
   * and finds its old lock stale as any process does.
   */
  host: string
  /** What the process does (`serve`, `worker`, `org create`), for the line that refuses another. */
  command: string
  /** When it took the lock, ISO 8601 in UTC. */
  since: string
  /** The admin API of a `serve` holding it, once it listens: where a refused command line's operation can be done instead. */
  adminApi?: string
}

/** The process asking, as the decision sees it. */
export interface ThisProcess {
  pid: number
  host: string
  bootId: string | null
}

/** What this machine shows under the holder's pid: no process, or one that started at `startTime` (null: not known). */
export type Observed = { running: false } | { running: true; startTime: number | null }

export type Verdict =
  /** `elsewhere`: its pid names a process of another host, which cannot be checked from here. */
  | { stale: false; elsewhere: boolean }
  | { stale: true; reason: 'machine restarted' | 'no such process' | 'pid reused' | 'our own pid' }

/**
 * Whether the process a lock names still holds it. Pids are reused: a lock
 * left by a killed process may name a pid that some other process has since
 * been given, so a running pid holds the lock only if it started when the
 * holder did (where both start times are known; elsewhere the pid's being
 * alive must do, and a reused pid refuses wrongly rather than lets two in).
 */
export function judgeHolder(holder: LockHolder, self: ThisProcess, observed: Observed): Verdict {
  // The pid would be looked up among this machine's processes (or this container's), where it means nothing.
  if (holder.host !== self.host) return { stale: false, elsewhere: true }
  if (holder.bootId !== null && self.bootId !== null && holder.bootId !== self.bootId) return { stale: true, reason: 'machine restarted' }
  // A lock this process holds is refused before the file is read (see `held`), so one naming its pid was left by
  // an earlier process that had it: a service restarted as pid 1 of its container finds its own pid there.
  if (holder.pid === self.pid) return { stale: true, reason: 'our own pid' }
  if (!observed.running) return { stale: true, reason: 'no such process' }
  if (holder.startTime !== null && observed.startTime !== null && holder.startTime !== observed.startTime) return { stale: true, reason: 'pid reused' }
  return { stale: false, elsewhere: false }
}

/** Another process holds the data directory: stops a process before it changes anything there, with one line that names it. */
export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
    elsewhere: boolean,
  ) {
    const who = `process ${holder.pid}${elsewhere ? ` on host ${holder.host}` : ''} (${holder.command}, since ${holder.since.replace(/\.\d+Z$/, 'Z')})`
    const longRunning = /^(serve|worker)\b/.test(holder.command)
    const remedy =
      holder.adminApi !== undefined
        ? `stop it first, or use the admin API of the running service (${holder.adminApi}) instead of the command line`
        : longRunning
          ? 'stop it first'
          : 'wait for it to end'
    // Its pid cannot be checked from here: only the operator can tell that it is gone.
    const otherwise = elsewhere ? `; if it no longer runs, remove ${path.join(dataDir, LOCK_FILE)}` : ''
    super(`DATA_DIR ${dataDir} is in use by ${who}: ${remedy}${otherwise}.`)
  }
}

export interface DataDirLock {
  readonly holder: LockHolder
  /** Records where the holder's admin API listens, for the line that refuses another process. */
  announce(adminApi: string): void
  /** Deletes the lock file if it is still this lock's. Idempotent; also done on the process's exit. */
  release(): void
}

/** The lock files this process holds: a second database on one directory in one process would be a second writer too. */
const held = new Map<string, LockHolder>()

/**
 * An empty or unreadable lock file younger than this is being written by the
 * process that just created it (create and write are two calls); older, its
 * creator died between them.
 */
const WRITE_GRACE_MS = 1_000
/** How long processes may keep taking the lock from one another (each round ends in a few system calls) before this one gives up. */
const GIVE_UP_AFTER_MS = 10_000

/** Takes the lock on `dataDir` for this process, creating the directory if need be; throws DataDirInUse if a running process holds it. */
export async function lockDataDir(dataDir: string, command: string): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, LOCK_FILE)
  const self = thisProcess()
  const mine = held.get(file)
  if (mine !== undefined) throw new DataDirInUse(dataDir, mine, false)
  const holder: LockHolder = { ...self, startTime: startTimeOf(self.pid), command, since: new Date().toISOString() }
  const started = Date.now()
  while (Date.now() - started < GIVE_UP_AFTER_MS) {
    if (createExclusively(file, serialize(holder))) return heldLock(file, holder)
    const found = readLock(file)
    if (found === undefined) continue
    if (found.holder !== undefined) {
      const verdict = judgeHolder(found.holder, self, observe(found.holder.pid))
      if (!verdict.stale) throw new DataDirInUse(dataDir, found.holder, verdict.elsewhere)
    }
    // Being written, or another process is removing the stale lock: the next round reads what it has become.
    const removed = (found.holder !== undefined || found.ageMs >= WRITE_GRACE_MS) && removeStale(file, found, holder, self)
    if (!removed) await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 15))
  }
  throw new Error(`could not take ${file} in ${GIVE_UP_AFTER_MS / 1000} s: other processes kept taking it over`)
}

/** O_EXCL: of processes creating it at once, one succeeds and the others see it exists. */
function createExclusively(file: string, text: string): boolean {
  let fd: number
  try {
    fd = openSync(file, 'wx', 0o644)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
  try {
    writeSync(fd, text)
  } catch (error) {
    closeSync(fd)
    unlinkSync(file)
    throw error
  }
  closeSync(fd)
  return true
}

interface FoundLock {
  /** Exactly as read; with the inode and modification time, what tells this file from one created since. */
  text: string
  dev: bigint
  ino: bigint
  mtimeNs: bigint
  ageMs: number
  /** Undefined when the text is not a lock holder (empty: its creator has not written it yet, or died first). */
  holder: LockHolder | undefined
}

/** The lock file as it is, or undefined if there is none. */
function readLock(file: string): FoundLock | undefined {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    const stat = fstatSync(fd, { bigint: true })
    const text = readFileSync(fd, 'utf8')
    return { text, dev: stat.dev, ino: stat.ino, mtimeNs: stat.mtimeNs, ageMs: Date.now() - Number(stat.mtimeMs), holder: parseHolder(text) }
  } finally {
    closeSync(fd)
  }
}

/**
 * Removes the stale lock `judged`, so that the next round's O_EXCL create
 * decides which process has the directory; false if another process is at
 * it. Removing it by name straight away would not be safe: between the read
 * that judged it stale and the unlink, another process may have removed it
 * and created its own lock, which the unlink would delete, and both would
 * run. (Renaming it away, and putting back what turns out to be a live
 * lock, leaves the name free for an instant: with eight processes starting
 * together, a third one created its lock in that instant, and two ran.)
 *
 * So the stale lock is removed under a guard, a file of its own created with
 * O_EXCL: inside it, the lock is read again and unlinked only if it is still
 * the very file judged stale (the same text, which names its holder and when
 * it was taken, and the same inode and modification time, which tell an
 * empty file from one created since). No other process can remove it
 * meanwhile, since none is inside, and its dead holder will not; and a live
 * lock is never the file judged stale. A process killed inside the guard
 * (between a few system calls) leaves it behind, and nothing may delete it,
 * or two processes could be inside at once: the guard one level up serves
 * instead, taken once the one below is judged stale as a lock is.
 */
function removeStale(file: string, judged: FoundLock, holder: LockHolder, self: ThisProcess): boolean {
  for (let level = 0; ; level++) {
    const guard = `${file}.takeover-${level}`
    if (createExclusively(guard, serialize(holder))) {
      try {
        const now = readLock(file)
        if (now !== undefined && now.text === judged.text && now.dev === judged.dev && now.ino === judged.ino && now.mtimeNs === judged.mtimeNs) unlinkSync(file)
      } finally {
        unlinkSync(guard)
      }
      return true
    }
    const inside = readLock(guard)
    // Gone since: left by the process that was inside, which may have taken the lock already.
    if (inside === undefined) return false
    if (inside.holder === undefined ? inside.ageMs < WRITE_GRACE_MS : !judgeHolder(inside.holder, self, observe(inside.holder.pid)).stale) return false
  }
}

function heldLock(file: string, holder: LockHolder): DataDirLock {
  let current = holder
  held.set(file, current)
  const release = () => {
    if (held.get(file) !== current) return
    held.delete(file)
    process.off('exit', onExit)
    // Deleted only if still ours: after a `kill -9` and a takeover, the file may be another process's.
    const found = readLock(file)
    if (found?.holder !== undefined && found.holder.pid === current.pid && found.holder.since === current.since) unlinkSync(file)
  }
  // An uncaught error, or process.exit() on the way, must not leave the directory locked by a process that is gone.
  // (One that cannot be deleted then is left for the next process to find stale.)
  const onExit = () => {
    try {
      release()
    } catch {}
  }
  process.on('exit', onExit)
  return {
    get holder() {
      return current
    },
    announce(adminApi) {
      if (held.get(file) !== current) return
      current = { ...current, adminApi }
      held.set(file, current)
      // Written aside and renamed over the lock, so that a reader sees the old text or the new, never a part.
      const next = `${file}.${process.pid}.tmp`
      writeFileSync(next, serialize(current), { mode: 0o644 })
      renameSync(next, file)
    },
    release,
  }
}

function serialize(holder: LockHolder): string {
  const { pid, startTime, bootId, host, command, since, adminApi } = holder
  return `${JSON.stringify({ pid, start_time: startTime, boot_id: bootId, host, command, since, admin_api: adminApi })}\n`
}

/** A lock holder from the file's text; undefined when it is not one (not yet written, cut short, or not ours). */
export function parseHolder(text: string): LockHolder | undefined {
  let value: Record<string, unknown>
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  // A pid of 0 or below would name a process group to process.kill.
  if (typeof value.pid !== 'number' || !Number.isSafeInteger(value.pid) || value.pid <= 0) return undefined
  const string = (field: unknown) => (typeof field === 'string' ? field : undefined)
  return {
    pid: value.pid,
    startTime: typeof value.start_time === 'number' ? value.start_time : null,
    bootId: string(value.boot_id) ?? null,
    host: string(value.host) ?? hostname(),
    command: string(value.command) ?? 'unknown command',
    since: string(value.since) ?? 'an unknown time',
    adminApi: string(value.admin_api),
  }
}

function thisProcess(): ThisProcess {
  return { pid: process.pid, host: hostname(), bootId: bootId() }
}

/** Whether the pid names a running process, and when it started. */
function observe(pid: number): Observed {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return { running: false }
    // EPERM: it runs, as another user.
  }
  return { running: true, startTime: startTimeOf(pid) }
}

/** Field 22 of /proc/<pid>/stat, the process's start in clock ticks since boot; null without /proc. */
export function startTimeOf(pid: number): number | null {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // Field 2, the command's name, is in parentheses and may hold spaces and parentheses itself: fields are counted after the last ')', from field 3.
  const value = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3])
  return Number.isSafeInteger(value) ? value : null
}

function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return null
  }
}
