/**
 * The store's specification: what every implementation (SQLite now, PostgreSQL next) keeps and
 * gives back, in the spirit of the AI SDK's provider spec. Two seams:
 *
 * - `HistoryStore`: sessions, their datasets, runs (one per question), steps, artifacts, blocked
 *   attempts and the conversation as the model saw it. Async, so a networked database fits.
 * - `BlobStore`: file contents (uploads, data files, charts, files the code saved), addressed by
 *   their SHA-256 and streamed in and out, never held whole in memory.
 *
 * The record types are the store's own: the HTTP API builds its views from them (src/server), the
 * exports read them (src/store/export). Nothing here knows HTTP.
 * @module
 */
import type { Readable } from 'node:stream'
import type { DatasetProfile } from '../data/index.js'

export interface TokenUsage {
  inputTokens: number
  outputTokens: number
  totalTokens: number
}

/** A rule the guard applied (the agent's `Violation`, kept as data). */
export interface ViolationRecord {
  rule: string
  line: number
  column: number
  message: string
}

export type SessionStatus = 'idle' | 'running' | 'interrupted'
export type RunStatus = 'running' | 'done' | 'failed' | 'interrupted'

/** A session: a conversation about some data. */
export interface StoredSession {
  id: string
  title: string
  /** Who may see it (a hash of the token that made it); null: everyone on this machine. */
  owner: string | null
  /** The model spec it was last asked with. */
  model?: string
  /** The host's sources it queries with sql(), by name (none: the door's own, if any). */
  sources?: string[]
  /** The template its sandbox starts from, by name or id (none: the engine's default environment). */
  template?: string
  /**
   * The id of the built template `template` pointed at when the session was made: its cells replay
   * in that build even after the name moves to a newer one. Absent: no template, an engine's own
   * (E2B's names), or a session made before ids were recorded.
   */
  templateId?: string
  /** The language its cells are in (`python`, `r`); absent for sessions made before it was recorded. */
  language?: string
  status: SessionStatus
  /** ISO 8601. */
  createdAt: string
  updatedAt: string
  /** Questions asked so far. */
  questions: number
}

/** A data file of a session: its content is a blob, readable by code at `data/<name>`. */
export interface StoredDataset {
  name: string
  bytes: number
  /** The blob with the file's content; absent only for datasets recorded before blobs (see `sourcePath`). */
  sha256?: string
  /** Where the file was on the host when it was added (older records: the only copy). */
  sourcePath?: string
  profile: DatasetProfile
  createdAt: string
}

/** A run: the handling of one question, from the question to its answer. */
export interface StoredRun {
  id: string
  sessionId: string
  /** 1, 2, 3… within the session. */
  seq: number
  question: string
  answer?: string
  /** Questions to ask next that the model suggested with its answer. */
  followUps?: string[]
  incomplete: boolean
  unsupportedNumbers: string[]
  status: RunStatus
  /** Why a failed or interrupted run ended without an answer. */
  error?: string
  startedAt: string
  finishedAt?: string
  usage: TokenUsage
}

/** One result of a step as stored: text and table data; an image is an artifact, named here. */
export interface StoredResult {
  isMainResult: boolean
  text?: string
  /** A table as { column: values }. */
  data?: Record<string, unknown[]>
  /** Structured chart data, where the kernel extracted it. */
  chart?: unknown
  /** A DataFrame the kernel keeps whole, by this id, for paging (until it restarts). */
  frame?: { id: string; rows: number; columns: number }
  /** The name of the image artifact of the same step. */
  image?: string
  /** A person's edit of the chart (the web UI's chart tools): what it is drawn and exported as. */
  chartEdit?: StoredChartEdit
}

/** A chart as a person shaped it: another mark, titles (an empty title hides it). */
export interface StoredChartEdit {
  mark?: 'bar' | 'line' | 'scatter' | 'area'
  title?: string
  xTitle?: string
  yTitle?: string
}

/** A query a step's sql() ran on one of the host's sources. */
export interface StoredQuery {
  source: string
  query: string
  rows: number
  durationMs: number
  /** Where a cap stopped it, and what it said. */
  truncated?: { by: 'rows' | 'bytes'; limit: number; message: string }
  /** Why it failed, if it did. */
  error?: string
}

