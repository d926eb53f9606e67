const m = await import('./test/support/service.ts')
for (let i = 0; i < 3; i++) {
const t1 = performance.now()
const d = await m.freshDatabase()
const t2 = performance.now()
const rows = await d.db.query('select count(*) from schema_migrations')
console.log('db', (t2 - t1).toFixed(0), rows)
await d.drop()
}
