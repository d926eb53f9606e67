/**
 * The TypeScript SDK (sdk/): its types are generated from the service's
 * OpenAPI document and must match it.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { OpenAPI3 } from 'openapi-typescript'
import { staleSdkTypes } from '../scripts/sdkTypes.ts'
import { startService, type TestService } from './support/service.ts'

let service: TestService

before(async () => {
  service = await startService()
  await service.app.ready()
})
after(() => service.close())

test('the SDK types are generated from the OpenAPI document as it is now (npm run sdk:types writes them)', async () => {
  assert.deepEqual(await staleSdkTypes(service.app.swagger() as OpenAPI3), [])
})
