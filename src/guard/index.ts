/**
 * The guard: a static check of model-written Python, with a real Python parser (tree-sitter).
 * Advisory: it gives the model fast, specific feedback and stops the obvious; the sandbox is the
 * boundary.
 * @module
 */
export { checkCode, warmUp } from './check.js'
export { type FileReport, formatViolations } from './format.js'
export { DEFAULT_POLICY, type GuardPolicy, type Violation } from './policy.js'
export { RULE_IDS, type RuleId } from './rules.js'
