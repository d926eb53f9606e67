/**
 * The operator's command line: `serve`, `worker`, `migrate`, and the admin
 * operations (`org create|rate-limit|retention`, `key issue|list|revoke`, `campaign
 * create|update|list|pause|resume`, `source create|update|list|delete`,
 * `registry load|list|delete`),
 * which work on the database directly and print what the admin API would
 * return; and the developer's `listen`, which forwards an organization's
 * events from the HTTP API to a local URL.
 */
import { parseArgs } from 'node:util'
import type { Static, TSchema } from '@sinclair/typebox'
import { ConfigError, loadConfig } from './config.ts'
import { createChannels } from './channels/index.ts'
import { COMMAND_LINE } from './domain/audit.ts'
import { ApiError, ValidationFailed } from './domain/errors.ts'
import { CreateCampaignBody, presentCampaign, UpdateCampaignBody } from './http/routes/admin/campaigns.ts'
import { IssueApiKeyBody, presentKey } from './http/routes/admin/apiKeys.ts'
import { ChangeSourceBody, CreateSourceBody, presentSource } from './http/routes/admin/sources.ts'
import { ContactCapBody, CreateOrganizationBody, presentOrganization, RateLimitBody, RetentionBody } from './http/routes/admin/organizations.ts'
import { phoneHashKeyFor, runWorker, serve } from './server.ts'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { CONSENT_KINDS, type ConsentKind, PURPOSES, type Purpose } from './domain/callingLaw.ts'
import { isPurpose } from './domain/consent.ts'
import { NATIONAL_PLANS, type NationalPlan } from './domain/registryFile.ts'
import { presentRegistry } from './http/routes/admin/compliance.ts'
import { CallingLaw } from './services/callingLaw.ts'
import { loadRegistry, type RegistryOperations, removeRegistry } from './services/registries.ts'
import { listRegistries } from './store/registries.ts'
import * as admin from './services/administration.ts'
import { CampaignPauses } from './services/campaignPauses.ts'
import { createWake } from './services/index.ts'
import { DataDirInUse } from './store/dataDirLock.ts'
import { openDatabase } from './store/database.ts'
import { migrate, prepareSchema, SchemaBehind } from './store/migrate.ts'
import { ForwarderError, LocalForwarder } from './webhooks/localForwarder.ts'
import { isWebhookSecret, newWebhookSecret } from './webhooks/signing.ts'
import { validate } from './validation/model.ts'

const USAGE = `usage: cli <command> [options]

  serve [--no-workers]                    run the HTTP API and the dispatcher (--no-workers: the API alone)
  worker                                  run the dispatcher and the deliverer alone (/metrics, /healthz, /readyz on METRICS_PORT)
  migrate                                 apply database migrations and exit
  org create --name NAME
  org rate-limit --org ORG_ID (--per-second N --burst N | --default)
  org retention --org ORG_ID --days N     keep the personal data of completed tasks N days (default 365)
  org contact-cap --org ORG_ID [--per-24h N] [--per-local-day N]
                                          at most N attempts to one number across campaigns in any 24 hours, and on its
                                          local day (a figure left out: no such rule; both: no cap)
  key issue --org ORG_ID --name NAME [--scopes triggers:write,triggers:read]
  key list --org ORG_ID
  key revoke --org ORG_ID --key KEY_ID
  campaign create --org ORG_ID --routing-key KEY --channel voice|whatsapp|sms [SETTINGS]
  campaign update --org ORG_ID --campaign CAMPAIGN_ID [SETTINGS]
  campaign list --org ORG_ID
  campaign pause --org ORG_ID --campaign CAMPAIGN_ID
  campaign resume --org ORG_ID --campaign CAMPAIGN_ID
  source create --org ORG_ID --name NAME --id-types TYPE,... [--contact required|optional] [--required-context KEY,...]
  source update --org ORG_ID --name NAME [--id-types TYPE,...] [--contact required|optional] [--required-context KEY,...]
  source list --org ORG_ID
  source delete --org ORG_ID --name NAME
  registry load --name NAME --file PATH --purposes PURPOSE,... [--org ORG_ID] [--overridden-by KIND,...] [--list-date YYYY-MM-DD] [--plan nanp]
                                          load a do-not-call list (one number a line: E.164, or with --plan nanp the US
                                          registry's 10-digit numbers), of the whole service or of one organization;
                                          loading a name again replaces its numbers atomically
  registry list [--org ORG_ID]
  registry delete --registry REGISTRY_ID
  listen --forward-to URL [--api-key KEY] [--base-url URL] [--secret whsec_...] [--events TYPE,...] [--after EVENT_ID]
                                          forward the organization's events, signed, to a local URL as they are recorded
                                          (the key: --api-key or API_KEY; the service: --base-url or http://localhost:PORT;
                                          the secret: --secret or WEBHOOK_SECRET, else a new one, printed)

SETTINGS, as on the admin API: [--name NAME] [--context JSON] [--schedule JSON] [--attempts JSON]
  [--provider simulator|twilio|whatsapp_cloud|vapi|retell|elevenlabs] [--provider-config JSON] [--max-concurrent N] [--results JSON]
  [--compliance JSON]  (purpose, subject, artificial_voice, consent: docs/compliance.md)

Configuration comes from the environment: PORT, METRICS_PORT, HOST, DATABASE_URL, DATA_DIR, OPERATOR_TOKEN, PHONE_HASH_KEY,
LOG_LEVEL, PUBLIC_BASE_URL, TWILIO_API_BASE_URL, WHATSAPP_API_BASE_URL, VAPI_API_BASE_URL,
RETELL_API_BASE_URL, ELEVENLABS_API_BASE_URL.`

