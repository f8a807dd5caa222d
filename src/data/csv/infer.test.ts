import { describe, expect, it } from 'vitest'
import { DtypeTracker, isFloatText, isIntegerText, toNumber } from './infer.js'

function dtype(values: string[], decimal = '.'): string {
  const tracker = new DtypeTracker({ decimal })
  for (const value of values) tracker.add(value)
  return tracker.dtype
}

describe('pandas dtype inference', () => {
  it('names the dtype pandas gives a column of fields', () => {
    expect(dtype(['1', '2', ' 3 '])).toBe('int64')
    expect(dtype(['1', ''])).toBe('float64')
    expect(dtype(['1.5', '-.5', '1e5', 'inf', '-Infinity'])).toBe('float64')
    expect(dtype(['True', 'false', 'TRUE'])).toBe('bool')
    expect(dtype(['True', 'NA'])).toBe('object')
    expect(dtype(['1', 'True'])).toBe('object')
    expect(dtype(['', 'NA', 'nan'])).toBe('float64')
    expect(dtype([])).toBe('object')
    expect(dtype(['1,5', '2'], ',')).toBe('float64')
    expect(dtype(['1,5', '2'])).toBe('object')
  })

  it('follows int64 into uint64 and object past their ranges', () => {
    expect(dtype(['9223372036854775807'])).toBe('int64')
    expect(dtype(['9223372036854775808'])).toBe('uint64')
    expect(dtype(['9223372036854775808', '-1'])).toBe('object')
    expect(dtype(['99999999999999999999999'])).toBe('object')
  })

  it('parses numbers as pandas does', () => {
    expect(isIntegerText('+5')).toBe(true)
    expect(isIntegerText('1_000')).toBe(false)
    expect(isFloatText(' inf ')).toBe(false)
    expect(isFloatText('1.')).toBe(true)
    expect(isFloatText('1e')).toBe(false)
    expect(isIntegerText('1.234', { decimal: ',', thousands: '.' })).toBe(true)
    expect(toNumber('1,5', { decimal: ',' })).toBe(1.5)
    expect(toNumber('-Infinity')).toBe(Number.NEGATIVE_INFINITY)
  })
})
