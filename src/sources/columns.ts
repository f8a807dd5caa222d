/**
 * Turning a driver's values into the forms of their QueryColumnType, column by column, and the
 * type a value-less declaration (SQLite's dynamic types) takes from the values themselves.
 * @module
 */
import type { QueryColumnType } from '../sandbox/query.js'
import { bytesValue, floatValue, intValue, isoTimestamp, isoTimestamptz } from './values.js'

type Convert = (value: unknown) => unknown

function toText(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
  return typeof value === 'string' ? value : String(value)
}

const CONVERTERS: Record<QueryColumnType, Convert> = {
  int: (value) =>
    typeof value === 'bigint' || typeof value === 'number' || typeof value === 'string'
      ? intValue(value)
      : value,
  float: (value) =>
    typeof value === 'number' ? floatValue(value) : typeof value === 'bigint' ? Number(value) : value,
  decimal: (value) => toText(value),
  bool: (value) =>
    typeof value === 'boolean'
      ? value
      : typeof value === 'string'
        ? /^(t|true|1|y|yes)$/i.test(value)
        : Number(value) !== 0,
  text: toText,
  date: (value) => toText(value),
  timestamp: (value) => (typeof value === 'string' ? isoTimestamp(value) : toText(value)),
  timestamptz: (value) => (typeof value === 'string' ? isoTimestamptz(value) : toText(value)),
  time: (value) => toText(value),
  interval: (value) => (typeof value === 'number' ? value : toText(value)),
  json: (value) => {
    if (typeof value !== 'string' && !(value instanceof Uint8Array)) return value
    const text = toText(value)
    try {
      return JSON.parse(text)
    } catch {
      return text
    }
  },
  uuid: (value) => toText(value).toLowerCase(),
  bytes: (value) =>
    value instanceof Uint8Array ? bytesValue(value) : Buffer.from(toText(value)).toString('base64'),
  other: (value) => (value instanceof Uint8Array ? bytesValue(value) : toText(value)),
}

/** The column in place, NULLs (null or undefined) as null. */
export function convertColumn(type: QueryColumnType, values: unknown[]): unknown[] {
  const convert = CONVERTERS[type]
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    values[i] = value === null || value === undefined ? null : convert(value)
  }
  return values
}

/** A type from the values a dynamically typed column holds: 'other' when they disagree. */
export function inferType(values: readonly unknown[]): QueryColumnType {
  let type: QueryColumnType | undefined
  for (const value of values) {
    if (value === null || value === undefined) continue
    const own: QueryColumnType =
      typeof value === 'bigint'
        ? 'int'
        : typeof value === 'number'
          ? Number.isInteger(value)
            ? 'int'
            : 'float'
          : typeof value === 'string'
            ? 'text'
            : value instanceof Uint8Array
              ? 'bytes'
              : 'other'
    if (type === undefined || type === own) type = own
    else if ((type === 'int' && own === 'float') || (type === 'float' && own === 'int')) type = 'float'
    else return 'other'
  }
  return type ?? 'text'
}
