/**
 * The pages of kept frames this browser has fetched, by the request that asked for each, until a
 * cell ends: a cell may change any frame the kernel holds, so a page from before it may be stale.
 * Flipping back to a page seen since costs no request, also while a cell holds the kernel.
 * @module
 */

/** Pages kept at most (the oldest goes first): a few MB of rows. */
const MAX_PAGES = 200

/** The `cellsEnded` the pages were fetched under (kernel-state.ts). */
let fetchedUnder = ''
const pages = new Map<string, unknown>()

/** The page `url` answered, if it was fetched since the last cell ended. */
export function cachedPage<T>(url: string, cellsEnded: string): T | undefined {
  if (cellsEnded !== fetchedUnder) {
    pages.clear()
    fetchedUnder = cellsEnded
  }
  return pages.get(url) as T | undefined
}

/** Keeps a page, unless a cell ended between its request (`cellsEnded` then) and now. */
export function keepPage(url: string, cellsEnded: string, page: unknown): void {
  if (cellsEnded !== fetchedUnder) return
  pages.delete(url)
  pages.set(url, page)
  if (pages.size > MAX_PAGES) pages.delete(pages.keys().next().value as string)
}
