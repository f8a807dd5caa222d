/**
 * The checker: walks tree-sitter's syntax tree of a cell, follows what names stand for (imports,
 * aliases such as `reader = open`, walrus, defaults, match captures) and reports what the policy
 * forbids. Flow- and scope-insensitive on purpose: a name that is ever bound to `os.system` counts
 * as `os.system` everywhere, which errs on the side of reporting.
 * @module
 */
import type { Node, Parser } from 'web-tree-sitter'
import { ipythonEscapes, type ShellEscape } from './ipython.js'
import { decodeContent, isPlainLiteral, type StringValue, stringFlags, stringValue } from './literals.js'
import { parsePython, pythonParser } from './parser.js'
import { classifyPath, type PathVerdict } from './paths.js'
import { type GuardPolicy, resolvePolicy, type Violation } from './policy.js'
import {
  ADVICE,
  CALL_ONLY,
  CODE_RUNNERS,
  CODE_STRING_ARGUMENTS,
  CONVENTIONAL_ALIASES,
  FILE_FUNCTIONS,
  FILE_METHOD,
  FORBIDDEN_ATTRIBUTE,
  INTERNAL_NAME_IN_TEXT,
  INTERNAL_NAMES,
  KNOWN_MODULES,
  MODULE_ATTRIBUTES,
  PATH_KEYWORDS,
  PICKLE_CALL,
  PRIVATE_MODULE_ATTRIBUTES,
  type RuleId,
  ruleForName,
  SENSITIVE_MODULES,
  YAML_PYTHON_TAG,
} from './rules.js'

/** Builtins the rules care about; an unbound use of these names is the builtin. */
const BUILTINS = new Set([
  'eval',
  'exec',
  'compile',
  'open',
  'getattr',
  'setattr',
  'delattr',
  'hasattr',
  'vars',
  'dir',
  '__import__',
  'globals',
  'locals',
  'str',
  'breakpoint',
])

/** The node types the checker looks at; the rest (punctuation, operators, literals) are only walked through. */
const INTERESTING = new Set([
  'identifier',
  'attribute',
  'call',
  'string',
  'concatenated_string',
  'import_statement',
  'import_from_statement',
  'assignment',
  'named_expression',
  'default_parameter',
  'typed_default_parameter',
  'for_statement',
  'for_in_clause',
  'function_definition',
  'class_definition',
  'as_pattern',
  'match_statement',
])

type Binding =
  /** `import a.b` binds `a` to 'a'; `flagged` holds the rule entries the import itself was reported for. */
  | { kind: 'import'; qname: string; flagged: Set<string> }
  /** Bound to an expression: what the name stands for is what the expression stands for. */
  | { kind: 'value'; node: Node }
  /** Bound to something the checker does not follow (a function, a class, a loop variable). */
  | { kind: 'local' }

/** How deep to follow aliases (`a2 = a1; a3 = a2; …`) and attribute chains; deeper counts as unknown. */
const MAX_DEPTH = 64
const MAX_CANDIDATES = 16
const MAX_CODE_STRING_DEPTH = 2

function positional(args: Node | null): Node[] {
  if (!args) return []
  return args.namedChildren.filter(
    (child): child is Node =>
      child !== null &&
      child.type !== 'keyword_argument' &&
      child.type !== 'dictionary_splat' &&
      child.type !== 'comment',
  )
}

function keywordArguments(args: Node | null): Array<{ name: string; value: Node }> {
  const found: Array<{ name: string; value: Node }> = []
  for (const child of args?.namedChildren ?? []) {
    if (child?.type !== 'keyword_argument') continue
    const name = child.childForFieldName('name')
    const value = child.childForFieldName('value')
    if (name && value) found.push({ name: ident(name), value })
  }
  return found
}

/**
 * The name an identifier or dotted name stands for. Python normalizes identifiers to NFKC, so
 * `ｅｖａｌ` is `eval` and `ｏｓ.ｓｙｓｔｅｍ` is `os.system`; whitespace and line continuations inside
 * a dotted name do not count.
 */
function ident(node: Node | null | undefined): string {
  const text = node?.text ?? ''
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII test
  const plain = /^[\x00-\x7f]*$/.test(text) ? text : text.normalize('NFKC')
  return plain.replace(/\s+|\\/g, '')
}

function unwrap(node: Node): Node {
  let current = node
  while (
    current.type === 'parenthesized_expression' &&
    current.namedChildCount === 1 &&
    current.namedChild(0)
  ) {
    current = current.namedChild(0) as Node
  }
  return current
}

function under(name: string, entries: readonly string[]): boolean {
  return entries.some((entry) => name === entry || name.startsWith(`${entry}.`))
}