export interface StepInput {
  step: number
  code: string
  /** What the model wrote around the code. */
  text?: string
  /** A call of a tool other than run_python: `code` shows it as a comment, its files are the step's. */
  tool?: { name: string; input: unknown }
  stdout: string
  stderr: string
  error?: { name: string; value: string; traceback: string }
  results: StoredResult[]
  violations?: ViolationRecord[]
  /** The queries its sql() calls ran, in order. */
  queries?: StoredQuery[]
  durationMs: number
  usage?: TokenUsage
  /** Why it did not end: it was running when its run was stopped or cut off (its output so far is kept). */
  stopped?: string
}

/** A step: one cell the model wrote and the sandbox ran (or the guard stopped). */
export interface StoredStep extends StepInput {
  id: number
  runId: string
  sessionId: string
  /** Ran without an error and was not stopped. */
  success: boolean
  createdAt: string
}

export type ArtifactKind = 'file' | 'image'

export interface ArtifactInput {
  name: string
  kind: ArtifactKind
  mimeType: string
  size: number
  sha256: string
}

/** A chart or a file a step produced; its content is a blob. */
export interface StoredArtifact extends ArtifactInput {
  id: number
  sessionId: string
  stepId: number | null
  createdAt: string
}

export interface BlockedInput {
  source: 'guard' | 'sandbox'
  /** The guard's rule, or the kind of sandbox limit (network, filesystem, memory, time, processes…). */
  rule: string
  message: string
}

/** Something the guard or the sandbox stopped, recorded for operators. */
export interface StoredBlocked extends BlockedInput {
  /** Which question (its seq) and step, when known. */
  question?: number
  step?: number
  at: string
}

export interface RunOutcome {
  answer: string
  /** Kept at the end of the answer's text (follow-ups.ts): no column of their own. */
  followUps?: string[]
  incomplete: boolean
  unsupportedNumbers: string[]
  usage: TokenUsage
}

/** A step with what it made and what was stopped, committed together: a crash keeps all or none. */
export interface StepCommit {
  runId: string
  sessionId: string
  step: StepInput
  /** Their blobs must be in the blob store before the commit. */
  artifacts: ArtifactInput[]
  blocked: BlockedInput[]
}

/** What asking for a session's lease found: it is ours now, or another replica holds it. */
export type LeaseGrant =
  | {
      acquired: true
      /** Who held it before (null: nobody ever did). Another replica may have changed the session since. */
      previous: string | null
      /** Runs that a lapsed holder left running, marked interrupted now. */
      interrupted: number
      /** When it was taken, in ms by the database's clock: Stops asked before are not this holding's. */
      atMs: number
    }
  | { acquired: false; holder: string; expiresInMs: number }

/** What a token uses now, for quotas. */
export interface OwnerUsage {
  sessions: number
  /** Runs being answered, on every replica. */
  runningRuns: number
  /** Bytes of the data files of its sessions. */
  dataBytes: number
}

/** What an owner has asked, for the admin page: runs, and the tokens they took by model. */
export interface OwnerActivity {
  runs: number
  /** Per model of the sessions (null: the server's default), most tokens first. */
  tokens: Array<{ model: string | null; runs: number } & TokenUsage>
}

export interface HistoryStore {
  readonly specificationVersion: 'v1'
  /** e.g. `sqlite`. */
  readonly provider: string
  /** Whether several processes on several machines use it at once (PostgreSQL), not one file (SQLite). */
  readonly shared: boolean

