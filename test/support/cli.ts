/** The service's command line run as a process of its own, as built into dist/ (what `npm start` runs), as an operator runs it. */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'

export const ROOT = path.resolve(import.meta.dirname, '..', '..')

let built: string | undefined
/**
 * node's arguments for `cli <args>`: dist/cli.js, which `npm test` builds
 * first (its pretest script). Run through tsx from the sources, each command
 * cost about 1.1 s more of CPU loading them (`--help`: 1.7 s against 0.6 s),
 * and a suite runs hundreds. A build older than a source is refused, so that
 * no test runs yesterday's code.
 */
export function cliArguments(...args: string[]): string[] {
  built ??= upToDateBuild()
  return [built, ...args]
}

function upToDateBuild(): string {
  // scripts/build.js writes it last, whatever it had to compile or copy.
  const stamp = path.join(ROOT, 'dist', '.built')
  const builtAt = existsSync(stamp) ? statSync(stamp).mtimeMs : -Infinity
  const src = path.join(ROOT, 'src')
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const file = path.join(entry.parentPath, entry.name)
    if (statSync(file).mtimeMs > builtAt) {
      throw new Error(`dist/ is older than ${path.relative(ROOT, file)}: the tests run the command line as built; run \`npm run build\` first (\`npm test\` does)`)
    }
  }
  return path.join(ROOT, 'dist', 'cli.js')
}

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** `cli <args>` with exactly `env` as its environment, once it has exited. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, cliArguments(...args), { cwd: ROOT, env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Whether `command` runs: it is on the PATH. */
export function installed(command: string, args = ['--version']): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Whether curl is on the PATH: the samples of the README and of the manual run with it, as a reader runs them. */
export const hasCurl = installed('curl')

/**
 * A test's `skip` for one that needs a tool of the machine (a command on the
 * PATH, or a program at an absolute path): none where it is installed, nor
 * under CI=true (.ci/run installs it, and a test without it fails there
 * rather than pass unchecked); elsewhere the line naming what to install.
 */
export function skipUnlessInstalled(command: string, install: string): false | string {
  const present = path.isAbsolute(command) ? existsSync(command) : installed(command)
  return present || process.env.CI === 'true' ? false : `${command} is missing (${install}): skipped`
}
