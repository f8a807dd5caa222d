/**
 * Whether a CSS media query holds, followed as it changes: the components that must agree with
 * style.css's @media rules (the dark theme, the narrow screen where the session panel is a sheet)
 * read it here rather than guess.
 * @module
 */
import { useEffect, useState } from 'preact/hooks'

export function useMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => window.matchMedia?.(query).matches ?? false)
  useEffect(() => {
    const list = window.matchMedia?.(query)
    if (!list) return
    const change = () => setMatches(list.matches)
    change()
    list.addEventListener('change', change)
    return () => list.removeEventListener('change', change)
  }, [query])
  return matches
}