class UsageError extends Error {}

type Options = Record<string, string | undefined>

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseCommandLine(argv)
  const command = positionals.join(' ')
  if (values.help || command === '') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  // A client of the HTTP API: no database, no service configuration.
  if (command === 'listen') return listen(values as Options)
  const config = loadConfig(process.env)
  if (command === 'serve') return serve(config, { workers: values['no-workers'] !== true })
  if (command === 'worker') return runWorker(config)

  // Refused at once if a running process has the embedded database's directory: two writers lose each other's data.
  const db = await openDatabase({ ...config, command })
  try {
    if (command === 'migrate') {
      const applied = await migrate(db)
      process.stdout.write(applied.length === 0 ? 'the schema is up to date\n' : `applied migrations ${applied.join(', ')}\n`)
      return
    }
    await prepareSchema(db, config.migrateOnStart)
    if (command.startsWith('registry ')) {
      const ops = { db, now: Date.now, phoneHashKey: await phoneHashKeyFor(config, db), law: new CallingLaw({ now: Date.now }) }
      process.stdout.write(`${JSON.stringify(await runRegistryCommand(command, values as Options, ops), null, 2)}\n`)
      return
    }
    const channels = createChannels(config, (name) => process.env[name])
    // Worker processes on the same PostgreSQL hear of a resume as it commits.
    const pauses = new CampaignPauses({ db, now: Date.now, wake: createWake(db) })
    const result = await runAdminCommand(command, values as Options, { db, now: Date.now, channels: channels.registry }, pauses)
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } finally {
    await db.close()
  }
}

async function listen(options: Options): Promise<void> {
  const forwardTo = required(options, 'forward-to')
  if (!URL.canParse(forwardTo)) throw new UsageError(`--forward-to must be a URL, like http://localhost:9000/hook`)
  const apiKey = options['api-key'] ?? process.env.API_KEY
  if (apiKey === undefined) throw new UsageError('listen needs an API key with triggers:read: --api-key or API_KEY')
  const given = options.secret ?? process.env.WEBHOOK_SECRET
  if (given !== undefined && !isWebhookSecret(given)) throw new UsageError('the secret must be whsec_ and the base64 of its key, as an endpoint secret is')
  const secret = given ?? newWebhookSecret()
  if (given === undefined) process.stdout.write(`signing with a new secret: ${secret}\n(start your receiver with WEBHOOK_SECRET=${secret}, or give listen yours with --secret)\n`)
  const forwarder = new LocalForwarder({
    baseUrl: options['base-url'] ?? `http://localhost:${process.env.PORT ?? 8080}`,
    apiKey,
    forwardTo,
    secret,
    types: options.events?.split(',').map((type) => type.trim()) ?? [],
    after: options.after,
    print: (line) => process.stdout.write(`${line}\n`),
  })
  const stop = new AbortController()
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort())
  await forwarder.run(stop.signal)
}