  createSession(input: {
    id?: string
    title: string
    owner?: string | null
    model?: string
    sources?: string[]
    template?: string
    templateId?: string
    language?: string
  }): Promise<StoredSession>
  /** The session, if it exists and (when `owner` is given) belongs to that owner. */
  getSession(id: string, owner?: string | null): Promise<StoredSession | undefined>
  /**
   * `read`, given a store that sees one moment of the history over one connection: what another
   * replica commits meanwhile shows all or not at all (a run that has ended, with every step it
   * committed before), and a read of several tables needs no more connections than one. `read`
   * uses only the store it is given (SQLite's one connection is held until it ends).
   */
  snapshot<T>(read: (store: HistoryStore) => Promise<T>): Promise<T>
  /** Newest first. */
  listSessions(options?: { owner?: string | null; limit?: number }): Promise<StoredSession[]>
  /** The one session whose id starts with `prefix` (and that `owner` may see); undefined when none or several. */
  resolveSessionId(prefix: string, owner?: string | null): Promise<string | undefined>
  updateSession(
    id: string,
    changes: { status?: SessionStatus; title?: string; model?: string },
  ): Promise<void>
  /**
   * Gives the session to `to`, only while it still belongs to `from` (two admins at once cannot
   * both move it); false when it does not.
   */
  changeSessionOwner(id: string, from: string | null, to: string): Promise<boolean>
  /** Removes the session and everything recorded for it (blobs stay: other sessions may share them). */
  deleteSession(id: string): Promise<void>
  /**
   * After a crash: runs still marked running become interrupted; returns how many. With `lapsed`,
   * only those of sessions whose lease has lapsed (their replica died), so that live replicas'
   * runs go on.
   */
  markInterrupted(options?: { lapsed?: boolean }): Promise<number>

  // Replicas: one holder of a session's lease at a time answers its questions.
  /** Takes the session's lease for `ttlMs` if it is free, lapsed, or already `holder`'s. */
  acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<LeaseGrant>
  /** Extends a lease `holder` holds; false when it lapsed and another took it. */
  renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>
  releaseLease(sessionId: string, holder: string): Promise<void>
  /** Who holds, or last held, each session's lease. */
  leaseHolders(sessionIds: string[]): Promise<Map<string, string>>

  // Quotas, counted over every replica.
  ownerUsage(owner: string | null): Promise<OwnerUsage>
  /** Every run of `owner`'s sessions, and their tokens by model (not on the request path). */
  ownerActivity(owner: string | null): Promise<OwnerActivity>
  /** Counts one request of `owner` in the minute `minute` (ms since the epoch / 60 000); returns the count. */
  countRequest(owner: string, minute: number): Promise<number>
  /** Throws when the database cannot be reached or its schema is not the one this Analyst knows. */
  checkReady(): Promise<void>

  /** Adds a data file, or replaces the one of the same name. */
  putDataset(sessionId: string, dataset: Omit<StoredDataset, 'createdAt'>): Promise<void>
  datasets(sessionId: string): Promise<StoredDataset[]>

  startRun(sessionId: string, question: string): Promise<StoredRun>
  finishRun(runId: string, outcome: RunOutcome): Promise<void>
  failRun(runId: string, error: string, status?: 'failed' | 'interrupted'): Promise<void>
  runs(sessionId: string): Promise<StoredRun[]>

  /** Records a step with its artifacts and blocked attempts in one transaction; returns the step's id. */
  commitStep(commit: StepCommit): Promise<number>
  steps(sessionId: string): Promise<StoredStep[]>
  /**
   * Keeps a person's edit of a chart with the step's result `index` (none: the chart as it was
   * drawn); false when the session has no such step or result.
   */
  setChartEdit(sessionId: string, stepId: number, index: number, edit?: StoredChartEdit): Promise<boolean>
  artifacts(sessionId: string): Promise<StoredArtifact[]>
  blocked(sessionId: string): Promise<StoredBlocked[]>

  /** The model's conversation, appended as the runs end. */
  appendMessages(sessionId: string, messages: unknown[]): Promise<void>
  messages(sessionId: string): Promise<unknown[]>

  close(): Promise<void>
}

export interface BlobInfo {
  sha256: string
  size: number
}

/** Where a blob's content comes from: a stream, bytes, or a file on this machine. */
export type BlobSource = Readable | AsyncIterable<Uint8Array> | Uint8Array | { path: string }

