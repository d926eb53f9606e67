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

/** A process's name and its CPU seconds so far (user and system, all threads), or undefined once it has gone. */
function readProcess(pid: string): { name: string; seconds: number } | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The name is in parentheses and may itself hold spaces and parentheses.
  const nameEnd = stat.lastIndexOf(')')
  const fields = stat.slice(nameEnd + 2).split(' ')
  // Fields 14 and 15 of proc(5), utime and stime; the slice starts at field 3.
  return { name: stat.slice(stat.indexOf('(') + 1, nameEnd), seconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND }
}

export function processCpuSeconds(pid: number): number {
  const found = readProcess(String(pid))
  if (found === undefined) throw new Error(`process ${pid} has exited`)
  return found.seconds
}

/**
 * CPU seconds of every PostgreSQL process now running: the server's backends
 * and its background writers. A backend that exits between two readings takes
 * its time with it, so the benchmark reads around runs in which its
 * connections stay open.
 */
export function postgresCpuSeconds(): number {
  let seconds = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const found = readProcess(pid)
    if (found?.name === 'postgres') seconds += found.seconds
  }
  return seconds
}
