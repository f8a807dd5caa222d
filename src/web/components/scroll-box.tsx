/**
 * A box that scrolls on its own (a wide table, long code or output), reachable by keyboard: a
 * person without a mouse tabs to it and scrolls it with the arrow keys (axe's
 * scrollable-region-focusable). Its focus ring shows where they are.
 */
import type { ComponentChildren } from 'preact'

interface ScrollBoxProps {
  class: string
  children: ComponentChildren
  /** A `<pre>` for text whose spacing counts (code, output); else a `<div>`. */
  pre?: boolean
}

export function ScrollBox({ class: className, children, pre }: ScrollBoxProps) {
  return pre ? (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus to scroll by keyboard
    <pre class={className} tabIndex={0}>
      {children}
    </pre>
  ) : (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must take focus to scroll by keyboard
    <div class={className} tabIndex={0}>
      {children}
    </div>
  )
}