export interface BlobStore {
  readonly specificationVersion: 'v1'
  readonly provider: string
  /** Stores the content once (by its SHA-256); streams it, never holding it whole. */
  put(source: BlobSource, options?: { maxBytes?: number; signal?: AbortSignal }): Promise<BlobInfo>
  /** The content as a stream, or undefined when there is no such blob. */
  get(sha256: string): Promise<Readable | undefined>
  stat(sha256: string): Promise<BlobInfo | undefined>
  /**
   * A file on this machine with the content, where the store keeps blobs as files (a sandbox can
   * then mount it without a copy); undefined for stores that do not.
   */
  localPath?(sha256: string): string | undefined
  /**
   * Forgets up to `limit` blobs that writers killed mid-put left half-written (no reader ever saw
   * one), never a live writer's; how many (serve's start). For stores that can tell the two apart.
   */
  forgetPartialBlobs?(limit: number): Promise<number>
  close?(): Promise<void>
}

/** A session with everything recorded for it, assembled from the records (see history.ts). */
export interface SessionHistory {
  session: StoredSession
  datasets: StoredDataset[]
  runs: Array<StoredRun & { steps: HistoryStep[] }>
  blocked: StoredBlocked[]
}

/** A step with its artifacts, and each image result joined to its artifact. */
export interface HistoryStep extends Omit<StoredStep, 'results'> {
  /** Files the step saved (not its charts). */
  files: StoredArtifact[]
  results: Array<Omit<StoredResult, 'image'> & { image?: StoredArtifact }>
}

// ------------------------------------------------------------------ evaluations (a separate seam)

export type EvalRunStatus = 'running' | 'done' | 'interrupted'

/** A run of a benchmark: which set, which model, how; its questions' results are kept beside it. */
export interface StoredEvalRun {
  id: string
  /** Where the set was read (its folder). */
  dataset: string
  /** The model spec it runs with. */
  model: string
  /** How it runs (the question ids, the mode, the step cap…), as the harness chose. */
  settings: Record<string, unknown>
  status: EvalRunStatus
  /** Time spent running, summed over every invocation (a resumed run adds to it). */
  elapsedMs: number
  createdAt: string
  updatedAt: string
}

/** One question of an eval run: `running` while it is asked (or when the run was killed), then `done`. */
export interface EvalResultInput {
  questionId: number
  status: 'running' | 'done'
  /** The session the question was asked in. */
  sessionId?: string
  correct: boolean
  /** The harness's own record of the result (sub-answers, answer, tokens…), kept as JSON. */
  detail: unknown
}

export interface StoredEvalResult extends EvalResultInput {
  runId: string
  updatedAt: string
}

/** Where eval runs and their results are kept; implemented by the stores that keep history. */
export interface EvalStore {
  readonly specificationVersion: 'v1'
  createEvalRun(input: {
    id?: string
    dataset: string
    model: string
    settings: Record<string, unknown>
  }): Promise<StoredEvalRun>
  getEvalRun(id: string): Promise<StoredEvalRun | undefined>
  /** The one run whose id starts with `prefix`; undefined when none or several. */
  resolveEvalRunId(prefix: string): Promise<string | undefined>
  /** Newest first. */
  listEvalRuns(options?: { limit?: number }): Promise<StoredEvalRun[]>
  updateEvalRun(id: string, changes: { status?: EvalRunStatus; elapsedMs?: number }): Promise<void>
  /** Records a question's result, replacing the one recorded before for the same question. */
  putEvalResult(runId: string, result: EvalResultInput): Promise<void>
  /** By question id. */
  evalResults(runId: string): Promise<StoredEvalResult[]>
}

// ------------------------------------------------------------------ template builds

export type TemplateBuildStatus = 'waiting' | 'building' | 'ready' | 'error' | 'cancelled'

/** One line of a build's log. */
export interface TemplateBuildLogLine {
  /** ISO 8601. */
  timestamp: string
  level: 'debug' | 'info' | 'warn' | 'error'
  message: string
  /** The builder's number of the step it belongs to. */
  step?: number
}

/** A template build as every replica reads it. */
export interface StoredTemplateBuild {
  id: string
  /** The name the template gets. */
  name: string
  owner: string | null
  status: TemplateBuildStatus
  /** The replica that runs it; undefined while it is only requested (E2B's POST /v3/templates). */
  replica?: string
  /** How long ago its replica last said it was alive, by the database's clock; undefined before it started. */
  beatMsAgo?: number
  cancelRequested: boolean
  progress?: { step: number; total: number; title: string }
  reason?: { message: string; step?: number }
  /** What a client sees of the template it made. */
  template?: Record<string, unknown>
  /** What the request carried for its build (E2B's resources). */
  request?: Record<string, unknown>
  /** ISO 8601. */
  createdAt: string
  finishedAt?: string
}

