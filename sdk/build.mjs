/**
 * Builds the package for both module systems from the same sources:
 * dist/esm (import) and dist/cjs (require), each with its declarations and
 * the generated schema.d.ts they import. dist/cjs gets a package.json of
 * `"type": "commonjs"`, so that Node and TypeScript read its .js and .d.ts
 * as CommonJS inside this `"type": "module"` package. TypeScript is the
 * repository's (resolved from the nearest node_modules up the tree).
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
rmSync('dist', { recursive: true, force: true })
for (const [project, outDir] of [['tsconfig.json', 'dist/esm'], ['tsconfig.cjs.json', 'dist/cjs']]) {
  execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' })
  // tsc copies no .d.ts of the sources: the generated types are one.
  copyFileSync('src/schema.d.ts', `${outDir}/schema.d.ts`)
}
writeFileSync('dist/cjs/package.json', `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`)
