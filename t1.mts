const m = await import('./test/support/service.ts')
const { buildApp } = await import('./src/app.ts')
const d = await m.freshDatabase()
const { Session } = await import('node:inspector/promises')
const session = new Session(); session.connect()
await session.post('Profiler.enable'); await session.post('Profiler.start')
const t2 = performance.now()
const app = await buildApp({ operatorToken: m.OPERATOR_TOKEN, phoneHashKey: Buffer.from(m.PHONE_HASH_KEY), logLevel: 'silent', rateLimit: { perSecond: 1000, burst: 1000 }, metricsQueueReadIntervalMs: 0 } as any, { db: d.db, channels: m.simulatorOnly() })
await app.ready()
const t4 = performance.now()
const { profile } = await session.post('Profiler.stop')
console.log('build+ready', (t4 - t2).toFixed(0))
const self = new Map()
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const dt = profile.timeDeltas; const samples = profile.samples
const counts = new Map()
for (let i = 0; i < samples.length; i++) counts.set(samples[i], (counts.get(samples[i]) ?? 0) + dt[i])
for (const [id, t] of counts) { const n = byId.get(id); const k = n.callFrame.functionName + ' ' + n.callFrame.url.replace(/.*node_modules\//, '').slice(0, 80) + ':' + n.callFrame.lineNumber; self.set(k, (self.get(k) ?? 0) + t) }
console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, t]) => (t / 1000).toFixed(0) + ' ' + k).join('\n'))
// by file
const files = new Map()
for (const [id, t] of counts) { const n = byId.get(id); const k = n.callFrame.url.replace(/.*node_modules\//, '').split('/').slice(0, 2).join('/'); files.set(k, (files.get(k) ?? 0) + t) }
console.log([...files].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([k, t]) => (t / 1000).toFixed(0) + ' ' + k).join('\n'))
await app.close(); await d.drop()