/** An identifier that names a value here, rather than an attribute, a parameter or a keyword. */
function isReference(node: Node): boolean {
  const parent = node.parent
  if (!parent) return false
  switch (parent.type) {
    case 'assignment':
    case 'for_statement':
    case 'for_in_clause':
      // An assignment target is not a use: `windll = ctypes.windll` reports ctypes.windll once.
      return parent.childForFieldName('left')?.id !== node.id
    case 'named_expression':
      return parent.childForFieldName('name')?.id !== node.id
    case 'pattern_list':
    case 'tuple_pattern':
    case 'list_pattern':
    case 'as_pattern_target':
      return false
    case 'attribute':
      return parent.childForFieldName('attribute')?.id !== node.id
    case 'keyword_argument':
      return parent.childForFieldName('name')?.id !== node.id
    case 'function_definition':
    case 'class_definition':
      return parent.childForFieldName('name')?.id !== node.id
    case 'default_parameter':
    case 'typed_default_parameter':
      return parent.childForFieldName('name')?.id !== node.id
    case 'dotted_name':
    case 'aliased_import':
    case 'import_statement':
    case 'import_from_statement':
    case 'parameters':
    case 'lambda_parameters':
    case 'typed_parameter':
    case 'list_splat_pattern':
    case 'dictionary_splat_pattern':
    case 'keyword_pattern':
    case 'global_statement':
    case 'nonlocal_statement':
      return false
    default:
      return true
  }
}

class Checker {
  readonly bindings = new Map<string, Binding[]>()
  readonly violations: Violation[] = []
  readonly #seen = new Set<string>()
  /** Rule entries (os.system, subprocess) reported at some reference of this cell. */
  readonly #reportedEntries = new Set<string>()
  readonly #names = new Map<number, Set<string>>()
  readonly #resolving = new Set<number>()
  #cutShort = 0

  constructor(
    readonly policy: GuardPolicy,
    readonly parser: Parser,
    readonly codeDepth = 0,
  ) {}

