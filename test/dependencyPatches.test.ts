/**
 * What patches/ changes in a dependency, and that it changes nothing else.
 *
 * fast-json-stringify checked every shared schema (Fastify's addSchema)
 * again in each serializer it built, one per route and status: an app's
 * ready took 1,150 ms here, 650 of them in those checks, and 550 ms with each
 * shared schema checked once (its depth, its validity, and whether it holds
 * a $ref, remembered by object and depth limit).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import build, { type Schema } from 'fast-json-stringify'

/** Schemas as Fastify hands them over, checked by the library itself (one below is invalid on purpose). */
const shared = (schemas: Record<string, object>) => schemas as Record<string, Schema>

test('fast-json-stringify: an invalid shared schema is refused by every build, not only the first', () => {
  const invalid = shared({ invalid: { $id: 'invalid', type: 'object', properties: { name: { type: 'no-such-type' } } } })
  for (let round = 0; round < 2; round++) {
    assert.throws(() => build({ $ref: 'invalid#' }, { schema: invalid }), /schema is invalid/, `build ${round + 1}`)
  }
})

test('fast-json-stringify: a shared schema with a $ref serializes alike in every build', () => {
  const schemas = shared({
    node: {
      $id: 'node',
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: 'node#' } } },
    },
  })
  const tree = { name: 'a', children: [{ name: 'b', children: [{ name: 'c', children: [] }] }], dropped: true }
  const first = build({ $ref: 'node#' }, { schema: schemas })
  const second = build({ type: 'object', properties: { root: { $ref: 'node#' } } }, { schema: schemas })
  assert.equal(first(tree), '{"name":"a","children":[{"name":"b","children":[{"name":"c","children":[]}]}]}')
  assert.equal(second({ root: tree }), `{"root":${first(tree)}}`)
})

test('fast-json-stringify: a shared schema too deep is refused by every build, whatever the depth allowed before', () => {
  const deep = shared({ deep: { $id: 'deep', type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'string' } } } } } })
  assert.doesNotThrow(() => build({ $ref: 'deep#' }, { schema: deep }))
  for (let round = 0; round < 2; round++) assert.throws(() => build({ $ref: 'deep#' }, { schema: deep, maxDepth: 1 }), /depth/i)
})