/** What the replica that runs a build changes of it; `finished` stamps the end. */
export interface TemplateBuildChanges {
  status?: TemplateBuildStatus
  progress?: StoredTemplateBuild['progress']
  reason?: StoredTemplateBuild['reason']
  template?: Record<string, unknown>
  finished?: boolean
}

/**
 * Where template builds and their logs are kept, so that any replica over the same database
 * answers a build's status, pages its log and passes on its cancel; the replica that runs it
 * writes (its log in batches) and beats.
 */
export interface TemplateBuildStore {
  readonly specificationVersion: 'v1'
  /**
   * Records a build: taken by `replica`, or only requested (no replica yet). One build of a name is
   * under way at a time over every replica: taking a second throws a ConflictError. With
   * `maxWaiting`, a build taken while that many wait already over every replica is refused with a
   * RateLimitError, counted and written at once (two replicas cannot both pass the cap).
   */
  createTemplateBuild(input: {
    id: string
    name: string
    owner: string | null
    replica?: string
    request?: Record<string, unknown>
    maxWaiting?: number
  }): Promise<StoredTemplateBuild>
  /**
   * Takes a requested build for `replica`; false when it was not requested, or another took it; a
   * ConflictError when another build of its name is under way; a RateLimitError as
   * createTemplateBuild's past `maxWaiting`.
   */
  claimTemplateBuild(id: string, replica: string, maxWaiting?: number): Promise<boolean>
  /** How many builds that a replica took wait for their turn, over every replica. */
  countWaitingTemplateBuilds(): Promise<number>
  getTemplateBuild(id: string): Promise<StoredTemplateBuild | undefined>
  updateTemplateBuild(id: string, changes: TemplateBuildChanges): Promise<void>
  /** Adds lines at offsets `from`, `from + 1`, …; lines there already are kept (a retried batch). */
  appendTemplateBuildLog(id: string, from: number, lines: TemplateBuildLogLine[]): Promise<void>
  /** Up to `limit` lines from `offset` on. */
  templateBuildLog(id: string, offset: number, limit: number): Promise<TemplateBuildLogLine[]>
  /** Asks the replica that runs the build to stop it; false when it has ended. */
  requestTemplateBuildCancel(id: string): Promise<boolean>
  /** `replica` is alive and runs these builds: their heartbeats now; returns those a client asked to cancel. */
  beatTemplateBuilds(replica: string, ids: string[]): Promise<string[]>
  /** Fails the builds under way whose replica has not beaten for `lapseMs` (its process is gone), with `reason`. */
  failLapsedTemplateBuilds(lapseMs: number, reason: string): Promise<number>
  /** Forgets builds that ended, or were requested and never started, before `before` (ISO 8601). */
  forgetTemplateBuilds(before: string): Promise<number>
}

/** A file kept for templates: the tar of an E2B COPY step's files, or a built template's export. */
export interface StoredTemplateFile {
  key: string
  /** The template name of an export. */
  name?: string
  size: number
  sha256: string
  /** When it was kept, by the database's clock. */
  createdAt: string
}

/**
 * Files that templates need on every replica, kept in the shared database in chunks (never whole
 * in memory): a COPY's upload reaches the replica that builds, a template's export the replica
 * that starts a sandbox in it.
 */
