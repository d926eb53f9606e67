/**
 * Trigger bodies for the benchmark: a few thousand valid, varied requests,
 * generated up front so that producing them costs the load generator nothing.
 *
 * Variety matters because the service's cost depends on its input: phone
 * parsing differs by country and by how the number is written, the stored
 * JSON grows with the ids and context. A run that posted one body over and
 * over would measure a best case no client produces.
 *
 * Generation is seeded, so every run posts the same bodies.
 */
import { type CountryCode, getExampleNumber, parsePhoneNumberWithError, type PhoneNumber } from 'libphonenumber-js/max'
import examples from 'libphonenumber-js/mobile/examples'

/**
 * The campaigns the bodies name; the benchmark creates them before posting.
 * Each has the default schedule (every day 09:00–20:00 in the contact's
 * zones) and no fallback zone, as the quick start makes one: mobiles of
 * countries with several zones (Spain, Australia, Russia, Brazil, Mexico) are
 * called only at hours open in every zone of their country.
 */
export const CAMPAIGNS = [
  { routing_key: 'screening', channel: 'voice', context: { company: 'Acme' } },
  { routing_key: 'interview-reminder', channel: 'whatsapp', context: { company: 'Acme', template: 'reminder_v2' } },
]

interface Locale {
  country: CountryCode
  languages: string[]
  firstNames: string[]
  lastNames: string[]
}

/** Where the contacts live, with names and language tags as clients send them (some lowercased). */
const LOCALES: Locale[] = [
  { country: 'GB', languages: ['en-GB', 'en'], firstNames: ['Ada', 'Oliver', 'Siobhan'], lastNames: ['Lovelace', "O'Brien", 'Smith'] },
  { country: 'DE', languages: ['de-DE', 'de'], firstNames: ['Jürgen', 'Lena', 'Maximilian'], lastNames: ['Müller', 'Weiß', 'Schmidt'] },
  { country: 'FR', languages: ['fr-FR', 'fr'], firstNames: ['Élodie', 'Louis', 'Camille'], lastNames: ['Lefèvre', 'Dubois', 'Martin'] },
  { country: 'IT', languages: ['it-IT', 'it'], firstNames: ['Giulia', 'Lorenzo', 'Niccolò'], lastNames: ['Rossi', 'Esposito', 'De Luca'] },
  { country: 'ES', languages: ['es-ES', 'ca-ES'], firstNames: ['José', 'Lucía', 'Jordi'], lastNames: ['García', 'Martínez', 'Puig'] },
  { country: 'NL', languages: ['nl-NL', 'nl'], firstNames: ['Daan', 'Sanne', 'Bram'], lastNames: ['de Vries', 'Jansen', 'van Dijk'] },
  { country: 'US', languages: ['en-US', 'es-US'], firstNames: ['Emily', 'Marcus', 'Sofia'], lastNames: ['Johnson', 'Williams', 'Nguyen'] },
  { country: 'CA', languages: ['en-CA', 'fr-ca'], firstNames: ['Liam', 'Chloé', 'Aiden'], lastNames: ['Tremblay', 'Roy', 'MacDonald'] },
  { country: 'BR', languages: ['pt-BR', 'pt-br'], firstNames: ['João', 'Ana', 'Thiago'], lastNames: ['Silva', 'Gonçalves', 'Souza'] },
  { country: 'IN', languages: ['en-IN', 'hi-IN'], firstNames: ['Aarav', 'Priya', 'Vikram'], lastNames: ['Sharma', 'Patel', 'Iyer'] },
  { country: 'AU', languages: ['en-AU'], firstNames: ['Charlotte', 'Jack', 'Mia'], lastNames: ['Taylor', 'Brown', 'Wilson'] },
  { country: 'JP', languages: ['ja-JP', 'ja'], firstNames: ['陽翔', 'さくら', 'Haruto'], lastNames: ['佐藤', '鈴木', 'Takahashi'] },
  { country: 'MX', languages: ['es-MX', 'es-419'], firstNames: ['Sofía', 'Diego', 'Ximena'], lastNames: ['Hernández', 'López', 'Ramírez'] },
  { country: 'ZA', languages: ['en-ZA', 'af-ZA', 'zu'], firstNames: ['Thabo', 'Anika', 'Lerato'], lastNames: ['Nkosi', 'van der Merwe', 'Dlamini'] },
  { country: 'PL', languages: ['pl-PL', 'pl'], firstNames: ['Łukasz', 'Zofia', 'Wojciech'], lastNames: ['Kowalski', 'Wiśniewska', 'Wójcik'] },
  { country: 'SE', languages: ['sv-SE', 'sv'], firstNames: ['Björn', 'Astrid', 'Elsa'], lastNames: ['Andersson', 'Lindqvist', 'Öberg'] },
  { country: 'RU', languages: ['ru-RU', 'ru'], firstNames: ['Ольга', 'Дмитрий', 'Anastasia'], lastNames: ['Иванова', 'Смирнов', 'Kuznetsova'] },
]

