/**
 * What the guard allows: the knobs of the policy, and the result type.
 * @module
 */
import type { RuleId } from './rules.js'

/** One thing the guard found, with what to do instead. */
export interface Violation {
  /** A stable id, one of RULE_IDS: 'network', 'process', 'path', … */
  rule: RuleId
  /** 1-based. */
  line: number
  /** 1-based, in characters (UTF-16 code units) from the start of the line. */
  column: number
  /** What was found and what the code should do instead, written for the model. */
  message: string
}

export interface GuardPolicy {
  /**
   * Dotted names the code may use although a rule forbids them, each with everything under it:
   * 'subprocess', 'os.system', 'requests'.
   * @default []
   */
  allowModules: string[]
  /**
   * The sandbox has network: network modules and URLs pass. Set it when the sandbox is created with
   * network access.
   * @default false
   */
  allowNetwork: boolean
  /**
   * The working directory inside the sandbox, also $HOME; input files are at `<workspace>/data/`.
   * The same on every engine (local, E2B).
   * @default '/home/user'
   */
  workspace: string
  /**
   * Absolute paths beside the workspace that code may open, each with everything under it.
   * @default ['/tmp', '/dev/null', '/dev/stdout', '/dev/stderr']
   */
  allowPaths: string[]
  /** Rule ids that are not checked. @default [] */
  ignoreRules: RuleId[]
}

export const DEFAULT_POLICY: Readonly<GuardPolicy> = Object.freeze({
  allowModules: [],
  allowNetwork: false,
  workspace: '/home/user',
  // /tmp is private to each sandbox; tempfile and matplotlib use it.
  allowPaths: ['/tmp', '/dev/null', '/dev/stdout', '/dev/stderr'],
  ignoreRules: [],
})

export function resolvePolicy(policy: Partial<GuardPolicy> = {}): GuardPolicy {
  const defined = Object.fromEntries(Object.entries(policy).filter(([, value]) => value !== undefined))
  return { ...DEFAULT_POLICY, ...defined }
}