export interface TemplateFileStore {
  readonly specificationVersion: 'v1'
  /**
   * Keeps the content under `key`, over a file there; with `name`, the file of that name (another
   * key's) goes. Throws a TooLargeError past `maxBytes`, keeping nothing.
   */
  putTemplateFile(
    key: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: { name?: string; maxBytes?: number },
  ): Promise<StoredTemplateFile>
  statTemplateFile(key: string): Promise<StoredTemplateFile | undefined>
  /** The content, checked against its SHA-256 as it is read (the stream fails if it differs); undefined when none. */
  readTemplateFile(key: string): Promise<Readable | undefined>
  /** The file kept under a name (a template's export). */
  namedTemplateFile(name: string): Promise<StoredTemplateFile | undefined>
  /** Removes the files whose key starts with `prefix` kept before `before` (ISO 8601, the database's clock); how many. */
  forgetTemplateFiles(prefix: string, before: string): Promise<number>
  /**
   * Removes the chunks of at most `limit` files whose writer died mid-file (a replica killed while
   * it shared a template); a file being written stays. No reader ever sees one. How many went.
   */
  forgetPartialTemplateFiles(limit: number): Promise<number>
  /** Milliseconds since the epoch by the database's clock, which stamps `createdAt`: the replicas' clocks may differ. */
  databaseTimeMs(): Promise<number>
}

// ------------------------------------------------------------------ users and sign-in (a separate seam)

/** A person who signed in through the identity provider (OpenID Connect). */
export interface StoredUser {
  id: string
  /** The provider's issuer and the user's `sub` there: who they are, whatever their email becomes. */
  issuer: string
  subject: string
  name: string
  email?: string
  groups: string[]
  /** In one of ANALYST_OIDC_ADMIN_GROUPS at their last sign-in. */
  admin: boolean
  /** A disabled user's keys and browser sessions stop working at once. */
  disabled: boolean
  createdAt: string
  lastSeenAt?: string
}

/** A signed-in browser: the cookie holds a secret, the store keeps only its SHA-256. */
export interface StoredBrowserSession {
  /** SHA-256 (hex) of the cookie's secret. */
  hash: string
  userId: string
  /** Sent back in X-CSRF-Token on state-changing requests the cookie authorizes. */
  csrfToken: string
  /** The ID token, for RP-initiated logout (`id_token_hint`). */
  idToken?: string
  createdAt: string
  lastUsedAt: string
  /** ISO 8601: the absolute end, whatever the use. */
  expiresAt: string
}

/** A personal API key; its secret is shown once and kept only as a SHA-256. */
export interface StoredApiKey {
  id: string
  userId: string
  label: string
  createdAt: string
  lastUsedAt?: string
  expiresAt?: string
}

/** A read-only link to a session, for the instance's signed-in users. */
export interface StoredShare {
  id: string
  sessionId: string
  /** Whether the viewers may download the session's data files. */
  allowFiles: boolean
  createdBy: string
  createdAt: string
}

export interface AuditInput {
  /** sign-in, sign-in-refused, sign-out, key-created, key-revoked, share-created, share-revoked, user-disabled… */
  action: string
  /** The user who did it, if known. */
  actor?: string
  /** What it was done to (a user, key, session or share id). */
  target?: string
  detail?: Record<string, unknown>
}

export interface StoredAudit extends AuditInput {
  id: number
  at: string
}

/**
 * A change to what a secret signs in as: an API key revoked (`key`, its id); a user disabled,
 * enabled or refreshed at sign-in (`user`, their id); a browser session ended (`session`, its
 * hash). `all`: changes may have been missed (another replica's, while the feed was down).
 */
export type AuthChange = { kind: 'key' | 'user' | 'session'; id: string } | { kind: 'all' }

/** How a copy of sign-in state (the server's identity cache) learns that it went stale. */
export interface AuthChanges {
  /**
   * Calls `listener` after each change: this process's as it commits, and (PostgreSQL) other
   * replicas' as they commit. Returns the unsubscribe.
   */
  subscribe(listener: (change: AuthChange) => void): () => void
  /** False while other replicas' changes could go unseen (the feed is reconnecting): keep no copy then. */
  readonly live: boolean
}

/** Where users, browser sessions, API keys, shares and the audit log are kept; beside the history. */
export interface AuthStore {
  readonly specificationVersion: 'v1'
  /** Every change that ends or alters a key, a user's access or a browser session, as it commits. */
  readonly changes: AuthChanges

  /** Creates the user at their first sign-in; later sign-ins refresh name, email, groups and admin. */
  upsertUser(input: {
    issuer: string
    subject: string
    name: string
    email?: string
    groups: string[]
    admin: boolean
  }): Promise<StoredUser>
  getUser(id: string): Promise<StoredUser | undefined>
  /** Oldest first. */
  listUsers(): Promise<StoredUser[]>
  /** Disabling also ends the user's browser sessions. False when there is no such user. */
  setUserDisabled(id: string, disabled: boolean): Promise<boolean>