/** The clients' own id kinds, in the mixed case clients use (the service lowercases source and type). */
const ID_KINDS: { source: string; type: string; value: (random: Random) => string }[] = [
  { source: 'ATS', type: 'Candidate_ID', value: (r) => `C-${r.int(10_000, 99_999)}` },
  { source: 'crm', type: 'lead', value: (r) => `L-${r.int(1, 999_999)}` },
  { source: 'Workday', type: 'Worker-ID', value: (r) => `WD${r.int(100_000, 999_999)}` },
  { source: 'Greenhouse', type: 'application_id', value: (r) => String(r.int(10_000_000, 99_999_999)) },
  { source: 'HRIS', type: 'Employee_Number', value: (r) => `E${r.int(1000, 9999)}-${r.pick(['A', 'B', 'X'])}` },
]

const CONTEXT_VALUES: Record<string, (random: Random) => unknown> = {
  job_title: (r) => r.pick(['Analyst', 'Warehouse Associate', 'Registered Nurse', 'Software Engineer', 'Customer Service Representative']),
  shift: (r) => r.pick(['day', 'night', 'weekend']),
  location: (r) => r.pick(['London', 'München', 'São Paulo', 'Toronto', 'Bengaluru', 'Kraków']),
  requisition: (r) => `REQ-${r.int(1000, 9999)}`,
  start_date: (r) => `2025-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')}`,
  priority: (r) => r.int(1, 5),
  remote: (r) => r.int(0, 1) === 1,
  hourly_rate: (r) => r.int(1500, 4500) / 100,
}

const EMAIL_DOMAINS = ['example.com', 'example.org', 'mail.example.net']

/** Distinct numbers generated per country, each then written in any of its valid formats. */
const NUMBERS_PER_COUNTRY = 40

export interface BodySet {
  /** Each body as the JSON text to post. */
  bodies: string[]
  countries: number
  distinctNumbers: number
  /** How many bodies write their phone number in each format. */
  phoneFormats: Record<string, number>
}

export function generateBodies(count: number, seed = 20_250_101): BodySet {
  const random = new Random(seed)
  const numbers = new Map(LOCALES.map((locale) => [locale.country, phoneNumbers(locale.country, random)]))
  const phoneFormats: Record<string, number> = {}
  const bodies: string[] = []
  const takenIds = new Set<string>()
  for (let i = 0; i < count; i++) {
    const locale = random.pick(LOCALES)
    const { format, text } = random.pick(writtenForms(random.pick(numbers.get(locale.country)!)))
    phoneFormats[format] = (phoneFormats[format] ?? 0) + 1
    bodies.push(JSON.stringify(triggerBody(random, locale, text, takenIds)))
  }
  const distinctNumbers = [...numbers.values()].reduce((sum, list) => sum + list.length, 0)
  return { bodies, countries: LOCALES.length, distinctNumbers, phoneFormats }
}

/**
 * One person's trigger. Each body is another person, so its ids are its own
 * (`taken` holds those of the bodies before it): ids shared by two people
 * would make the service refuse the trigger, as their ids name two contacts.
 */
