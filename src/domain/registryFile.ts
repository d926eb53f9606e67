/**
 * The numbers of a do-not-call registry's file, one a line: in E.164 (a `+`
 * and the digits, separators and a bracketed trunk prefix allowed), or national numbers of the plan the
 * load names (`nanp`: the US registry's download, area code and number as
 * 10 digits, with or without a comma, a leading 1, or separators). A line
 * empty or starting with `#` is no number. Millions of lines are read, so a
 * line is checked for its shape only (digits and their count), not against
 * each country's numbering plan as a trigger's number is: a line of the
 * right shape that no one can dial is a digest no attempt ever looks up.
 */

/** The national plans a file of national numbers may be in: NANP (+1), 10 digits. */
export const NATIONAL_PLANS = ['nanp'] as const
export type NationalPlan = (typeof NATIONAL_PLANS)[number]

const SEPARATORS = /[\s,.\-()/]/g

export type RegistryLine = { kind: 'number'; e164: string } | { kind: 'none' } | { kind: 'refused' }

export function registryLine(line: string, plan: NationalPlan | undefined): RegistryLine {
  const text = line.trim()
  if (text === '' || text.startsWith('#')) return { kind: 'none' }
  const international = text.startsWith('+')
  // "+44 (0)20 ...": the trunk prefix written in brackets after the country code is not dialled from abroad.
  const digits = (international ? text.slice(1).replace('(0)', '') : text).replace(SEPARATORS, '')
  if (!/^\d+$/.test(digits)) return { kind: 'refused' }
  // E.164: a country code that does not start with 0, at most 15 digits, and at least 8 for any country.
  if (international) return digits.length >= 8 && digits.length <= 15 && digits[0] !== '0' ? { kind: 'number', e164: `+${digits}` } : { kind: 'refused' }
  if (plan === 'nanp') {
    const national = digits.length === 11 && digits[0] === '1' ? digits.slice(1) : digits
    // An area code and an exchange code start with 2-9.
    return /^[2-9]\d{2}[2-9]\d{6}$/.test(national) ? { kind: 'number', e164: `+1${national}` } : { kind: 'refused' }
  }
  return { kind: 'refused' }
}