  /** A sign-in under way, kept until the provider sends the browser back (any replica may take it). */
  putLoginAttempt(hash: string, data: Record<string, string>, expiresAt: string): Promise<void>
  /** The attempt, removed as it is read (a replayed callback finds nothing); undefined when expired. */
  takeLoginAttempt(hash: string): Promise<Record<string, string> | undefined>

  createBrowserSession(session: Omit<StoredBrowserSession, 'createdAt' | 'lastUsedAt'>): Promise<void>
  /** The browser session and its user, whatever their state (the caller checks expiry and disabled). */
  getBrowserSession(hash: string): Promise<{ session: StoredBrowserSession; user: StoredUser } | undefined>
  touchBrowserSession(hash: string, at: string): Promise<void>
  deleteBrowserSession(hash: string): Promise<void>

  /** `hash` is the SHA-256 of the secret (unique). */
  createApiKey(input: {
    userId: string
    label: string
    hash: string
    expiresAt?: string
  }): Promise<StoredApiKey>
  /** The key whose secret has this hash, and its user; revoked keys are gone. */
  findApiKey(hash: string): Promise<{ key: StoredApiKey; user: StoredUser } | undefined>
  /** Newest first; no secrets. */
  listApiKeys(userId: string): Promise<StoredApiKey[]>
  /** Only the user's own key; false when they have none of that id. */
  revokeApiKey(userId: string, id: string): Promise<boolean>
  touchApiKey(id: string, at: string): Promise<void>

  /** The session's share, made if it has none (one link per session; `allowFiles` updated). */
  share(input: { sessionId: string; createdBy: string; allowFiles: boolean }): Promise<StoredShare>
  getShare(id: string): Promise<StoredShare | undefined>
  /** Removes the session's link; false when it had none. */
  unshare(sessionId: string): Promise<boolean>

  appendAudit(entry: AuditInput): Promise<StoredAudit>
  /** Newest first. */
  audit(options?: { limit?: number; actor?: string }): Promise<StoredAudit[]>
}

/** A Stop asked on one replica for a run that may be on another (replicas over PostgreSQL). */
export interface StopRequest {
  id: string
  sessionId: string
  /** The run to stop; null: whatever runs in the session when the request is heard. */
  runId: string | null
  /** The replica that asked. */
  from: string
  /** The replica that held the session's lease when it was asked (null: none did): the one the asker waits for. */
  holder: string | null
  /** When it was asked, on the database's clock: a run that took the session's lease after is not stopped by it. */
  requestedAt: number
}

/** What a replica hears of Stops: a request, or that the holder answered one. */
export type StopNotice = { type: 'request'; request: StopRequest } | { type: 'answer'; id: string }

/**
 * Stops across replicas: a request is kept in the database and told to every replica at once
 * (PostgreSQL's NOTIFY); the replica that holds the session stops its run and answers, or finds
 * the request when it renews its lease, if it heard nothing. A request expires after its `ttlMs`.
 */
export interface StopRequests {
  /** Records a request and tells every replica; says which replica holds the session now. */
  request(input: {
    sessionId: string
    runId: string | null
    from: string
    ttlMs: number
  }): Promise<StopRequest>
  /** Adds how many runs a replica stopped for it; `holder`: the replica holding the session answers. */
  answer(id: string, stopped: number, options: { holder: boolean }): Promise<void>
  /** How many it stopped once its holder answered; undefined while it has not. */
  answered(id: string): Promise<number | undefined>
  /** The session's requests its holder has not answered, asked at or after `sinceMs` (the database's clock), not expired. */
  pending(sessionId: string, sinceMs: number): Promise<StopRequest[]>
  /** Forgets expired requests; how many. */
  forgetExpired(): Promise<number>
  /** Each notice heard, as it comes (other replicas' and this one's). Returns the unsubscribe. */
  subscribe(listener: (notice: StopNotice) => void): () => void
  /** False while notices could go unheard (the listening connection is down): read the store then. */
  readonly live: boolean
}
