import { describe, expect, it } from 'vitest'
import { formatTable } from './format.js'
import { rankTables, words } from './rank.js'
import type { CatalogTable } from './source.js'

const table = (name: string, columns: string[], extra: Partial<CatalogTable> = {}): CatalogTable => ({
  name,
  kind: 'table',
  columns: columns.map((column) => ({ name: column, type: 'int' })),
  ...extra,
})

describe('words', () => {
  it('splits names and folds plurals, without the little words', () => {
    expect([...words('How many OrderLines per customer_categories in boxes?')]).toEqual([
      'order',
      'line',
      'customer',
      'category',
      'box',
    ])
    expect([...words('metric_7')]).toEqual(['metric', '7'])
  })
})

describe('rankTables', () => {
  const customers = table('customers', ['id', 'name'])
  const orders = table('orders', ['id', 'customer_id', 'total'], {
    foreignKeys: [{ columns: ['customer_id'], references: 'customers', referencedColumns: ['id'] }],
  })
  const logs = table('logs', ['id', 'message'], { rowEstimate: 1_000_000 })
  const audit = table('audit', ['id'], { comment: 'Changes to invoices' })

  it('puts the table the question names first, then the tables joined to it', () => {
    expect(rankTables([logs, customers, audit, orders], 'total of orders').map((t) => t.name)).toEqual([
      'orders',
      'customers',
      'logs',
      'audit',
    ])
  })

  it('counts columns and comments, less than names', () => {
    expect(rankTables([logs, customers, audit, orders], 'the message about invoices')[0]?.name).toBe('logs')
    expect(rankTables([customers, audit], 'invoices')[0]?.name).toBe('audit')
  })

  it('without a question: the joined tables, then the largest', () => {
    expect(rankTables([logs, audit, customers, orders]).map((t) => t.name)).toEqual([
      'customers',
      'orders',
      'logs',
      'audit',
    ])
  })
})

describe('formatTable', () => {
  it('gives keys, samples and comments on one line per column', () => {
    const text = formatTable({
      name: 'sales.lines',
      kind: 'table',
      rowEstimate: 12345,
      comment: 'One row\nper line',
      primaryKey: ['order_id', 'line'],
      foreignKeys: [
        { columns: ['order_id'], references: 'orders', referencedColumns: ['id'] },
        { columns: ['a', 'b'], references: 'pairs', referencedColumns: ['x', 'y'] },
      ],
      columns: [
        { name: 'order_id', type: 'integer', nullable: false, samples: ['1', '2'] },
        { name: 'sku', type: 'text', samples: ['pen', 'x'.repeat(60)], comment: 'Stock unit' },
      ],
    })
    expect(text).toBe(
      [
        'sales.lines (table, ~12,345 rows): One row per line',
        '  primary key (order_id, line)',
        '  foreign key (a, b) → pairs (x, y)',
        '  - order_id: integer, not null, → orders.id; e.g. 1, 2',
        `  - sku: text; e.g. "pen", "${'x'.repeat(37)}…" -- Stock unit`,
      ].join('\n'),
    )
  })
})
