/**
 * Running the service: open the database, apply migrations, build the app,
 * listen, and close in order on SIGTERM/SIGINT so that every accepted trigger
 * is committed and answered before the process exits.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { generateOperatorToken } from './services/credentials.ts'
import { openDatabase } from './store/database.ts'
import { migrate } from './store/migrate.ts'

export async function serve(config: Config): Promise<void> {
  const db = await openDatabase(config)
  await migrate(db)
  const operatorToken = config.operatorToken ?? (await operatorTokenFromDataDir(config.dataDir))
  const app = await buildApp({ operatorToken, logLevel: config.logLevel }, { db })

  let closing = false
  const shutdown = async (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    await app.close()
    await db.close()
    process.exit(0)
  }
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
  process.once('SIGINT', () => void shutdown('SIGINT'))

  await app.listen({ port: config.port, host: config.host })
  app.log.info({ database: db.kind, dataDir: db.kind === 'pglite' ? config.dataDir : undefined }, 'ready')
}

/**
 * Without OPERATOR_TOKEN, the token is kept in the data directory: generated
 * on first start and printed that once (never logged), so that a newcomer
 * can use the admin API at once and it survives restarts.
 */
async function operatorTokenFromDataDir(dataDir: string): Promise<string> {
  if (dataDir === 'memory://') {
    const token = generateOperatorToken()
    announce(token, 'It lasts as long as this process (DATA_DIR=memory://).')
    return token
  }
  const file = path.join(dataDir, 'operator-token')
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const token = generateOperatorToken()
  await mkdir(dataDir, { recursive: true })
  await writeFile(file, `${token}\n`, { mode: 0o600, flag: 'wx' })
  await chmod(file, 0o600)
  announce(token, `It is kept in ${file}; set OPERATOR_TOKEN to use your own.`)
  return token
}

function announce(token: string, where: string) {
  process.stdout.write(`\nOperator token (shown once): ${token}\n${where}\n\n`)
}
