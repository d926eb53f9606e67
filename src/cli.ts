/**
 * The operator's command line: `serve`, `migrate`, and the admin operations
 * (`org create`, `key issue|list|revoke`, `campaign create|list`), which work
 * on the database directly and print what the admin API would return.
 */
import { parseArgs } from 'node:util'
import type { Static, TSchema } from '@sinclair/typebox'
import { ConfigError, loadConfig } from './config.ts'
import { ApiError } from './domain/errors.ts'
import { CreateCampaignBody, presentCampaign } from './http/routes/admin/campaigns.ts'
import { IssueApiKeyBody, presentKey } from './http/routes/admin/apiKeys.ts'
import { CreateOrganizationBody, presentOrganization } from './http/routes/admin/organizations.ts'
import { serve } from './server.ts'
import * as admin from './services/administration.ts'
import { type Database, openDatabase } from './store/database.ts'
import { migrate } from './store/migrate.ts'
import { validate } from './validation/model.ts'

const USAGE = `usage: cli <command> [options]

  serve                                   run the HTTP API
  migrate                                 apply database migrations and exit
  org create --name NAME
  key issue --org ORG_ID --name NAME [--scopes triggers:write,triggers:read]
  key list --org ORG_ID
  key revoke --org ORG_ID --key KEY_ID
  campaign create --org ORG_ID --routing-key KEY --channel voice|whatsapp [--name NAME] [--context JSON]
  campaign list --org ORG_ID

Configuration comes from the environment: PORT, HOST, DATABASE_URL, DATA_DIR, OPERATOR_TOKEN, LOG_LEVEL.`

class UsageError extends Error {}

type Options = Record<string, string | undefined>

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseCommandLine(argv)
  const command = positionals.join(' ')
  if (values.help || command === '') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  const config = loadConfig(process.env)
  if (command === 'serve') return serve(config)

  const db = await openDatabase(config)
  try {
    await migrate(db)
    if (command === 'migrate') return
    const result = await runAdminCommand(command, values as Options, { db, now: Date.now })
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } finally {
    await db.close()
  }
}

async function runAdminCommand(command: string, options: Options, ops: { db: Database; now: () => number }): Promise<unknown> {
  const org = () => required(options, 'org')
  switch (command) {
    case 'org create':
      return presentOrganization(await admin.createOrganization(ops, checked(CreateOrganizationBody, { name: options.name }).name))
    case 'key issue': {
      const input = checked(IssueApiKeyBody, { name: options.name, scopes: options.scopes?.split(',').map((s) => s.trim()) })
      const { apiKey, key } = await admin.issueApiKey(ops, org(), input)
      return { ...presentKey(apiKey), key }
    }
    case 'key list':
      return (await admin.listKeys(ops, org())).map(presentKey)
    case 'key revoke':
      return presentKey(await admin.revokeApiKey(ops, org(), required(options, 'key')))
    case 'campaign create': {
      const input = checked(CreateCampaignBody, {
        routing_key: options['routing-key'],
        channel: options.channel,
        name: options.name,
        context: options.context === undefined ? undefined : parseJsonOption('context', options.context),
      })
      return presentCampaign(await admin.createCampaign(ops, org(), input))
    }
    case 'campaign list':
      return (await admin.listCampaigns(ops, org())).map(presentCampaign)
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
  const lines = result.errors.map((error) => `--${String(error.loc[0]).replaceAll('_', '-')}: ${error.msg}`)
  throw new UsageError(lines.join('\n'))
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`configuration error: ${error.message}\n`)
  } else if (error instanceof UsageError || error instanceof ApiError) {
    process.stderr.write(`${error.message}\n`)
    if (error instanceof UsageError) process.stderr.write(`run with --help for usage\n`)
  } else {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  }
  process.exit(1)
})