  check(root: Node): void {
    const nodes: Node[] = []
    const cursor = root.walk()
    // Pre-order walk with one cursor: far cheaper than asking every node for its children.
    for (;;) {
      if (INTERESTING.has(cursor.nodeType)) nodes.push(cursor.currentNode)
      if (cursor.gotoFirstChild()) continue
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) {
          cursor.delete()
          this.#run(nodes)
          return
        }
      }
    }
  }

  #run(nodes: Node[]): void {
    for (const node of nodes) this.#bind(node)
    for (const node of nodes) {
      switch (node.type) {
        case 'identifier':
          this.#identifier(node)
          break
        case 'attribute':
          this.#attribute(node)
          break
        case 'call':
          this.#call(node)
          break
        case 'string':
        case 'concatenated_string':
          this.#string(node)
          break
        case 'import_statement':
        case 'import_from_statement':
          this.#import(node)
          break
      }
    }
    this.violations.sort((a, b) => a.line - b.line || a.column - b.column)
  }

  // ── reporting ────────────────────────────────────────────────────────────────────────────────

  #allowed(rule: RuleId, names: readonly string[] = []): boolean {
    if (this.policy.ignoreRules.includes(rule)) return true
    if (rule === 'network' && this.policy.allowNetwork) return true
    return names.some((name) => under(name, this.policy.allowModules))
  }

  /** Reports `subject: advice` (or `message` as it is, with `asIs`); false when the policy allows it. */
  #report(node: Node, rule: RuleId, subject: string, names: readonly string[] = [], asIs = false): boolean {
    if (this.#allowed(rule, names)) return false
    const line = node.startPosition.row + 1
    const column = node.startPosition.column + 1
    const key = `${rule}:${line}:${column}`
    if (this.#seen.has(key)) return true
    this.#seen.add(key)
    this.violations.push({ rule, line, column, message: asIs ? subject : `${subject}: ${ADVICE[rule]}` })
    return true
  }

  // ── bindings ─────────────────────────────────────────────────────────────────────────────────

  #addBinding(name: string, binding: Binding): void {
    const list = this.bindings.get(name)
    if (list) list.push(binding)
    else this.bindings.set(name, [binding])
  }

  /** Binds the names in an assignment target to the matching parts of `value` (if known). */
  #bindTarget(target: Node, value: Node | null): void {
    const node = unwrap(target)
    switch (node.type) {
      case 'identifier':
        this.#addBinding(ident(node), value ? { kind: 'value', node: value } : { kind: 'local' })
        return
      case 'pattern_list':
      case 'tuple_pattern':
      case 'list_pattern':
      case 'tuple':
      case 'list':
      case 'expression_list': {
        const targets = node.namedChildren.filter((child): child is Node => child !== null)
        const source = value ? unwrap(value) : null
        const values =
          source && ['tuple', 'list', 'expression_list', 'pattern_list'].includes(source.type)
            ? source.namedChildren.filter((child): child is Node => child !== null)
            : []
        const pairwise = values.length === targets.length
        targets.forEach((child, index) => {
          this.#bindTarget(child, pairwise ? (values[index] ?? null) : null)
        })
        return
      }
      case 'list_splat_pattern':
      case 'as_pattern_target':
        for (const child of node.namedChildren) if (child) this.#bindTarget(child, null)
        return
      default:
        return // attributes and subscripts: not followed
    }
  }

  #bind(node: Node): void {
    switch (node.type) {
      case 'assignment': {
        const left = node.childForFieldName('left')
        if (left) this.#bindTarget(left, node.childForFieldName('right'))
        return
      }
      case 'named_expression': {
        const name = node.childForFieldName('name')
        if (name) this.#bindTarget(name, node.childForFieldName('value'))
        return
      }
      case 'default_parameter':
      case 'typed_default_parameter': {
        const name = node.childForFieldName('name')
        if (name) this.#bindTarget(name, node.childForFieldName('value'))
        return
      }
      case 'for_statement':
      case 'for_in_clause': {
        const left = node.childForFieldName('left')
        const right = node.childForFieldName('right')
        if (!left) return
        const items = right ? unwrap(right) : null
        // `for f in (os.system, eval):` binds f to each element of a literal sequence.
        if (left.type === 'identifier' && items && ['list', 'tuple', 'set'].includes(items.type)) {
          for (const item of items.namedChildren)
            if (item) this.#addBinding(ident(left), { kind: 'value', node: item })
        } else this.#bindTarget(left, null)
        return
      }
      case 'function_definition':
      case 'class_definition': {
        const name = node.childForFieldName('name')
        if (name) this.#addBinding(ident(name), { kind: 'local' })
        return
      }
      case 'as_pattern': {
        const alias = node.childForFieldName('alias')
        if (alias) this.#bindTarget(alias, null)
        return
      }
      case 'match_statement': {
        const subject = node.childForFieldName('subject')
        if (!subject) return
        // Every capture in every case binds the subject (or a part of it): `case o: o.system()`.
        for (const pattern of node.descendantsOfType('case_pattern')) {
          for (const name of pattern?.descendantsOfType('identifier') ?? []) {
            if (name && name.parent?.type !== 'keyword_pattern')
              this.#addBinding(ident(name), { kind: 'value', node: subject })
          }
        }
        return
      }
      case 'import_statement':
        for (const name of node.childrenForFieldName('name')) {
          if (!name) continue
          if (name.type === 'aliased_import') {
            const module = ident(name.childForFieldName('name'))
            const alias = name.childForFieldName('alias')
            if (alias) this.#addBinding(ident(alias), { kind: 'import', qname: module, flagged: new Set() })
          } else {
            const root = ident(name).split('.')[0] ?? ''
            this.#addBinding(root, { kind: 'import', qname: root, flagged: new Set() })
          }
        }
        return
      case 'import_from_statement': {
        const module = node.childForFieldName('module_name')
        const base = module?.type === 'dotted_name' ? ident(module) : undefined
        for (const name of node.childrenForFieldName('name')) {
          if (!name) continue
          const imported = ident(name.type === 'aliased_import' ? name.childForFieldName('name') : name)
          const bound =
            (name.type === 'aliased_import' ? ident(name.childForFieldName('alias')) : imported) ?? ''
          this.#addBinding(
            bound,
            base ? { kind: 'import', qname: `${base}.${imported}`, flagged: new Set() } : { kind: 'local' },
          )
        }
        return
      }
    }
  }

  /** The import bindings of the name at the root of a reference: reported already, so not again. */
  /**
   * Rule entries not to report again at this reference: those its root name's import was reported
   * for, and, when the root is an alias (`s = os.system`), those already reported elsewhere.
   */
  #reportedThrough(node: Node): Set<string> {
    let root = unwrap(node)
    while (root.type === 'attribute') root = unwrap(root.childForFieldName('object') ?? root)
    const skip = new Set<string>()
    if (root.type !== 'identifier') return skip
    for (const binding of this.bindings.get(ident(root)) ?? []) {
      if (binding.kind === 'import') for (const entry of binding.flagged) skip.add(entry)
      if (binding.kind === 'value') for (const entry of this.#reportedEntries) skip.add(entry)
    }
    return skip
  }

  // ── what an expression stands for ────────────────────────────────────────────────────────────

  /** The dotted names (modules, functions, builtins) an expression may stand for. */
  names(node: Node, depth = 0): Set<string> {
    const cached = this.#names.get(node.id)
    if (cached) return cached
    if (depth > MAX_DEPTH || this.#resolving.has(node.id)) {
      this.#cutShort += 1 // the depth limit, or a cycle such as `a = b; b = a`
      return new Set()
    }
    this.#resolving.add(node.id)
    const cuts = this.#cutShort
    try {
      const result = this.#computeNames(node, depth)
      // Only complete answers are kept: one cut short could be completed from elsewhere.
      if (this.#cutShort === cuts) this.#names.set(node.id, result)
      return result
    } finally {
      this.#resolving.delete(node.id)
    }
  }

  /** What a name stands for: its bindings in the cell, else a builtin or a module from an earlier cell. */
  #lookup(name: string, depth: number): Set<string> {
    const result = new Set<string>()
    const bindings = this.bindings.get(name)
    if (!bindings) {
      if (BUILTINS.has(name)) result.add(`builtins.${name}`)
      else if (name === '__builtins__') result.add('builtins')
      else if (CONVENTIONAL_ALIASES.has(name)) result.add(CONVENTIONAL_ALIASES.get(name) as string)
      else if (KNOWN_MODULES.has(name)) result.add(name)
      return result
    }
    for (const binding of bindings) {
      if (binding.kind === 'import') result.add(binding.qname)
      else if (binding.kind === 'value')
        for (const name of this.names(binding.node, depth + 1)) result.add(name)
    }
    return result
  }

  /** `namespace[key]`: globals(), locals() or vars() give the name `key`; sys.modules gives the module. */
  #namespaceLookup(namespace: Node, key: Node, depth: number): Set<string> {
    const name = stringValue(unwrap(key))
    if (!name?.complete) return new Set()
    const inner = unwrap(namespace)
    if (inner.type === 'call' && positional(inner.childForFieldName('arguments')).length === 0) {
      const fn = inner.childForFieldName('function')
      const callee = fn ? this.names(fn, depth + 1) : new Set<string>()
      if (['builtins.globals', 'builtins.locals', 'builtins.vars'].some((scope) => callee.has(scope))) {
        return this.#lookup(name.value, depth + 1)
      }
    }
    if (this.names(inner, depth + 1).has('sys.modules')) return new Set([name.value])
    return new Set()
  }

  #computeNames(node: Node, depth: number): Set<string> {
    const result = new Set<string>()
    switch (node.type) {
      case 'identifier':
        return this.#lookup(ident(node), depth)
      case 'subscript': {
        // globals()['os'], locals()['os'] and sys.modules['os'] stand for os.
        const key = node.childForFieldName('subscript')
        const value = node.childForFieldName('value')
        return value && key ? this.#namespaceLookup(value, key, depth) : result
      }
      case 'attribute': {
        const object = node.childForFieldName('object')
        const attribute = ident(node.childForFieldName('attribute'))
        if (!object || !attribute) return result
        for (const name of this.names(object, depth + 1)) result.add(`${name}.${attribute}`)
        return result
      }
      case 'parenthesized_expression':
      case 'named_expression':
      case 'assignment': {
        const inner =
          node.type === 'parenthesized_expression'
            ? node.namedChild(0)
            : node.childForFieldName(node.type === 'assignment' ? 'right' : 'value')
        return inner ? this.names(inner, depth + 1) : result
      }
      case 'conditional_expression':
      case 'boolean_operator': {
        const parts =
          node.type === 'boolean_operator'
            ? [node.childForFieldName('left'), node.childForFieldName('right')]
            : [node.namedChild(0), node.namedChild(2)]
        for (const part of parts) if (part) for (const name of this.names(part, depth + 1)) result.add(name)
        return result
      }
      case 'call': {
        const fn = node.childForFieldName('function')
        const args = positional(node.childForFieldName('arguments'))
        if (!fn) return result
        const callee = this.names(fn, depth + 1)
        const [first, second] = args
        // getattr(os, 'system') is os.system; __import__('os') and import_module('os') are os.
        if (callee.has('builtins.getattr') && first && second && isPlainLiteral(second)) {
          const attribute = stringValue(second)?.value ?? ''
          for (const name of this.names(first, depth + 1)) result.add(`${name}.${attribute}`)
        }
        // globals().get('os') and sys.modules.get('os') as for the subscripts.
        if (fn.type === 'attribute' && ident(fn.childForFieldName('attribute')) === 'get' && first) {
          const namespace = fn.childForFieldName('object')
          if (namespace) for (const name of this.#namespaceLookup(namespace, first, depth)) result.add(name)
        }
        if ((callee.has('builtins.__import__') || callee.has('importlib.import_module')) && first) {
          const module = stringValue(first)
          if (module?.complete) result.add(module.value)
        }
        return result
      }
      default:
        return result
    }
  }

  // ── path values ──────────────────────────────────────────────────────────────────────────────

  /** What a path expression's value may be: literals, joins, f-strings and names bound to them. */
  paths(node: Node, depth = 0): StringValue[] {
    if (depth > MAX_DEPTH) return []
    const node_ = unwrap(node)
    switch (node_.type) {
      case 'string':
        return this.#fString(node_, depth)
      case 'concatenated_string': {
        let values: StringValue[] = [{ value: '', complete: true, text: '' }]
        for (const part of node_.namedChildren) {
          if (part) values = this.#concat(values, this.paths(part, depth + 1))
        }
        return values
      }
      case 'identifier': {
        const values: StringValue[] = []
        for (const binding of this.bindings.get(ident(node_)) ?? []) {
          if (binding.kind === 'value') values.push(...this.paths(binding.node, depth + 1))
        }
        if (values.length === 0 && this.names(node_).has('os.sep')) return [literal('/')]
        return values.slice(0, MAX_CANDIDATES)
      }
      case 'named_expression': {
        const value = node_.childForFieldName('value')
        return value ? this.paths(value, depth + 1) : []
      }
      case 'attribute':
        return [...this.names(node_)].some((name) => name === 'os.sep' || name === 'os.path.sep')
          ? [literal('/')]
          : []
      case 'conditional_expression':
        return [node_.namedChild(0), node_.namedChild(2)].flatMap((part) =>
          part ? this.paths(part, depth + 1) : [],
        )
      case 'boolean_operator':
        return [node_.childForFieldName('left'), node_.childForFieldName('right')].flatMap((part) =>
          part ? this.paths(part, depth + 1) : [],
        )
      case 'binary_operator': {
        const left = node_.childForFieldName('left')
        const right = node_.childForFieldName('right')
        const operator = node_.childForFieldName('operator')?.type
        if (!left || !right) return []
        const lefts = this.paths(left, depth + 1)
        if (operator === '+') return this.#concat(lefts, this.paths(right, depth + 1))
        if (operator === '/') return this.#join(lefts, this.paths(right, depth + 1))
        if (operator === '%') return lefts.map((value) => cut(value, '%'))
        return []
      }
      case 'call':
        return this.#callPaths(node_, depth)
      default:
        return []
    }
  }

  #fString(node: Node, depth: number): StringValue[] {
    const whole = stringValue(node)
    if (!whole || whole.complete) return whole ? [whole] : []
    // An f-string: put in what known names stand for (f'{BASE}/x.csv' with BASE = '/mnt/data').
    const flags = stringFlags(node)
    let values: StringValue[] = [literal('')]
    for (const child of node.namedChildren) {
      if (child?.type === 'string_content')
        values = this.#concat(values, [literal(decodeContent(child.text, flags))])
      else if (child?.type === 'interpolation') {
        const expression = child.childForFieldName('expression')
        const plain =
          !child.childForFieldName('format_specifier') && !child.childForFieldName('type_conversion')
        values = this.#concat(values, expression && plain ? this.paths(expression, depth + 1) : [])
      }
      if (values.every((value) => !value.complete)) break
    }
    return values
  }

  #concat(lefts: StringValue[], rights: StringValue[]): StringValue[] {
    const out: StringValue[] = []
    for (const left of lefts) {
      if (!left.complete || rights.length === 0) {
        out.push({ ...left, complete: false })
        continue
      }
      for (const right of rights)
        out.push({ value: left.value + right.value, complete: right.complete, text: '' })
    }
    return out.slice(0, MAX_CANDIDATES)
  }

  /** Path joining: an absolute right side replaces the left. */
  #join(lefts: StringValue[], rights: StringValue[]): StringValue[] {
    const out: StringValue[] = []
    for (const left of lefts) {
      if (rights.length === 0) {
        out.push({ value: left.complete ? `${left.value}/` : left.value, complete: false, text: '' })
        continue
      }
      for (const right of rights) {
        if (right.value.startsWith('/')) out.push(right)
        else if (!left.complete) out.push(left)
        else {
          const sep = left.value === '' || left.value.endsWith('/') ? '' : '/'
          out.push({ value: left.value + sep + right.value, complete: right.complete, text: '' })
        }
      }
    }
    return out.slice(0, MAX_CANDIDATES)
  }

  #callPaths(node: Node, depth: number): StringValue[] {
    const fn = node.childForFieldName('function')
    const argsNode = node.childForFieldName('arguments')
    const args = positional(argsNode)
    if (!fn) return []
    const callee = this.names(fn)
    const has = (...names: string[]) => names.some((name) => callee.has(name))
    const workspace = literal(this.policy.workspace)
    if (has('os.getcwd', 'pathlib.Path.cwd', 'pathlib.Path.home')) return [workspace]
    const joinAll = (parts: Node[], start: StringValue[] = [literal('')]) => {
      let values = start
      for (const part of parts)
        values = this.#join(values, part.type === 'list_splat' ? [] : this.paths(part, depth + 1))
      return values
    }
    if (has('os.path.join', 'posixpath.join')) {
      const [first, ...rest] = args
      return first ? joinAll(rest, this.paths(first, depth + 1)) : []
    }
    const isPathClass = has('pathlib.Path', 'pathlib.PurePath', 'pathlib.PosixPath', 'pathlib.PurePosixPath')
    if (isPathClass || (fn.type === 'identifier' && ident(fn) === 'Path')) {
      const [first, ...rest] = args
      return first ? joinAll(rest, this.paths(first, depth + 1)) : [literal('.')]
    }
    if (
      has(
        'os.path.abspath',
        'os.path.normpath',
        'os.path.realpath',
        'os.path.expanduser',
        'os.fspath',
        'builtins.str',
      )
    ) {
      const [first] = args
      return first ? this.paths(first, depth + 1) : []
    }
    if (fn.type !== 'attribute') return []
    const object = fn.childForFieldName('object')
    const method = ident(fn.childForFieldName('attribute'))
    if (!object) return []
    const receivers = this.paths(object, depth + 1)
    if (receivers.length === 0) return []
    switch (method) {
      case 'joinpath':
        return joinAll(args, receivers)
      case 'resolve':
      case 'absolute':
      case 'expanduser':
      case 'as_posix':
      case 'strip':
      case 'rstrip':
      case 'lstrip':
        return receivers
      case 'lower':
      case 'upper':
      case 'casefold':
        return receivers.map((value) => ({
          ...value,
          value: method === 'upper' ? value.value.toUpperCase() : value.value.toLowerCase(),
        }))
      case 'format':
        return receivers.map((value) => cut(value, '{'))
      case 'join': {
        const items = args[0] ? unwrap(args[0]) : undefined
        if (!items || !['list', 'tuple'].includes(items.type)) return receivers.map((value) => cut(value, ''))
        const separator = receivers[0]
        if (!separator?.complete) return []
        let values: StringValue[] = [literal('')]
        items.namedChildren.forEach((item, index) => {
          if (!item) return
          if (index > 0) values = this.#concat(values, [separator])
          values = this.#concat(values, this.paths(item, depth + 1))
        })
        return values
      }
      default:
        return []
    }
  }

  // ── checks ───────────────────────────────────────────────────────────────────────────────────

  #identifier(node: Node): void {
    const name = ident(node)
    const internal = INTERNAL_NAMES.get(name)
    if (internal) this.#report(node, internal, name)
    if (isReference(node)) this.#reference(node)
  }

  #attribute(node: Node): void {
    const attribute = ident(node.childForFieldName('attribute'))
    const object = node.childForFieldName('object')
    if (object) {
      const objectNames = this.names(object)
      if (PRIVATE_MODULE_ATTRIBUTES.has(attribute)) {
        this.#report(node, 'module-escape', `.${attribute} (a module kept inside another module)`)
      } else if (MODULE_ATTRIBUTES.has(attribute) && objectNames.size > 0) {
        const via = [...objectNames][0]
        this.#report(node, 'module-escape', `${via}.${attribute}`, [`${via}.${attribute}`])
      }
      if (attribute === '__dict__' || attribute === '__getattribute__') {
        const sensitive = [...objectNames].find((name) => SENSITIVE_MODULES.has(name.split('.')[0] ?? ''))
        if (sensitive) this.#report(node, 'dynamic-attribute', `${sensitive}.${attribute}`, [sensitive])
      }
    }
    this.#reference(node)
  }

  /** A name or attribute chain in an expression: what it stands for may be forbidden. */
  #reference(node: Node): void {
    const names = this.names(node)
    if (names.size === 0) return
    const parent = node.parent
    const called = parent?.type === 'call' && parent.childForFieldName('function')?.id === node.id
    const skip = this.#reportedThrough(node)
    for (const name of names) {
      const match = ruleForName(name)
      if (match && !skip.has(match.entry) && this.#report(node, match.rule, name, [name])) {
        this.#reportedEntries.add(match.entry)
      }
      const callOnly = CALL_ONLY.get(name)
      if (callOnly && called) this.#report(node, callOnly, `calling ${name}`, [name])
      if (CODE_RUNNERS.has(name)) this.#codeRunner(node, name, called ? parent : null)
    }
  }

  /** eval/exec/compile: only on a literal, and the literal's code is checked as well. */
  #codeRunner(node: Node, name: string, call: Node | null): void {
    const short = name.replace('builtins.', '')
    if (!call) {
      this.#report(node, 'dynamic-code', `${short} used as a value`, [name])
      return
    }
    const argsNode = call.childForFieldName('arguments')
    const source =
      positional(argsNode)[0] ??
      keywordArguments(argsNode).find((arg) => ['source', 'expression', 'object'].includes(arg.name))?.value
    const value = source ? stringValue(unwrap(source)) : undefined
    if (!source || !value?.complete) {
      this.#report(node, 'dynamic-code', `${short}() of a computed string`, [name])
      return
    }
    this.#codeString(source, value.value, `${short}()`, name)
  }

  /** Checks the code in a string literal as a cell of its own, reporting at the literal. */
  #codeString(literal: Node, code: string, label: string, name: string): void {
    if (this.codeDepth >= MAX_CODE_STRING_DEPTH) {
      this.#report(literal, 'dynamic-code', `${label} of nested code strings`, [name])
      return
    }
    const tree = this.parser.parse(code)
    if (!tree) return
    try {
      const inner = new Checker(this.policy, this.parser, this.codeDepth + 1)
      inner.check(tree.rootNode)
      for (const violation of inner.violations) {
        const where = `in the code given to ${label}, line ${violation.line}`
        this.#report(literal, violation.rule, `${where}: ${violation.message}`, [], true)
      }
    } finally {
      tree.delete()
    }
  }

  #call(node: Node): void {
    const fn = node.childForFieldName('function')
    if (!fn) return
    const argsNode = node.childForFieldName('arguments')
    const args = positional(argsNode)
    const callee = this.names(fn)
    if (['builtins.getattr', 'builtins.setattr', 'builtins.delattr'].some((name) => callee.has(name))) {
      this.#getattr(node, args)
    }
    // object.__getattribute__(os, name) is getattr(os, name); os.__getattribute__ alone is an attribute.
    const method = fn.type === 'attribute' ? ident(fn.childForFieldName('attribute')) : ''
    if (method === '__getattribute__' && args.length >= 2) this.#getattr(node, args)
    if (callee.has('operator.attrgetter') || callee.has('operator.methodcaller')) {
      const value = args[0] ? stringValue(unwrap(args[0])) : undefined
      const forbidden =
        value?.complete && value.value.split('.').some((part) => FORBIDDEN_ATTRIBUTE.test(part))
      if (forbidden) this.#report(node, 'dynamic-attribute', `${[...callee][0]}('${value?.value}')`)
    }
    for (const [name, keywords] of CODE_STRING_ARGUMENTS) {
      if (!callee.has(name)) continue
      const named = keywordArguments(argsNode).filter((arg) => keywords.includes(arg.name))
      for (const source of [...args.slice(0, keywords.length), ...named.map((arg) => arg.value)]) {
        const value = stringValue(unwrap(source))
        if (value?.complete) this.#codeString(source, value.value, `${name}()`, name)
      }
    }
    if (callee.has('builtins.vars') && args[0]) {
      const sensitive = [...this.names(args[0])].find((name) =>
        SENSITIVE_MODULES.has(name.split('.')[0] ?? ''),
      )
      if (sensitive) this.#report(node, 'dynamic-attribute', `vars(${sensitive})`, [sensitive])
    }
    if (this.#isFileCall(fn, callee)) this.#checkPaths(args, keywordArguments(argsNode), argsNode)
  }

  #getattr(node: Node, args: Node[]): void {
    const [object, attribute] = args
    if (!object || !attribute) return
    const objectNames = [...this.names(object)]
    const literalName = stringValue(unwrap(attribute))
    if (literalName?.complete) {
      for (const name of objectNames) {
        const full = `${name}.${literalName.value}`
        const match = ruleForName(full)
        if (match) this.#report(node, match.rule, `getattr(${name}, '${literalName.value}')`, [full])
        if (MODULE_ATTRIBUTES.has(literalName.value)) this.#report(node, 'module-escape', full, [full])
        if (CODE_RUNNERS.has(full))
          this.#report(node, 'dynamic-code', `getattr(${name}, '${literalName.value}')`, [full])
      }
      // getattr(something, 'system'): names that only ever mean running programs or importing.
      if (objectNames.length === 0 && FORBIDDEN_ATTRIBUTE.test(literalName.value)) {
        this.#report(node, 'dynamic-attribute', `getattr(…, '${literalName.value}')`)
      }
      return
    }
    const sensitive = objectNames.find(
      (name) => SENSITIVE_MODULES.has(name.split('.')[0] ?? '') || ruleForName(name),
    )
    if (sensitive) {
      this.#report(node, 'dynamic-attribute', `getattr(${sensitive}, <computed name>)`, [sensitive])
      return
    }
    // getattr(f, '__glo' + 'bals__'): a name assembled from pieces of a dunder.
    const pieces = attribute.descendantsOfType(['string_content'])
    if (pieces.some((piece) => piece?.text.includes('__'))) {
      this.#report(node, 'dunder', 'getattr() with a name built from pieces of a dunder name')
    }
  }

  #isFileCall(fn: Node, callee: Set<string>): boolean {
    for (const name of callee) {
      if (FILE_FUNCTIONS.has(name)) return true
      const dot = name.lastIndexOf('.')
      if (dot > 0 && FILE_FUNCTIONS.has(name.slice(0, dot + 1))) return true
      if (FILE_METHOD.test(name.slice(dot + 1))) return true
    }
    const last = fn.type === 'attribute' ? ident(fn.childForFieldName('attribute')) : ident(fn)
    return last !== undefined && FILE_METHOD.test(last)
  }

  /** The path arguments of a file function: positional ones, path keywords, and literal splats. */
  #checkPaths(args: Node[], keywords: Array<{ name: string; value: Node }>, argsNode: Node | null): void {
    const candidates: Array<{ node: Node; first: boolean }> = []
    args.forEach((arg, index) => {
      if (arg.type === 'list_splat') {
        // open(*['/etc/passwd'])
        const items = arg.namedChild(0)
        if (items && ['list', 'tuple'].includes(items.type)) {
          for (const item of items.namedChildren)
            if (item) candidates.push({ node: item, first: index === 0 })
        }
      } else candidates.push({ node: arg, first: index === 0 })
    })
    for (const keyword of keywords)
      if (PATH_KEYWORDS.has(keyword.name)) candidates.push({ node: keyword.value, first: true })
    // open(**{'file': '/etc/passwd'})
    for (const splat of argsNode?.namedChildren ?? []) {
      if (splat?.type !== 'dictionary_splat') continue
      for (const pair of splat.namedChild(0)?.type === 'dictionary'
        ? (splat.namedChild(0)?.namedChildren ?? [])
        : []) {
        const key = pair?.childForFieldName('key')
        const value = pair?.childForFieldName('value')
        const keyName = key ? stringValue(key) : undefined
        if (value && keyName?.complete && PATH_KEYWORDS.has(keyName.value))
          candidates.push({ node: value, first: true })
      }
    }
    for (const candidate of candidates) {
      for (const value of this.paths(candidate.node)) {
        if (!candidate.first && value.value === '/') continue // a separator, not a path
        const verdict = classifyPath(value.value, value.complete, this.policy)
        if (this.#reportPath(candidate.node, verdict, value)) break
      }
    }
  }

  #reportPath(node: Node, verdict: PathVerdict, value: StringValue): boolean {
    if (verdict.kind === 'ok') return false
    if (verdict.kind === 'network') return this.#report(node, 'network', `'${verdict.url}'`)
    const shown = value.complete ? verdict.path : `${verdict.path}…`
    const file = value.complete ? verdict.path.split('/').filter(Boolean).pop() : undefined
    let subject = `'${shown}' is outside the workspace`
    if (verdict.how === 'escape') subject = `'${shown}' climbs out of the workspace with '..'`
    if (file && /\.\w{1,5}$/.test(file) && verdict.how !== 'escape') {
      subject += ` (if it is an input file, it is at 'data/${file}')`
    }
    return this.#report(node, 'path', subject)
  }

  #string(node: Node): void {
    const value = stringValue(node)
    if (!value) return
    const payload = PICKLE_CALL.exec(value.text) ?? YAML_PYTHON_TAG.exec(value.text)
    if (payload) {
      this.#report(
        node,
        'dynamic-code',
        `a serialized payload that calls code (${JSON.stringify(payload[0].trim())})`,
      )
    }
    const match = INTERNAL_NAME_IN_TEXT.exec(value.text)
    if (match?.[1]) {
      const rule = INTERNAL_NAMES.get(match[1])
      if (rule) this.#report(node, rule, `'${match[1]}' in a string`)
    }
  }

  #import(node: Node): void {
    if (node.type === 'import_statement') {
      for (const name of node.childrenForFieldName('name')) {
        if (!name) continue
        const moduleNode = name.type === 'aliased_import' ? name.childForFieldName('name') : name
        const module = ident(moduleNode)
        const match = ruleForName(module)
        if (match && this.#report(name, match.rule, `import ${module}`, [module])) {
          const bound =
            name.type === 'aliased_import'
              ? ident(name.childForFieldName('alias'))
              : (module.split('.')[0] ?? '')
          this.#markFlagged(bound, match.entry)
        }
      }
      return
    }
    const moduleNode = node.childForFieldName('module_name')
    if (moduleNode?.type !== 'dotted_name') return // relative imports: the package is the user's own
    const module = ident(moduleNode)
    const names = node.childrenForFieldName('name').filter((name): name is Node => name !== null)
    const moduleMatch = ruleForName(module)
    if (moduleMatch && this.#report(moduleNode, moduleMatch.rule, `from ${module} import …`, [module])) {
      for (const name of names) this.#markFlagged(boundName(name), moduleMatch.entry)
      return
    }
    for (const name of names) {
      const imported = ident(name.type === 'aliased_import' ? name.childForFieldName('name') : name)
      const full = `${module}.${imported}`
      const match = ruleForName(full)
      if (match && this.#report(name, match.rule, `from ${module} import ${imported}`, [full])) {
        this.#markFlagged(boundName(name), match.entry)
      } else if (MODULE_ATTRIBUTES.has(imported) || PRIVATE_MODULE_ATTRIBUTES.has(imported)) {
        this.#report(name, 'module-escape', `from ${module} import ${imported}`, [full])
      }
    }
    if (node.descendantsOfType('wildcard_import').length > 0) {
      // from os import * brings os.system in under the name `system`.
      const inside = ruleForNameBelow(module)
      if (inside)
        this.#report(node, inside.rule, `from ${module} import * (brings in ${inside.entry})`, [inside.entry])
    }
  }

  #markFlagged(bound: string, entry: string): void {
    this.#reportedEntries.add(entry)
    for (const binding of this.bindings.get(bound) ?? [])
      if (binding.kind === 'import') binding.flagged.add(entry)
  }
}

