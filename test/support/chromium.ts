/** Debian's Chromium for browser tests, through playwright-core (never a downloaded browser). */
import { existsSync } from 'node:fs'
import { type BrowserContext, chromium } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)

/** A headless Chromium with its own profile folder, quiet: no network of its own, no GPU. */
export function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  })
}
