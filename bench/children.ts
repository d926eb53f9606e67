/**
 * The benchmark's child processes (servers, wrk), tracked so that none
 * outlives it: on an error, on Ctrl-C, or on a normal end, every one still
 * running is stopped.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process'

const running = new Set<ChildProcess>()
let stopping = false

/**
 * Starts a tracked child in a process group of its own, so that a Ctrl-C
 * reaches only the benchmark, which then stops its children itself (wrk would
 * otherwise print a partial report and exit as if it had finished). Refused
 * once the benchmark is stopping, so that a late step cannot leave one behind.
 */
export function startChild(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  if (stopping) throw new Error('the benchmark is stopping')
  const child = spawn(command, args, { ...options, detached: true })
  running.add(child)
  child.once('exit', () => running.delete(child))
  return child
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null
}

/** SIGTERM (a server then drains and closes its database), SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (hasExited(child)) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

export async function stopAllChildren(): Promise<void> {
  stopping = true
  await Promise.all([...running].map((child) => stopChild(child)))
}

// The last resort when the process exits without having stopped them (process.exit in a handler).
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})
