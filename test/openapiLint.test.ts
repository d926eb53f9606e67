/**
 * Both OpenAPI documents pass the linters code generators' users run: Redocly
 * CLI with its `recommended` rules and Spectral with `spectral:oas`, without
 * an error (warnings are reported, not failed on).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, test } from 'node:test'
import { startService, type TestService } from './support/service.ts'

const run = promisify(execFile)
const BIN = new URL('../node_modules/.bin/', import.meta.url).pathname

const DOCUMENTS = { client: '/openapi.json', admin: '/admin/openapi.json' }

let service: TestService
let directory: string
/** Each linter's problems with each document, by `linter name`: run at once, in parallel, and awaited by the tests. */
const problems = new Map<string, Promise<Problem[]>>()

before(async () => {
  service = await startService()
  directory = await mkdtemp(join(tmpdir(), 'openapi-lint-'))
  for (const [name, url] of Object.entries(DOCUMENTS)) {
    const response = await service.app.inject({ method: 'GET', url })
    assert.equal(response.statusCode, 200)
    await writeFile(join(directory, `${name}.json`), response.body)
  }
  await writeFile(join(directory, '.spectral.yaml'), 'extends: ["spectral:oas"]\n')
  for (const [linter, lint] of Object.entries(LINTERS)) {
    for (const name of Object.keys(DOCUMENTS)) {
      const found = lint(name)
      // Awaited by its test; a rejection is its failure there, not an unhandled one here.
      found.catch(() => {})
      problems.set(`${linter} ${name}`, found)
    }
  }
})
after(async () => {
  await service.close()
  await rm(directory, { recursive: true, force: true })
})

/** A linter's output, whatever its exit status: both exit non-zero when they find an error. */
async function output(command: string, args: string[]): Promise<string> {
  // No telemetry or update check: the test runs offline and tells no one.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  try {
    return (await run(join(BIN, command), args, { cwd: directory, env, maxBuffer: 64 * 1024 * 1024 })).stdout
  } catch (error) {
    const stdout = (error as { stdout?: string }).stdout
    if (stdout === undefined || stdout === '') throw error
    return stdout
  }
}

interface Problem {
  rule: string
  severity: 'error' | 'warning'
  where: string
  message: string
}

async function redocly(name: string): Promise<Problem[]> {
  const report = JSON.parse(await output('redocly', ['lint', `${name}.json`, '--extends=recommended', '--format=json']))
  return report.problems.map((problem: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }) => ({
    rule: problem.ruleId,
    severity: problem.severity,
    where: problem.location[0]?.pointer ?? '',
    message: problem.message,
  }))
}

async function spectral(name: string): Promise<Problem[]> {
  const results = JSON.parse(await output('spectral', ['lint', `${name}.json`, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet']))
  // Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
  return results.map((result: { code: string; severity: number; path: string[]; message: string }) => ({
    rule: result.code,
    severity: result.severity === 0 ? 'error' : 'warning',
    where: result.path.join('.'),
    message: result.message,
  }))
}

const LINTERS = { 'Redocly CLI (recommended)': redocly, 'Spectral (spectral:oas)': spectral }

for (const linter of Object.keys(LINTERS)) {
  for (const name of Object.keys(DOCUMENTS)) {
    test(`${linter} finds no error in the ${name} document`, async (t) => {
      const found = await problems.get(`${linter} ${name}`)!
      const errors = found.filter((problem) => problem.severity === 'error')
      t.diagnostic(`${errors.length} errors, ${found.length - errors.length} warnings`)
      for (const problem of found) t.diagnostic(`${problem.severity} ${problem.rule} at ${problem.where}: ${problem.message}`)
      assert.deepEqual(errors, [])
    })
  }
}
