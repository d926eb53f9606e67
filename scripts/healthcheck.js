/**
 * The container image's HEALTHCHECK: GET /healthz from the process the
 * container runs; exit 0 on a 200, 1 otherwise.
 *
 * One HEALTHCHECK serves every command of the image, and the port depends on
 * the command (`serve` answers on PORT, `worker` on METRICS_PORT), so the
 * command is read from the container's own processes. Probing both ports
 * instead would be wrong on the host network, where containers share ports:
 * an API container would find a worker container's port and call itself
 * healthy. A one-shot command (`migrate`, an admin command) serves nothing:
 * its exit code tells how it went, and it counts as healthy while it runs.
 *
 * Plain JavaScript with no dependency, like the other scripts here.
 */
import { readdirSync, readFileSync } from 'node:fs'

const TIMEOUT_MS = 2_500

/** The arguments after `dist/cli.js` of the service's process in this container, or undefined if none is found. */
function serviceArguments() {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let argv
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    } catch {
      continue // gone since the listing
    }
    const cli = argv.findIndex((arg) => arg.endsWith('dist/cli.js'))
    if (cli !== -1) return argv.slice(cli + 1).filter((arg) => arg !== '')
  }
  return undefined
}

/** The address to reach a server listening on HOST from inside its container. */
function localHost(host) {
  if (host === undefined || host === '0.0.0.0' || host === '::') return '127.0.0.1'
  return host.includes(':') ? `[${host}]` : host
}

const command = serviceArguments()?.[0]
if (command !== 'serve' && command !== 'worker') process.exit(0)
const port = command === 'serve' ? (process.env.PORT ?? '8080') : (process.env.METRICS_PORT ?? '9464')
const url = `http://${localHost(process.env.HOST)}:${port}/healthz`
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) })
  if (response.status !== 200) throw new Error(`status ${response.status}`)
} catch (error) {
  console.log(`${url}: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
