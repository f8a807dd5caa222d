/**
 * What an analysis reports while it works, as a union on `type`, in the order it happens. The CLI
 * and the server render these; `done` comes last and carries what `analyst ask --json` prints.
 * @module
 */
import type { Artifact, Execution, ExecutionError, Result } from '../sandbox/index.js'

export interface Usage {
  inputTokens: number
  outputTokens: number
  totalTokens: number
}

export interface Violation {
  rule: string
  line: number
  column: number
  message: string
}

/** One step that ran code (or tried to). */
export interface StepRecord {
  step: number
  code: string
  /** What the model wrote around the code. */
  text?: string
  /**
   * A call of a tool other than run_python (e.g. --modal-tool): its name and arguments; `code` shows
   * it as a comment, the execution holds what it returned (stdout) or why it failed (error).
   */
  tool?: { name: string; input: unknown }
  /** The execution as JSON; absent when the guard stopped the code. */
  execution?: ReturnType<Execution['toJSON']>
  artifacts: Artifact[]
  violations?: Violation[]
  durationMs: number
  /** Names the step's images were given (for the user), in the order of its image results. */
  images?: string[]
  /** Tokens of the model call that wrote this step's code. */
  usage?: Usage
  /**
   * The step's files and charts that could not be kept for the user, and why (the server's disk
   * full): set by whoever keeps the step (the session's recorder, as it handles `step-end`), and
   * told to the model before its next call. None of them is among `artifacts`.
   */
  refused?: RefusedFile[]
}

/** A file or chart of a step that was not kept for the user. */
export interface RefusedFile {
  name: string
  /** Why, in words the user and the model can read: "the server's disk is full (…)". */
  reason: string
}

/** The outcome of one question: the object `analyst ask --json` prints. */
export interface AskResult {
  answer: string
  /** True when the step cap ended the analysis before a final answer. */
  incomplete: boolean
  steps: StepRecord[]
  artifacts: Artifact[]
  /** Numbers in the answer that no output of the session contains. */
  unsupportedNumbers: string[]
  /** Up to three questions to ask next, written by the model with its answer (follow-ups.ts). */
  followUps?: string[]
  /** Tokens this question used. */
  usage: Usage
  sessionId: string
  model: string
}

export type AgentEvent =
  | { type: 'step-start'; step: number; maxSteps: number }
  | { type: 'model-text-delta'; step: number; delta: string }
  | { type: 'model-text'; step: number; text: string }
  | { type: 'code'; step: number; code: string; source: 'tool' | 'text' }
  | { type: 'guard'; step: number; violations: Violation[] }
  | { type: 'stdout'; step: number; text: string }
  | { type: 'stderr'; step: number; text: string }
  | { type: 'result'; step: number; result: Result }
  | { type: 'error'; step: number; error: ExecutionError }
  | { type: 'artifact'; step: number; artifact: Artifact }
  /** What the model was told about the step: the observation, or why nothing ran. */
  | { type: 'observation'; step: number; text: string }
  | { type: 'usage'; step: number; usage: Usage; total: Usage }
  /** A step that had code is over (ran, failed, or was stopped by the guard); committed to history here. */
  | { type: 'step-end'; step: number; record: StepRecord }
  | { type: 'answer'; text: string; incomplete: boolean; unsupportedNumbers: string[]; followUps?: string[] }
  | { type: 'done'; result: AskResult }
