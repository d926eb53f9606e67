/**
 * Compiles src/ into dist/ (what `npm start` runs) and copies beside the
 * output the files src/ reads at run time (migrations, data tables).
 *
 * Plain JavaScript, since it runs before anything is compiled. `tsc -b` is
 * incremental: with nothing changed since the last build it ends in about
 * 0.2 s, so `npm start` builds every time and never runs stale code.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, readdirSync } from 'node:fs'
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

for (const entry of readdirSync(path.join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue
  const from = path.join(entry.parentPath, entry.name)
  const to = path.join(root, 'dist', path.relative(path.join(root, 'src'), from))
  cpSync(from, to)
}
