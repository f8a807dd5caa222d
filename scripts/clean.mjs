// Empties dist/ before a build: a file whose source was moved or deleted would otherwise stay
// there and ship in the package.
import { rmSync } from 'node:fs'

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
