/**
 * A campaign's provider_config, as every adapter declares it: a TypeBox
 * schema (Channel.configSchema) checked by the API's one validator
 * (validation/model.ts), so that a config gets the same 422 entries per field
 * as any request body (one that is not an object is `model_attributes_type`,
 * as any model), and the campaign keeps the normalized value ("600" sent for
 * an integer is kept as 600). A stored config is read through the same
 * schema, so that one kept before it was normalized reads the same.
 */
import type { Static, TObject } from '@sinclair/typebox'
import type { ErrorDetail } from '../domain/errors.ts'
import type { JsonObject } from '../domain/types.ts'
import { validate, type ValidationResult } from '../validation/model.ts'

/** 422 entries for a provider_config, `loc` starting at `prefix`, and its normalized value when valid. */
export function checkProviderConfig(schema: TObject, config: unknown, prefix: ErrorDetail['loc']): ValidationResult<JsonObject> {
  return validate<JsonObject>(schema, config, prefix)
}

/**
 * A reader of stored configs: each read through `schema` and made into the
 * adapter's own settings by `read` (its defaults filled in). Kept per config
 * object, since one request or attempt reads it several times (a start, its
 * settle time; a callback's secret, then its report). A stored config its
 * schema refuses is a fault (every config was checked before it was kept):
 * it throws StoredConfigRefused.
 */
export function storedConfigReader<S extends TObject, T>(schema: S, read: (value: Static<S>) => T): (config: JsonObject) => T {
  const kept = new WeakMap<JsonObject, T>()
  return (config) => {
    let settings = kept.get(config)
    if (settings === undefined) {
      const { value, errors } = validate<Static<S>>(schema, config, [])
      if (value === undefined) throw new StoredConfigRefused(errors.map((error) => `${error.loc.join('.')}: ${error.msg}`).join('; '))
      settings = read(value)
      kept.set(config, settings)
    }
    return settings
  }
}

/** A stored provider_config that its provider's schema refuses: one kept before a rule of the schema was (a Retell agent_version past 2^53, a language tag of over 100 characters). */
export class StoredConfigRefused extends Error {
  constructor(problems: string) {
    super(`a stored provider_config that its schema refuses: ${problems}`)
  }
}