function triggerBody(random: Random, locale: Locale, phone: string, taken: Set<string>) {
  const campaign = random.pick(CAMPAIGNS)
  const firstName = random.pick(locale.firstNames)
  const lastName = random.pick(locale.lastNames)
  return {
    campaign: campaign.routing_key,
    // Most clients leave the channel out; some name it although the routing key has one.
    ...(random.chance(0.3) ? { channel: campaign.channel } : {}),
    ids: random.sample(ID_KINDS, random.int(2, 3)).map((kind) => ({ source: kind.source, type: kind.type, value: unusedValue(random, kind, taken) })),
    contact: {
      first_name: firstName,
      last_name: lastName,
      phone,
      ...(random.chance(0.7) ? { email: emailFor(random, firstName, lastName) } : {}),
      ...(random.chance(0.85) ? { language: random.pick(locale.languages) } : {}),
    },
    context: Object.fromEntries(
      random.sample(Object.entries(CONTEXT_VALUES), random.int(2, 4)).map(([key, value]) => [key, value(random)]),
    ),
  }
}

function unusedValue(random: Random, kind: (typeof ID_KINDS)[number], taken: Set<string>): string {
  for (;;) {
    const value = kind.value(random)
    const key = `${kind.source}/${kind.type}/${value}`
    if (taken.has(key)) continue
    taken.add(key)
    return value
  }
}

function emailFor(random: Random, firstName: string, lastName: string): string {
  const ascii = (name: string) => name.normalize('NFD').toLowerCase().replace(/[^a-z]/g, '')
  const local = [ascii(firstName), ascii(lastName)].filter(Boolean).join('.') || 'candidate'
  return `${local}${random.int(1, 99)}@${random.pick(EMAIL_DOMAINS)}`
}

/**
 * Valid mobile numbers of one country: the library's example number with its
 * last four digits changed, keeping only those the library holds valid.
 */
function phoneNumbers(country: CountryCode, random: Random): PhoneNumber[] {
  const example = getExampleNumber(country, examples)
  if (example === undefined) throw new Error(`libphonenumber-js has no example mobile number for ${country}`)
  const head = `+${example.countryCallingCode}${example.nationalNumber.slice(0, -4)}`
  const found = new Map<string, PhoneNumber>()
  for (let attempt = 0; attempt < NUMBERS_PER_COUNTRY * 20 && found.size < NUMBERS_PER_COUNTRY; attempt++) {
    const parsed = parsePhoneNumberWithError(`${head}${String(random.int(0, 9999)).padStart(4, '0')}`)
    if (parsed.isValid()) found.set(parsed.number, parsed)
  }
  if (found.size === 0) throw new Error(`no valid variation of ${country}'s example number ${example.number}`)
  return [...found.values()]
}

/**
 * The ways people write one number, kept only where the written form parses
 * back to the same valid number: a trunk `(0)` is right for +44 or +49 but
 * changes an Italian or Spanish number, and the national form of a
 * North American number is the bracketed area code.
 */
function writtenForms(phone: PhoneNumber): { format: string; text: string }[] {
  const code = `+${phone.countryCallingCode}`
  const international = phone.formatInternational()
  const grouped = international.slice(code.length).trim()
  const candidates = [
    { format: 'E.164', text: phone.number },
    { format: 'spaced', text: international },
    { format: 'dashed', text: `${code}-${grouped.replaceAll(' ', '-')}` },
    { format: 'dotted', text: `${code}.${grouped.replaceAll(' ', '.')}` },
    { format: 'national after code', text: `${code} ${phone.formatNational()}` },
    { format: 'trunk (0)', text: `${code} (0)${grouped}` },
  ]
  return candidates.filter(({ text }) => writesSameNumber(text, phone.number))
}

function writesSameNumber(text: string, e164: string): boolean {
  try {
    const parsed = parsePhoneNumberWithError(text)
    return parsed.isValid() && parsed.number === e164
  } catch {
    return false
  }
}

/** A small seeded generator (mulberry32): the same seed gives the same bodies on every run. */
class Random {
  #state: number

  constructor(seed: number) {
    this.#state = seed >>> 0
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let t = this.#state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }

  /** An integer from `min` to `max`, both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(probability: number): boolean {
    return this.next() < probability
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }

  /** `count` distinct items, in random order. */
  sample<T>(items: readonly T[], count: number): T[] {
    const pool = [...items]
    for (let i = pool.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      ;[pool[i], pool[j]] = [pool[j]!, pool[i]!]
    }
    return pool.slice(0, count)
  }
}
