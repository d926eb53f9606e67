/**
 * Dispatcher throughput: how many due tasks one worker process (`cli worker`,
 * pinned to its CPU) starts per second on the simulator, on PostgreSQL.
 *
 * The tasks are written straight into a fresh database through the store
 * (the trigger path is measured on its own), all due and in an always-open
 * window, on a simulator campaign whose calls last an hour, so that the
 * worker only claims, checks the schedule, records attempts and starts them.
 * With `perSecond`, the campaign sets its sender's pace (src/domain/pacing.ts)
 * that high, so that nothing waits for it and what is measured is what pacing
 * costs each batch: its sender's row locked and its slots saved.
 */
import { type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { createChannels } from '../src/channels/index.ts'
import { type Schedule, WEEKDAYS } from '../src/domain/campaignSettings.ts'
import { newId } from '../src/domain/ids.ts'
import { COMMAND_LINE } from '../src/domain/audit.ts'
import { createCampaign, createOrganization, issueApiKey } from '../src/services/administration.ts'
import { openDatabase } from '../src/store/database.ts'
import { migrate } from '../src/store/migrate.ts'
import { insertTriggersWithTasks, type NewTrigger } from '../src/store/triggers.ts'
import { startChild, stopChild } from './children.ts'
import { SERVICE_NODE_FLAGS } from './harness.ts'

export interface DispatcherResult {
  tasks: number
  /** From the first attempt started to the last. */
  seconds: number
  tasksPerSecond: number
}

const INSERT_BATCH = 500
export const ALWAYS_OPEN: Schedule = { timezone: 'contact', windows: [{ days: [...WEEKDAYS], start: '00:00', end: '24:00' }] }

export async function benchDispatcher(options: {
  databaseUrl: string
  tasks: number
  root: string
  cpu: number
  logFile: string
  timeoutMs: number
  /** The campaign's pace; unpaced (the simulator's default) without it. */
  perSecond?: number
}): Promise<DispatcherResult> {
  const db = await openDatabase({ databaseUrl: options.databaseUrl, dataDir: 'memory://' })
  let worker: ChildProcess | undefined
  try {
    await migrate(db)
    const channels = createChannels({ publicBaseUrl: 'http://127.0.0.1:1', twilioApiBaseUrl: 'http://127.0.0.1:1', whatsappApiBaseUrl: 'http://127.0.0.1:1' }, () => undefined)
    const ops = { db, now: Date.now, channels: channels.registry }
    const org = await createOrganization(ops, COMMAND_LINE, 'Dispatcher Bench')
    const { apiKey } = await issueApiKey(ops, COMMAND_LINE, org.id, { name: 'bench' })
    const campaign = await createCampaign(ops, COMMAND_LINE, org.id, {
      routing_key: 'dispatch',
      channel: 'voice',
      schedule: ALWAYS_OPEN,
      provider_config: { outcomes: ['completed'], duration_ms: 3_600_000 },
      ...(options.perSecond === undefined ? {} : { pacing: { per_second: options.perSecond } }),
    })
    for (let written = 0; written < options.tasks; written += INSERT_BATCH) {
      const now = Date.now()
      const batch: NewTrigger[] = Array.from({ length: Math.min(INSERT_BATCH, options.tasks - written) }, (_, index) => ({
        id: newId('trigger', now),
        taskId: newId('task', now),
        orgId: org.id,
        apiKeyId: apiKey.id,
        campaignId: campaign.id,
        contactId: null,
        numberZones: { zones: ['Europe/London'], source: 'country' },
        requestId: `dispatch-bench-${written + index}`,
        ids: [{ source: 'bench', type: 'row', value: String(written + index) }],
        contact: { phone: '+442079460958' },
        context: {},
        testMode: true,
        createdAt: new Date(now).toISOString(),
        notBefore: null,
        expiresAt: null,
        dueAt: new Date(now).toISOString(),
        idempotency: null,
      }))
      await insertTriggersWithTasks(db, batch)
    }

    const output = openSync(options.logFile, 'w')
    try {
      worker = startChild('taskset', ['-c', String(options.cpu), process.execPath, ...SERVICE_NODE_FLAGS, 'dist/cli.js', 'worker'], {
        cwd: options.root,
        // METRICS_PORT 0: not scraped here, so any free port.
        env: {
          ...process.env,
          DATABASE_URL: options.databaseUrl,
          LOG_LEVEL: 'warn',
          OPERATOR_TOKEN: randomBytes(24).toString('hex'),
          PHONE_HASH_KEY: randomBytes(32).toString('hex'),
          METRICS_PORT: '0',
        },
        stdio: ['ignore', output, output],
      })
    } finally {
      closeSync(output)
    }
    const deadline = Date.now() + options.timeoutMs
    for (;;) {
      const [row] = await db.query<{ started: number }>(`SELECT count(*)::int AS started FROM interactions`)
      if (row!.started >= options.tasks) break
      if (Date.now() > deadline) throw new Error(`the worker started ${row!.started} of ${options.tasks} tasks in ${options.timeoutMs / 1000} s`)
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const [span] = await db.query<{ seconds: number }>(
      `SELECT extract(epoch FROM max(started_at) - min(started_at))::float8 AS seconds FROM interactions`,
    )
    const seconds = span!.seconds
    return { tasks: options.tasks, seconds, tasksPerSecond: options.tasks / seconds }
  } finally {
    if (worker !== undefined) await stopChild(worker)
    await db.close()
  }
}