function boundName(name: Node): string {
  return name.type === 'aliased_import' ? ident(name.childForFieldName('alias')) : ident(name)
}

/** A forbidden name under a module (os → os.system), for star imports. */
function ruleForNameBelow(module: string): { rule: RuleId; entry: string } | undefined {
  for (const candidate of [
    'system',
    'modules',
    '_getframe',
    'import_module',
    'currentframe',
    'get_objects',
  ]) {
    const match = ruleForName(`${module}.${candidate}`)
    if (match) return match
  }
  return undefined
}

function literal(value: string): StringValue {
  return { value, complete: true, text: value }
}

/** Cuts a value at the first `marker` (where formatting inserts unknown text). */
function cut(value: StringValue, marker: string): StringValue {
  const index = marker === '' ? 0 : value.value.indexOf(marker)
  if (index === -1) return value
  return { value: value.value.slice(0, index), complete: false, text: '' }
}

/** A cell that touches most of the checker, so that warmUp() leaves its code compiled by the JIT. */
const WARM_UP_CELL = `import os, pandas as pd
from pathlib import Path
reader = open
df = pd.read_csv(os.path.join('data', f'{name}.csv'))
df.query('a > 1').to_csv(Path('out') / 'x.csv')
getattr(df, 'shape'), type(df).__name__, eval('1 + 1')
`

