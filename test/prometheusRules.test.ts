/**
 * The Prometheus files in deploy/prometheus: the scrape configuration and the
 * alerts are valid to promtool, the alerts pass their unit tests
 * (alerts.test.yml), and every metric an alert reads is one the service
 * serves, read from a real scrape, so that renaming a metric cannot silently
 * leave an alert reading nothing. The scrape passes promtool's lint too.
 *
 * promtool comes with Debian's `prometheus` package, which .ci/run installs
 * when it is missing; without it the tests that run it are skipped, saying
 * so, and fail under CI=true rather than pass unchecked.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { parser as promqlParser } from '@prometheus-io/lezer-promql'
import { parse as parseYaml } from 'yaml'
import { skipUnlessInstalled } from './support/cli.ts'
import { type Family, parsePrometheusText } from './support/prometheus.ts'
import { acceptedTrigger, bearer, METRICS_TOKEN, seedOrganization, startService, type TestService } from './support/service.ts'

const NEEDS_PROMTOOL = { skip: skipUnlessInstalled('promtool', 'apt-get install prometheus') }
const PROMETHEUS_DIR = path.resolve(import.meta.dirname, '..', 'deploy', 'prometheus')
/** Series Prometheus makes itself for each target, not read from a scrape. */
const SERIES_OF_PROMETHEUS = new Set(['up'])

const run = promisify(execFile)

async function promtool(args: string[], cwd = PROMETHEUS_DIR, input?: string): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const child = run('promtool', args, { cwd })
    if (input !== undefined) child.child.stdin!.end(input)
    const { stdout, stderr } = await child
    return { stdout, stderr, code: 0 }
  } catch (error) {
    const failed = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string; code?: number | string }
    if (failed.code === 'ENOENT') {
      assert.fail("promtool is missing: install Debian's prometheus package (apt-get install prometheus), as .ci/run does when it is absent")
    }
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: typeof failed.code === 'number' ? failed.code : 1 }
  }
}

function assertPasses(result: { stdout: string; stderr: string; code: number }, what: string) {
  assert.equal(result.code, 0, `${what} failed:\n${result.stdout}${result.stderr}`)
}

test('the scrape configuration is valid, its metrics token read from the file beside it', NEEDS_PROMTOOL, async () => {
  // As deployed: the directory as the repository has it, with the token file the operator writes into it.
  const deployed = await mkdtemp(path.join(tmpdir(), 'prometheus-'))
  try {
    await cp(PROMETHEUS_DIR, deployed, { recursive: true })
    await writeFile(path.join(deployed, 'metrics-token'), METRICS_TOKEN, { mode: 0o600 })
    assertPasses(await promtool(['check', 'config', 'prometheus.yml'], deployed), 'promtool check config')
    const config = parseYaml(await readFile(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8'))
    for (const job of config.scrape_configs) {
      assert.deepEqual(job.authorization, { type: 'Bearer', credentials_file: 'metrics-token' }, job.job_name)
    }
  } finally {
    await rm(deployed, { recursive: true, force: true })
  }
})

test('the alerts are valid, and pass their unit tests', NEEDS_PROMTOOL, async () => {
  assertPasses(await promtool(['check', 'rules', 'alerts.yml']), 'promtool check rules')
  assertPasses(await promtool(['test', 'rules', 'alerts.test.yml']), 'promtool test rules')
})

interface AlertRule {
  alert: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

async function alertRules(): Promise<AlertRule[]> {
  const document = parseYaml(await readFile(path.join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8'))
  return document.groups.flatMap((group: { rules: AlertRule[] }) => group.rules)
}

test('every alert says how long, how bad and what to look at; each is tested firing', async () => {
  const rules = await alertRules()
  const tests = await readFile(path.join(PROMETHEUS_DIR, 'alerts.test.yml'), 'utf8')
  for (const rule of rules) {
    assert.match(rule.for ?? '', /^\d+[smh]$/, `${rule.alert}: for`)
    assert.ok(['critical', 'warning', 'info'].includes(rule.labels?.severity ?? ''), `${rule.alert}: severity`)
    assert.ok((rule.annotations?.summary ?? '') !== '' && (rule.annotations?.description ?? '').length > 100, `${rule.alert}: summary and description`)
    assert.match(tests, new RegExp(`alertname: ${rule.alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels:`), `${rule.alert} is tested firing`)
  }
})

/** The metric names an expression selects, from PromQL's own grammar (the one Prometheus's web UI parses with). */
function metricNamesOf(expr: string): string[] {
  const names: string[] = []
  const tree = promqlParser.parse(expr)
  tree.iterate({
    enter(node) {
      assert.notEqual(node.type.isError, true, `a PromQL syntax error at ${node.from} in ${expr}`)
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.push(expr.slice(node.from, node.to))
    },
  })
  return names
}

/** Whether a scrape's families hold a series of this name: a family's own, or a histogram's or summary's _bucket, _sum or _count. */
function served(families: Map<string, Family>, name: string): boolean {
  if (families.has(name)) return true
  const suffixes: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] }
  return [...families].some(([family, { type }]) => (suffixes[type] ?? []).some((suffix) => name === `${family}${suffix}`))
}

let service: TestService
let scraped: string

before(async () => {
  // The names this release serves without the deprecated copies: an alert must never read an old name.
  service = await startService({ metricsToken: METRICS_TOKEN, metricsLegacyNames: false })
  const org = await seedOrganization(service.app)
  await acceptedTrigger(service.app, org.key, { campaign: 'screening', ids: [{ source: 'ats', type: 'candidate', value: 'rules' }], contact: { phone: '+442079460958' } })
  await service.app.workers!.dispatcher.runOnce()
  const response = await service.app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) })
  assert.equal(response.statusCode, 200, response.body)
  scraped = response.body
})
after(() => service.close())

test('every metric the alerts read is served by the service', async () => {
  const families = parsePrometheusText(scraped)
  const read = new Set((await alertRules()).flatMap((rule) => metricNamesOf(rule.expr)))
  assert.ok(read.size >= 6, `the alerts read ${[...read].join(', ')}`)
  assert.deepEqual(
    [...read].filter((name) => !SERIES_OF_PROMETHEUS.has(name) && !served(families, name)),
    [],
    'metrics the alerts read that the service does not serve',
  )
})

test('the reading of names catches a name the service does not serve', () => {
  const families = parsePrometheusText(scraped)
  const names = metricNamesOf('sum(rate(conversation_trigger_task_dispatch_lag_seconds_bucket[5m])) / on() max(task_dispatch_lag_seconds_count offset 1h)')
  assert.deepEqual(names, ['conversation_trigger_task_dispatch_lag_seconds_bucket', 'task_dispatch_lag_seconds_count'])
  assert.deepEqual(names.map((name) => served(families, name)), [true, false])
})

test("the scrape passes promtool's lint, but for prom-client's own nodejs_ gauges named _total", NEEDS_PROMTOOL, async () => {
  const lint = await promtool(['check', 'metrics'], PROMETHEUS_DIR, scraped)
  const problems = `${lint.stdout}${lint.stderr}`.split('\n').filter((line) => line !== '')
  // prom-client names three gauges nodejs_active_*_total; kept as they are, since dashboards read them so.
  assert.deepEqual(
    problems.filter((line) => !/^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/.test(line)),
    [],
  )
})
