/** One normalization of an external id's source and type, wherever they are compared. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { normalizeIdPart } from '../src/domain/externalIds.ts'

describe('normalizeIdPart', () => {
  // [written, kept, why]
  const cases: [string, string, string][] = [
    ['ATS', 'ats', 'lowercased'],
    ['  Greenhouse\t', 'greenhouse', 'ASCII spaces and tabs trimmed'],
    ['\n\r\v\fcrm\n', 'crm', 'line breaks and form feeds trimmed'],
    ['\u0085ats\u0085', 'ats', 'NEXT LINE (U+0085) is Unicode White_Space: trimmed, as pydantic trims it (String.prototype.trim keeps it)'],
    ['\u00a0ats\u3000', 'ats', 'no-break and ideographic spaces trimmed'],
    ['\u2028\u2029ats\u2003\u200a', 'ats', 'line and paragraph separators, em and hair spaces trimmed'],
    ['\u1680ats\u205f', 'ats', 'Ogham and mathematical spaces trimmed'],
    ['\ufeffats', '\ufeffats', 'BYTE ORDER MARK (U+FEFF) is not White_Space: kept (String.prototype.trim drops it)'],
    ['\u200bats', '\u200bats', 'ZERO WIDTH SPACE is not White_Space: kept'],
    ['Candidate ID', 'candidate id', 'inner spaces kept'],
    ['ÉTUDIANT', 'étudiant', 'lowercased beyond ASCII'],
  ]
  for (const [written, kept, why] of cases) {
    test(why, () => assert.equal(normalizeIdPart(written), kept))
  }
})
