/**
 * axe-core in a page: the rules a screen reader and a keyboard depend on, run where the page is
 * drawn (Chromium), so the styles of each theme count.
 */
import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/** The serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE })
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (options: object) => Promise<AxeResults> } }).axe
    interface AxeResults {
      violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[]
    }
    const results = await axe.run({ resultTypes: ['violations'] })
    return results.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n) => n.target.join(' ')),
      }))
  })
}

/** How much wider than the viewport the page is (0 when it never scrolls sideways). */
export function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
}

/**
 * Tabs through the page `stops` times and returns each focused element that shows no focus ring
 * (no outline and no box shadow).
 */
export async function unseenFocus(page: Page, stops: number): Promise<string[]> {
  const unseen: string[] = []
  for (let i = 0; i < stops; i++) {
    await page.keyboard.press('Tab')
    const seen = await page.evaluate(() => {
      const element = document.activeElement as HTMLElement | null
      if (!element || element === document.body) return null
      // The ring may be drawn on the box around a borderless field (the question box's form).
      const rings = (node: Element | null) => {
        if (!node) return false
        const style = getComputedStyle(node)
        return (style.outlineStyle !== 'none' && style.outlineWidth !== '0px') || style.boxShadow !== 'none'
      }
      const ring =
        rings(element) || rings(element.parentElement) || rings(element.parentElement?.parentElement ?? null)
      return ring
        ? ''
        : `${element.tagName.toLowerCase()}.${element.className} "${element.textContent?.slice(0, 30)}"`
    })
    if (seen) unseen.push(seen)
  }
  return unseen
}
