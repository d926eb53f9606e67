/**
 * A PostgreSQL server of the benchmark's own, as a production server is set:
 * autovacuum on (the machine's shared server runs without it) and
 * shared_buffers a quarter of the machine's memory (PostgreSQL's advice for a
 * server of its own; the installation's 128 MB left a year of history's
 * indexes to a page cache this machine reclaims as it cools, and a person's
 * lookup then waited on the disk), its other settings the installation's
 * defaults. The growth section measures on it
 * what depends on vacuum: the bytes a trigger keeps, and whether tables level
 * off under steady load while history is deleted.
 *
 * Made with the installation's initdb and pg_ctl, run as the `postgres`
 * user (initdb refuses root), in a directory under the benchmark's work
 * directory, on a port nothing listens on, over TCP on 127.0.0.1 only; stopped
 * and removed at the end.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { totalmem } from 'node:os'
import path from 'node:path'
import { freePort, withClient } from './harness.ts'

/** The installation's server binaries: the newest version under /usr/lib/postgresql. */
function binaries(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  const bin = versions.map((version) => path.join(root, version, 'bin')).find((dir) => existsSync(path.join(dir, 'initdb')))
  if (bin === undefined) throw new Error(`no initdb under ${root}: the growth section needs PostgreSQL's server package`)
  return bin
}

export interface PrivatePostgres {
  /** How the server is set, for a report: what differs from the installation's defaults. */
  description: string
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  adminUrl: string
  /** The URL of a database of this server. */
  urlOf(database: string): string
  createDatabase(name: string): Promise<string>
  stop(): void
}

/** Runs a command as the postgres user when this process is root (as the benchmark usually is), else as this user. */
function asPostgres(command: string, args: readonly string[]): void {
  const asRoot = process.getuid?.() === 0
  execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : [...args], { stdio: ['ignore', 'ignore', 'pipe'] })
}

export async function startPrivatePostgres(workDir: string, settings: Record<string, string> = {}): Promise<PrivatePostgres> {
  const bin = binaries()
  const dir = path.join(workDir, 'postgres')
  mkdirSync(dir, { recursive: true })
  // The work directory is root's; the server's files must be the postgres user's.
  chmodSync(workDir, 0o755)
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir])
  const data = path.join(dir, 'data')
  asPostgres(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const port = await freePort()
  const sharedBuffersMb = Math.floor(totalmem() / 4 / 2 ** 20)
  const set = { autovacuum: 'on', shared_buffers: `${sharedBuffersMb}MB`, ...settings }
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', ...Object.entries(set).map(([name, value]) => `-c ${name}=${value}`)].join(' ')
  asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', 'start'])
  const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  return {
    description: `${Object.entries(set)
      .map(([name, value]) => `\`${name}\` ${value}`)
      .join(', ')}, the installation's defaults otherwise`,
    adminUrl: urlOf('postgres'),
    urlOf,
    async createDatabase(name) {
      await withClient(urlOf('postgres'), (client) => client.query(`CREATE DATABASE ${name}`))
      return urlOf(name)
    },
    stop() {
      asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop'])
    },
  }
}
