/**
 * `npm test` on a machine without the tools outside npm (promtool,
 * Chromium): a test needing one skips with a line naming what to install,
 * and the run passes; under CI=true the same test fails, so that CI proves
 * it. Shown on test/prometheusRules.test.ts run as a child process whose
 * PATH holds node alone (no promtool, wherever the machine has one).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'

const ROOT = path.resolve(import.meta.dirname, '..')
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs')
const onlyNode = mkdtempSync(path.join(tmpdir(), 'only-node-'))
symlinkSync(process.execPath, path.join(onlyNode, 'node'))
after(() => rmSync(onlyNode, { recursive: true, force: true }))

/** The promtool tests as `npm test` runs them, with nothing on the PATH but node; their exit code and output. */
function promtoolTestsWithoutPromtool(ci: boolean): Promise<{ code: number; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: onlyNode }
  delete env.CI
  if (ci) env.CI = 'true'
  // The child's own tests are run by the child: the parent's test-runner context is not passed down.
  delete env.NODE_TEST_CONTEXT
  return new Promise((resolve) => {
    execFile(process.execPath, [TSX, '--test', '--test-reporter=spec', 'test/prometheusRules.test.ts'], { cwd: ROOT, env, timeout: 240_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: stdout + stderr })
    })
  })
}

// The two runs at once: each is mostly a service starting up and waiting on its database.
let asDeveloper: Promise<{ code: number; output: string }>
let underCi: Promise<{ code: number; output: string }>
before(() => {
  asDeveloper = promtoolTestsWithoutPromtool(false)
  underCi = promtoolTestsWithoutPromtool(true)
})

test('without promtool, its tests are skipped with a line naming what to install, and the run passes', async () => {
  const run = await asDeveloper
  assert.equal(run.code, 0, run.output)
  assert.match(run.output, /# promtool is missing \(apt-get install prometheus\): skipped/)
  assert.match(run.output, /^ℹ fail 0$/m)
  assert.match(run.output, /^ℹ skipped [1-9]\d*$/m)
})

test('without promtool under CI=true, its tests fail', async () => {
  const run = await underCi
  assert.notEqual(run.code, 0, run.output)
  assert.match(run.output, /^ℹ fail [1-9]\d*$/m)
  assert.match(run.output, /promtool is missing: install Debian's prometheus package/)
})
