/**
 * Prometheus's text exposition format (0.0.4), read by its rules: `# HELP`
 * and `# TYPE` lines name each family, and each sample line is a metric name,
 * labels in braces (values quoted, with \\, \" and \n escaped), and a value.
 * A line that breaks the rules throws, naming it.
 */
import assert from 'node:assert/strict'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Family {
  type: string
  help: string
  samples: Sample[]
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy
/** Samples of a histogram or summary are named after their family with these suffixes. */
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created']

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  const family = (name: string) => {
    let found = families.get(name)
    if (found === undefined) families.set(name, (found = { type: 'untyped', help: '', samples: [] }))
    return found
  }
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (meta !== null) {
      if (meta[1] === 'HELP') family(meta[2]!).help = meta[3]!
      else family(meta[2]!).type = meta[3]!
      continue
    }
    assert.ok(!line.startsWith('#'), `a comment that is neither HELP nor TYPE: ${line}`)
    const sample = SAMPLE.exec(line)
    assert.ok(sample !== null, `not a sample line: ${line}`)
    const [, name, labelText = '', rawValue] = sample
    const labels: Record<string, string> = {}
    LABEL.lastIndex = 0
    let read = 0
    for (let match = LABEL.exec(labelText); match !== null; match = LABEL.exec(labelText)) {
      labels[match[1]!] = match[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
      read = LABEL.lastIndex
    }
    assert.equal(read, labelText.length, `labels not read whole: ${line}`)
    // Prometheus reads values as Go's ParseFloat does: NaN and Inf in any case (prom-client writes "Nan").
    const special: Record<string, number> = { nan: NaN, '+inf': Infinity, inf: Infinity, '-inf': -Infinity }
    const value = special[rawValue!.toLowerCase()] ?? Number(rawValue)
    assert.ok(!Number.isNaN(value) || rawValue!.toLowerCase() === 'nan', `not a value: ${line}`)
    const owner = families.has(name!) ? name! : SUFFIXES.map((suffix) => (name!.endsWith(suffix) ? name!.slice(0, -suffix.length) : '')).find((base) => families.has(base))
    assert.ok(owner !== undefined, `a sample of no family: ${line}`)
    family(owner).samples.push({ name: name!, labels, value })
  }
  return families
}

/** The value of the one sample of `name` whose labels include `labels`. */
export function sampleValue(families: Map<string, Family>, family: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const samples = families.get(family)?.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return samples === undefined || samples.length === 0 ? undefined : samples.reduce((sum, s) => sum + s.value, 0)
}
