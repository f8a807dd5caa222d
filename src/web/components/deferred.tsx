/**
 * A part of a long page drawn only once it comes near the screen: a session of 200 steps opens
 * with the questions at hand drawn, and the others (their charts and grids, each of which draws
 * and asks the server for rows) as a light stand-in of about their height, drawn as a person
 * scrolls to them. Once drawn, a part stays drawn. bench/webui.mjs times the page it makes.
 */
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'

/** How far off the screen a part starts to be drawn: a screen or so ahead of the scroll. */
const AHEAD = '1200px 0px'

export function Deferred({
  eager,
  height,
  children,
  stand,
}: {
  /** Drawn at once (the parts a person sees first, small pages, a part find jumps to). */
  eager: boolean
  /** The stand-in's height, near the part's, so the page does not jump much as parts are drawn. */
  height: number
  children: ComponentChildren
  /** What the stand-in says (the question), so it reads as the part does. */
  stand: ComponentChildren
}) {
  const [shown, setShown] = useState(eager)
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    // Asked for since (find jumps to it): drawn now.
    if (eager) setShown(true)
  }, [eager])
  useEffect(() => {
    if (shown) return
    const element = box.current
    if (!element || typeof IntersectionObserver === 'undefined') return setShown(true)
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((entry) => entry.isIntersecting)) setShown(true)
      },
      { rootMargin: AHEAD },
    )
    observer.observe(element)
    return () => observer.disconnect()
  }, [shown])
  if (shown) return <>{children}</>
  return (
    <div ref={box} class="deferred" style={{ minHeight: `${height}px` }}>
      {stand}
    </div>
  )
}
