/**
 * CPU time used by the processes under measurement, read from Linux's /proc:
 * with it the report says where a request's CPU goes (the server, PostgreSQL),
 * which on a machine of two cores shared by server, database and load
 * generator is what bounds the throughput.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second in which /proc counts CPU time (USER_HZ). */
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

/**
 * A process's name, its CPU seconds so far (user and system, all threads) and
 * its start time (in clock ticks since boot), or undefined once it has gone.
 */
function readProcess(pid: string): { name: string; seconds: number; startTicks: string } | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The name is in parentheses and may itself hold spaces and parentheses.
  const nameEnd = stat.lastIndexOf(')')
  const fields = stat.slice(nameEnd + 2).split(' ')
  // Fields 14, 15 and 22 of proc(5), utime, stime and starttime; the slice starts at field 3.
  return {
    name: stat.slice(stat.indexOf('(') + 1, nameEnd),
    seconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
    startTicks: fields[19]!,
  }
}

export function processCpuSeconds(pid: number): number {
  const found = readProcess(String(pid))
  if (found === undefined) throw new Error(`process ${pid} has exited`)
  return found.seconds
}

/**
 * The CPU seconds that PostgreSQL spends on one database from now until
 * `stop`: its backends' and the server's own processes' (the WAL writer, the
 * checkpointer...), but not those of backends of other databases, which on a
 * shared machine other work keeps busy.
 *
 * The run may be long enough for the service's connection pools to close the
 * connections they leave idle (after 10 s, pg's default), whose backends then
 * exit with their time: every process is read each second and counted as
 * last seen, so that only a backend that comes and goes within a second
 * escapes.
 */
export function meterPostgresCpu(database: string): { stop(): number } {
  const counted = (title: string) => {
    // A backend's title (/proc/PID/cmdline) is `postgres: [cluster: ]user database host(port)|[local] activity`,
    // an autovacuum worker's `postgres: [cluster: ]autovacuum worker database`.
    const backendOf =
      /^postgres: (?:\S+: )?\S+ (\S+) (?:\[local\]|\S+\(\d+\))/.exec(title)?.[1] ?? /^postgres: (?:\S+: )?autovacuum worker (\S+)/.exec(title)?.[1]
    return backendOf === undefined || backendOf === database
  }
  const first = postgresProcesses(counted)
  const last = new Map(first)
  const sample = () => {
    for (const [id, seconds] of postgresProcesses(counted)) last.set(id, seconds)
  }
  // Unreferenced: a run that fails before `stop` must not keep the benchmark alive.
  const timer = setInterval(sample, 1000).unref()
  return {
    stop() {
      clearInterval(timer)
      sample()
      let seconds = 0
      for (const [id, lastSeconds] of last) seconds += lastSeconds - (first.get(id) ?? 0)
      return seconds
    },
  }
}

/**
 * Each PostgreSQL process's CPU seconds so far, by pid and start time (a pid
 * may be taken again by a later process); only those whose title `counted`
 * keeps, when given.
 */
function postgresProcesses(counted?: (title: string) => boolean): Map<string, number> {
  const found = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const stat = readProcess(pid)
    if (stat?.name !== 'postgres' || (counted !== undefined && !counted(processTitle(pid)))) continue
    found.set(`${pid}@${stat.startTicks}`, stat.seconds)
  }
  return found
}

/** The title a process shows in ps, which PostgreSQL's backends set to say whose they are; empty once it has gone. */
function processTitle(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
  } catch {
    return ''
  }
}