/**
 * Loads the parser and runs the checker a few times, so that the first real check is fast: call it
 * at start-up. Otherwise the first check pays for loading the WASM parser (50–140 ms measured here)
 * and the next few for the JIT.
 */
export async function warmUp(): Promise<void> {
  for (let i = 0; i < 5; i++) await checkCode(WARM_UP_CELL)
}

/**
 * Checks Python code against the policy. Code that does not parse is checked as far as it parses
 * (tree-sitter recovers); the syntax error itself is not a violation, the sandbox reports it.
 */
export async function checkCode(code: string, policy: Partial<GuardPolicy> = {}): Promise<Violation[]> {
  const parser = await pythonParser()
  const resolved = resolvePolicy(policy)
  let tree = await parsePython(code)
  try {
    // IPython's escapes (!cmd, %magic), which the kernel runs: checked as what they do.
    const escapes = ipythonEscapes(code, tree)
    if (escapes) {
      tree.delete()
      tree = await parsePython(escapes.code)
    }
    const checker = new Checker(resolved, parser)
    checker.check(tree.rootNode)
    return [...shellEscapeViolations(escapes?.shell ?? [], resolved), ...checker.violations].sort(
      (a, b) => a.line - b.line || a.column - b.column,
    )
  } finally {
    tree.delete()
  }
}

/** A shell escape is a command run: the `process` rule's, unless the policy lets processes run. */
function shellEscapeViolations(escapes: readonly ShellEscape[], policy: GuardPolicy): Violation[] {
  if (policy.ignoreRules.includes('process') || under('subprocess', policy.allowModules)) return []
  return escapes.map((found) => ({
    rule: 'process' as const,
    line: found.line,
    column: found.column,
    message: `${found.text.length > 60 ? `${found.text.slice(0, 57)}...` : found.text} (IPython's shell escape): ${ADVICE.process}`,
  }))
}
