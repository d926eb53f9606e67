/**
 * Compiles src/ into dist/ (what `npm start` runs) and copies beside the
 * output the files src/ reads at run time (migrations, data tables).
 *
 * Plain JavaScript, since it runs before anything is compiled. `tsc -b` is
 * incremental: with nothing changed since the last build it ends in about
 * 0.2 s, so `npm start` builds every time and never runs stale code.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
try {
  execFileSync(process.execPath, [tsc, '--build', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
} catch {
  // tsc has printed the errors.
  process.exit(1)
}

const src = path.join(root, 'src')
/** Written last: its time is when dist/ last matched src/ whole (tsc rewrites .tsbuildinfo only when a .ts file changed). */
const BUILT = '.built'
const dist = path.join(root, 'dist')
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue
  const from = path.join(entry.parentPath, entry.name)
  cpSync(from, path.join(dist, path.relative(src, from)))
}

// What no longer has a source goes: neither tsc nor the copy above removes an output, and a migration
// left behind in dist/ once its file was removed from src/ stopped every start ("two migrations have
// version N").
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name === '.tsbuildinfo' || entry.name === BUILT) continue
  const output = path.join(entry.parentPath, entry.name)
  const relative = path.relative(dist, output)
  const compiledFrom = relative.replace(/\.js(\.map)?$/, '.ts')
  if (!existsSync(path.join(src, relative)) && !existsSync(path.join(src, compiledFrom))) rmSync(output)
}

writeFileSync(path.join(dist, BUILT), `${new Date().toISOString()}\n`)
