import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { expect, it, onTestFinished } from 'vitest'
import { openStores } from '../../store/index.js'
import { createLogger } from '../logging.js'
import { AuditLog } from './audit.js'

it('keeps each entry in the store and writes it as a JSON line to the log', async () => {
  const home = mkdtempSync(join(tmpdir(), 'analyst-audit-'))
  const stores = await openStores(home, {})
  onTestFinished(async () => {
    await stores.close()
    rmSync(home, { recursive: true, force: true })
  })
  const lines: Array<Record<string, unknown>> = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  const audit = new AuditLog(stores.auth, createLogger({ ANALYST_LOG_LEVEL: 'info' }, destination))
  await audit.record({ action: 'key-revoked', actor: 'u1', target: 'k1' })
  const [stored] = await stores.auth.audit({ limit: 1 })
  expect(stored).toMatchObject({ action: 'key-revoked', actor: 'u1', target: 'k1', at: expect.any(String) })
  expect(lines).toEqual([expect.objectContaining({ msg: 'audit: key-revoked', audit: stored })])
})
