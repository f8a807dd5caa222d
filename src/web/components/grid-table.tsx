/**
 * The one table markup of the page's data (a result's rows, a kept frame's page), driven by
 * TanStack Table's headless core: it owns the columns, the rows and the sort state, and this file
 * only draws them. A kept frame's grid sorts and pages on the server (manual sorting and paging:
 * the table is handed the page the kernel sent); a result's table shows the rows it has.
 * Cells are text, never HTML.
 * @module
 */
import {
  constructTable,
  rowPaginationFeature,
  rowSortingFeature,
  type SortingState,
  tableFeatures,
  type Updater,
} from '@tanstack/table-core'
import { storeReactivityBindings } from '@tanstack/table-core/store-reactivity-bindings'
import type { ComponentChildren } from 'preact'
import { useMemo } from 'preact/hooks'
import { ScrollBox } from './scroll-box.js'

const features = tableFeatures({
  coreReactivityFeature: storeReactivityBindings(),
  rowSortingFeature,
  rowPaginationFeature,
})

/** Columns as pandas sends them: name → values, one per row. */
export type Columns = Record<string, unknown[]>

export function cell(value: unknown): { text: string; kind: string } {
  if (value === null || value === undefined) return { text: 'NaN', kind: 'null' }
  if (typeof value === 'number') return { text: String(value), kind: 'num' }
  if (typeof value === 'boolean') return { text: value ? 'True' : 'False', kind: 'bool' }
  if (typeof value === 'string') return { text: value, kind: 'str' }
  return { text: JSON.stringify(value), kind: 'str' }
}

/** `col` or `-col` (the server's sort) as TanStack's sorting state, and back. */
export const sortingOf = (sort: string): SortingState =>
  sort ? [{ id: sort.replace(/^-/, ''), desc: sort.startsWith('-') }] : []
const sortOf = (sorting: SortingState): string =>
  sorting[0] ? `${sorting[0].desc ? '-' : ''}${sorting[0].id}` : ''

const apply = <T,>(updater: Updater<T>, previous: T): T =>
  typeof updater === 'function' ? (updater as (old: T) => T)(previous) : updater

export interface GridTableProps {
  data: Columns
  /** Rows to show (from the first); all by default. */
  shown?: number
  /** The server's sort (`col`, `-col`, or ''): headers become sort buttons when onSort is given. */
  sort?: string
  onSort?: (sort: string) => void
  /** Under a column's name (its statistics). */
  headExtra?: (name: string) => ComponentChildren
}

export function GridTable({ data, shown, sort = '', onSort, headExtra }: GridTableProps) {
  const names = Object.keys(data)
  const rows = Math.max(0, ...names.map((name) => data[name]?.length ?? 0))
  const count = Math.min(rows, shown ?? rows)
  // Stable between renders of one page: TanStack's row models are memoized on them.
  const columns = useMemo(
    () =>
      names.map((name) => ({
        id: name,
        header: name,
        accessorFn: (row: { at: number }) => data[name]?.[row.at],
        // Ascending first, numbers too: a person reads the smallest first.
        sortDescFirst: false,
      })),
    [data],
  )
  const indexes = useMemo(() => Array.from({ length: count }, (_, at) => ({ at })), [count])
  const numeric = useMemo(
    () =>
      new Set(names.filter((name) => (data[name] ?? []).every((v) => v === null || typeof v === 'number'))),
    [data],
  )
  const table = constructTable({
    features,
    columns,
    data: indexes,
    state: { sorting: sortingOf(sort), pagination: { pageIndex: 0, pageSize: Math.max(1, count) } },
    manualSorting: true,
    manualPagination: true,
    enableSorting: Boolean(onSort),
    enableMultiSort: false,
    onSortingChange: (updater: Updater<SortingState>) => onSort?.(sortOf(apply(updater, sortingOf(sort)))),
  })
  return (
    <ScrollBox class="table-wrap">
      <table class="data">
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => {
                const name = header.column.id
                const sorted = header.column.getIsSorted()
                return (
                  <th
                    key={header.id}
                    class={numeric.has(name) ? 'num' : undefined}
                    aria-sort={sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : undefined}
                  >
                    {header.column.getCanSort() ? (
                      <button type="button" class="sort" onClick={header.column.getToggleSortingHandler()}>
                        {name}
                        <span aria-hidden="true">
                          {sorted === 'asc' ? ' ▲' : sorted === 'desc' ? ' ▼' : ''}
                        </span>
                      </button>
                    ) : (
                      name
                    )}
                    {headExtra?.(name)}
                  </th>
                )
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id}>
              {row.getAllCells().map((item) => {
                const { text, kind } = cell(item.getValue())
                return (
                  <td key={item.id} class={kind}>
                    {text}
                  </td>
                )
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  )
}
