/**
 * How an event's JSON is stored (events.body): deflated with a preset
 * dictionary of what every event says, behind a byte that names the format.
 *
 * Events are the largest of the pipeline's tables, and PostgreSQL compresses
 * no value of a row under about 2 kB (TOAST_TUPLE_THRESHOLD; a lower
 * toast_tuple_target changes nothing below it), while an event is 550 to 700
 * bytes of JSON whose keys, types, instants and id prefixes repeat from one
 * event to the next. Measured on events made from the benchmark's triggers
 * (bench/bodies.ts): 580 bytes of JSON (678 as jsonb) deflate to 197 with the
 * dictionary (334 without), and the events table went from 2,151 to 1,301
 * bytes per completed trigger (BENCHMARKS.md, "Bytes per completed
 * trigger"), for 30-40 µs of deflate per event written and about 12 µs of
 * inflate per event read (a delivery that is not handed off, an event
 * listed) on this project's 2 shared cores; PostgreSQL no longer parses each
 * event's JSON into jsonb. Nearly all of that time is the making of a zlib
 * stream, whatever the level. zlib is Node's own; fflate, in JavaScript, took
 * twice as long; zstd's dictionaries are not in every Node the service runs on
 * (engines: >= 22).
 *
 * The dictionary is part of the stored format: never change it in place. A
 * new one gets a new format byte, and the old stays readable until retention
 * has deleted the last event written with it.
 */
import zlib from 'node:zlib'

/** The body's first byte. */
const FORMAT = {
  /** The event's JSON as UTF-8 (events written before bodies were deflated: migration 035). */
  json: 0,
  /** deflate-raw with DICTIONARY_1. */
  deflated1: 1,
} as const

/**
 * What events say, as they say it (domain/events.ts), most common last:
 * deflate finds a match nearer the end of its window in fewer bits.
 */
const DICTIONARY_1 = Buffer.from(
  [
    '{"id":"evt_01","type":"webhook.test","timestamp":"2026-01-01T00:00:00.000Z","data":{"endpoint_id":"whe_01"',
    '"direction":"inbound","outcome":"replied","outcome":"opted_out","outcome":"cancelled","outcome":"expired","outcome":"unreachable"',
    '"outcome":"no_answer","outcome":"busy","outcome":"voicemail","outcome":"failed","channel":"whatsapp"',
    '"result":{"disposition":null,"summary":null,"data":null,"transcript":[{"role":"agent","text":"","at":"2026-01-01T00:00:00.000Z"},{"role":"contact","text":""}],"transcript_url":null,"recording_url":null,"callback_at":null,"opt_out":false,"received_at":"2026-01-01T00:00:00.000Z"}',
    '{"id":"evt_01","type":"interaction.result_added","timestamp":"2026-01-01T00:00:00.000Z","data":{"interaction_id":"int_01","task_id":"tsk_01","trigger_id":"trg_01","campaign":"","channel":"voice","direction":"outbound","attempt":1,"outcome":"reached","test_mode":false,"ids":[{"source":"","type":"","value":""}],"result":',
    '{"id":"evt_01","type":"task.completed","timestamp":"2026-01-01T00:00:00.000Z","data":{"task_id":"tsk_01","trigger_id":"trg_01","campaign":"","channel":"voice","status":"completed","outcome":"reached","attempts":1,"test_mode":false,"ids":[{"source":"","type":"","value":""}],"completed_at":"2026-01-01T00:00:00.000Z","result":null}}',
    '{"id":"evt_01","type":"interaction.finalized","timestamp":"2026-01-01T00:00:00.000Z","data":{"interaction_id":"int_01","task_id":"tsk_01","trigger_id":"trg_01","campaign":"","channel":"voice","direction":"outbound","attempt":1,"outcome":"reached","test_mode":false,"ids":[{"source":"","type":"","value":""}],"started_at":"2026-01-01T00:00:00.000Z","ended_at":"2026-01-01T00:00:00.000Z","duration_s":0,"result":null}}',
  ].join(''),
)

/** The level hardly matters at this size (197 bytes at level 1, 196 at 6): the fastest. */
const DEFLATE_OPTIONS: zlib.ZlibOptions = { level: 1, dictionary: DICTIONARY_1 }

/** An event's JSON as stored. */
export function encodeEventBody(json: string): Buffer {
  const deflated = zlib.deflateRawSync(json, DEFLATE_OPTIONS)
  const body = Buffer.allocUnsafe(deflated.length + 1)
  body[0] = FORMAT.deflated1
  deflated.copy(body, 1)
  return body
}

/** An event's JSON, from its stored body (a Buffer from node-postgres, a Uint8Array from PGlite). */
export function decodeEventBody(stored: Uint8Array): string {
  const body = Buffer.isBuffer(stored) ? stored : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength)
  const rest = body.subarray(1)
  switch (body[0]) {
    case FORMAT.deflated1:
      return zlib.inflateRawSync(rest, { dictionary: DICTIONARY_1 }).toString('utf8')
    case FORMAT.json:
      return rest.toString('utf8')
    default:
      throw new Error(`an event body of unknown format ${body[0]}`)
  }
}