async function runAdminCommand(command: string, options: Options, ops: admin.Operations, pauses: CampaignPauses): Promise<unknown> {
  const org = () => required(options, 'org')
  switch (command) {
    case 'org create':
      return presentOrganization(await admin.createOrganization(ops, COMMAND_LINE, checked(CreateOrganizationBody, { name: options.name }).name))
    case 'org rate-limit': {
      // --default is a flag: present or not.
      if (options.default !== undefined) return presentOrganization(await admin.changeOrganization(ops, COMMAND_LINE, org(), { rateLimit: { perSecond: null, burst: null } }))
      const limit = checked(RateLimitBody, { per_second: options['per-second'], burst: options.burst })
      return presentOrganization(await admin.changeOrganization(ops, COMMAND_LINE, org(), { rateLimit: { perSecond: limit.per_second, burst: limit.burst } }))
    }
    case 'org retention': {
      const { retention_days } = checked(RetentionBody, { retention_days: options.days })
      return presentOrganization(await admin.changeOrganization(ops, COMMAND_LINE, org(), { retentionDays: retention_days }))
    }
    case 'org contact-cap': {
      const cap = checked(ContactCapBody, { per_24h: options['per-24h'], per_local_day: options['per-local-day'] })
      const contactCap = { per_24h: cap.per_24h ?? null, per_local_day: cap.per_local_day ?? null }
      return presentOrganization(await admin.changeOrganization(ops, COMMAND_LINE, org(), { contactCap }))
    }
    case 'key issue': {
      const input = checked(IssueApiKeyBody, { name: options.name, scopes: options.scopes?.split(',').map((s) => s.trim()) })
      const { apiKey, key } = await admin.issueApiKey(ops, COMMAND_LINE, org(), input)
      return { ...presentKey(apiKey), key }
    }
    case 'key list':
      return (await admin.listKeys(ops, org())).map(presentKey)
    case 'key revoke':
      return presentKey(await admin.revokeApiKey(ops, COMMAND_LINE, org(), required(options, 'key')))
    case 'campaign create': {
      const input = checked(CreateCampaignBody, {
        routing_key: options['routing-key'],
        channel: options.channel,
        ...settingsOptions(options),
      })
      return presentCampaign(await asCommandLine(admin.createCampaign(ops, COMMAND_LINE, org(), input as admin.CreateCampaignInput)))
    }
    case 'campaign update': {
      const changes = checked(UpdateCampaignBody, settingsOptions(options))
      const campaign = admin.updateCampaign(ops, COMMAND_LINE, org(), required(options, 'campaign'), changes as admin.CampaignChanges)
      return presentCampaign(await asCommandLine(campaign))
    }
    case 'campaign list':
      return (await admin.listCampaigns(ops, org())).map(presentCampaign)
    case 'campaign pause':
    case 'campaign resume':
      return presentCampaign(await pauses.ofCampaign(command === 'campaign pause' ? 'pause' : 'resume', COMMAND_LINE, org(), required(options, 'campaign')))
    case 'source create': {
      const input = checked(CreateSourceBody, { name: options.name, ...sourceRuleOptions(options) })
      return presentSource(await admin.createSource(ops, COMMAND_LINE, org(), input as admin.SourceInput))
    }
    case 'source update': {
      const changes = checked(ChangeSourceBody, sourceRuleOptions(options))
      return presentSource(await admin.changeSource(ops, COMMAND_LINE, org(), required(options, 'name'), changes as Partial<admin.SourceInput>))
    }
    case 'source list':
      return (await admin.listOrganizationSources(ops, org())).map(presentSource)
    case 'source delete':
      await admin.removeSource(ops, COMMAND_LINE, org(), required(options, 'name'))
      return { deleted: options.name }
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

async function runRegistryCommand(command: string, options: Options, ops: RegistryOperations): Promise<unknown> {
  switch (command) {
    case 'registry load': {
      const file = required(options, 'file')
      const list = (name: string) => options[name]?.split(',').map((item) => item.trim()) ?? []
      const purposes = list('purposes')
      const overriddenBy = list('overridden-by')
      for (const purpose of purposes) if (!isPurpose(purpose)) throw new UsageError(`--purposes: "${purpose}" is not one of ${PURPOSES.join(', ')}`)
      if (purposes.length === 0) throw new UsageError('--purposes is required: the purposes the registry covers, such as marketing')
      for (const kind of overriddenBy) if (!(CONSENT_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--overridden-by: "${kind}" is not one of ${CONSENT_KINDS.join(', ')}`)
      const plan = options.plan
      if (plan !== undefined && !(NATIONAL_PLANS as readonly string[]).includes(plan)) throw new UsageError(`--plan must be one of ${NATIONAL_PLANS.join(', ')}`)
      const listDate = options['list-date'] ?? new Date().toISOString().slice(0, 10)
      if (!/^\d{4}-\d{2}-\d{2}$/.test(listDate) || Number.isNaN(Date.parse(listDate))) throw new UsageError('--list-date must be a date written YYYY-MM-DD')
      const report = await loadRegistry(ops, COMMAND_LINE, {
        orgId: options.org ?? null,
        name: required(options, 'name'),
        purposes: purposes as Purpose[],
        overriddenBy: overriddenBy as ConsentKind[],
        listDate,
        plan: plan as NationalPlan | undefined,
        lines: createInterface({ input: createReadStream(file), crlfDelay: Infinity }),
      })
      return { ...presentRegistry(report.registry), numbers_read: report.numbersRead, refused: report.refused, refused_samples: report.refusedSamples, seconds: Number(report.seconds.toFixed(1)) }
    }
    case 'registry list':
      return (await listRegistries(ops.db, options.org)).map(presentRegistry)
    case 'registry delete':
      return presentRegistry(await removeRegistry(ops, COMMAND_LINE, required(options, 'registry')))
    default:
      throw new UsageError(`unknown command: ${command}`)
  }
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        org: { type: 'string' },
        key: { type: 'string' },
        scopes: { type: 'string' },
        'routing-key': { type: 'string' },
        channel: { type: 'string' },
        context: { type: 'string' },
        campaign: { type: 'string' },
        schedule: { type: 'string' },
        attempts: { type: 'string' },
        provider: { type: 'string' },
        'provider-config': { type: 'string' },
        'max-concurrent': { type: 'string' },
        results: { type: 'string' },
        compliance: { type: 'string' },
        'no-workers': { type: 'boolean' },
        'id-types': { type: 'string' },
        contact: { type: 'string' },
        'required-context': { type: 'string' },
        'per-second': { type: 'string' },
        burst: { type: 'string' },
        days: { type: 'string' },
        'per-24h': { type: 'string' },
        'per-local-day': { type: 'string' },
        default: { type: 'boolean' },
        'forward-to': { type: 'string' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        secret: { type: 'string' },
        events: { type: 'string' },
        after: { type: 'string' },
        file: { type: 'string' },
        purposes: { type: 'string' },
        'overridden-by': { type: 'string' },
        'list-date': { type: 'string' },
        plan: { type: 'string' },
        registry: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    // parseArgs refuses unknown options and missing values with a TypeError whose message says which.
    throw new UsageError((error as Error).message)
  }
}

function required(options: Options, name: string): string {
  const value = options[name]
  if (value === undefined) throw new UsageError(`--${name} is required`)
  return value
}

function sourceRuleOptions(options: Options): Record<string, unknown> {
  const list = (name: string) => options[name]?.split(',').map((item) => item.trim())
  return { id_types: list('id-types'), contact: options.contact, required_context: list('required-context') }
}

function settingsOptions(options: Options): Record<string, unknown> {
  const json = (name: string) => (options[name] === undefined ? undefined : parseJsonOption(name, options[name]))
  return {
    name: options.name,
    context: json('context'),
    schedule: json('schedule'),
    attempts: json('attempts'),
    provider: options.provider,
    provider_config: json('provider-config'),
    max_concurrent: options['max-concurrent'],
    results: json('results'),
    compliance: json('compliance'),
  }
}

/** A settings problem found past the schema (an incoherent schedule, a bad provider_config), named as an option. */
async function asCommandLine<T>(result: Promise<T>): Promise<T> {
  try {
    return await result
  } catch (error) {
    if (!(error instanceof ValidationFailed)) throw error
    throw new UsageError(error.detail.map((entry) => describeError(entry.loc.slice(1), entry.msg)).join('\n'))
  }
}

function describeError(loc: (string | number)[], msg: string): string {
  const [option, ...path] = loc
  return `--${String(option).replaceAll('_', '-')}${path.length > 0 ? ` (${path.join('.')})` : ''}: ${msg}`
}

function parseJsonOption(name: string, text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError(`--${name} must be JSON`)
  }
}

/** Validates options with the admin API's own schema, naming options as the CLI spells them. */
function checked<S extends TSchema>(schema: S, input: Record<string, unknown>): Static<S> {
  const result = validate<Static<S>>(schema, input, [])
  if (result.errors.length === 0) return result.value!
  const lines = result.errors.map((error) => describeError(error.loc, error.msg))
  throw new UsageError(lines.join('\n'))
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`configuration error: ${error.message}\n`)
  } else if (error instanceof UsageError || error instanceof ApiError || error instanceof DataDirInUse || error instanceof ForwarderError || error instanceof SchemaBehind) {
    process.stderr.write(`${error.message}\n`)
    if (error instanceof UsageError) process.stderr.write(`run with --help for usage\n`)
  } else {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  }
  process.exit(1)
})
