/** docs/callbacks.md's answer samples, for the provider tests to check the service's answers against. */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

/** The JSON samples of docs/callbacks.md, in the page's order: Vapi's, Retell's, ElevenLabs' answers. */
export const documentedAnswers = (): any[] =>
  [...readFileSync(new URL('../../docs/callbacks.md', import.meta.url), 'utf8').matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1]!))

/** Whether what the page shows is in the answer: each key it shows with the same value, its elided ids ("int_...") aside. */
export function assertShown(shown: unknown, actual: unknown, path = 'answer'): void {
  if (typeof shown === 'string' && shown.endsWith('_...')) return assert.equal(typeof actual, 'string', path)
  if (shown === null || typeof shown !== 'object') return assert.deepEqual(actual, shown, path)
  assert.ok(actual !== null && typeof actual === 'object', path)
  for (const [key, value] of Object.entries(shown)) assertShown(value, (actual as Record<string, unknown>)[key], `${path}.${key}`)
}
