/**
 * Keeping the keyboard inside a modal part of the page (the session sheet, a dialog): Tab from the
 * last control goes to the first, Shift+Tab from the first to the last. The rest of the page is
 * made inert by the part itself, so screen readers leave it too.
 * @module
 */

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [contenteditable="true"], [tabindex]:not([tabindex="-1"])'

/** The controls in `root` that Tab stops at, in order (those drawn: a closed part's are not). */
export function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (element) => element.getClientRects().length > 0,
  )
}

/** Wraps a Tab that would leave `root` back into it (a keydown handler's part). */
export function trapTab(event: KeyboardEvent, root: HTMLElement): void {
  if (event.key !== 'Tab') return
  const stops = focusables(root)
  const first = stops[0]
  const last = stops[stops.length - 1]
  if (!first || !last) return
  const active = document.activeElement
  if (event.shiftKey ? active === first || active === root : active === last) {
    event.preventDefault()
    ;(event.shiftKey ? last : first).focus()
  }
}
