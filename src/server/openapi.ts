/** The OpenAPI 3 description of the HTTP API, served at /openapi.json. */

const error = { $ref: '#/components/responses/Error' }
const sessionId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
/** The body of every error: what went wrong and what to do about it. */
const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }
/** A 503 for want of memory: said before any work starts (before an answer's stream). */
const noRoom = {
  $ref: '#/components/responses/Unavailable',
  description:
    "No room: the sandboxes use their memory budget (ANALYST_MEMORY_BUDGET) and none is idle to pause; the message names the caller's own sessions. Or the database is unreachable, or the server is shutting down. Retry-After says when to try again",
}

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Analyst',
    version: '0.1.0',
    description:
      'Ask questions about data files: a model writes Python, a sandbox runs it, the answer cites the numbers. ' +
      'When the server has tokens (ANALYST_TOKEN), every /api request needs `Authorization: Bearer <token>`; downloads also take `?token=`. ' +
      'Over a quota a request gets 429 with Retry-After and a message that names the limit.',
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Error: {
        type: 'object',
        properties: {
          error: {
            type: 'object',
            properties: {
              code: {
                type: 'string',
                description: 'The kind, for programs: unavailable (503), insufficient_storage (507), …',
              },
              message: { type: 'string' },
              hint: { type: 'string', description: 'What to do about it' },
            },
            required: ['message'],
          },
        },
      },
    },
    headers: {
      RetryAfter: {
        description: 'Seconds to wait before trying again',
        schema: { type: 'integer', minimum: 1 },
      },
    },
    responses: {
      Error: { description: 'An error, with what to do about it', content: errorContent },
      Unavailable: {
        description:
          'Not now, nothing was changed: the database that keeps sessions cannot be reached (restarting, stopped), or the server is shutting down; on a route that starts a sandbox, no room in the memory budget. Retry-After says when to try again (where it is known)',
        headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
        content: errorContent,
      },
      DiskFull: {
        description:
          "The server's disk (under ANALYST_HOME) is full: what was sent was not kept, and nothing is corrupted. Try again once its operator frees space",
        content: errorContent,
      },
    },
  },
  security: [{ bearer: [] }],
  paths: withFaultAnswers({
    '/healthz': {
      get: { summary: 'Liveness', security: [], responses: { 200: { description: '{ "ok": true }' } } },
    },
    '/readyz': {
      get: {
        summary: 'Readiness: the database reachable at this schema, the sandbox engine up, not draining',
        security: [],
        responses: {
          200: { description: '{ "ready": true, "checks": { name: "ok" } }' },
          503: { description: '{ "ready": false, "checks": { name: "ok" or what is wrong } }' },
        },
      },
    },
    '/metrics': {
      get: {
        summary:
          "Prometheus' text format: sessions, runs, queue, pool, sandboxes, cells, model, blocked, HTTP",
        security: [],
        responses: { 200: { description: 'text/plain; version=0.0.4' } },
      },
    },
    '/api/sessions': {
      get: {
        summary: 'Sessions of this token, newest first',
        responses: { 200: { description: 'SessionSummary[]' }, 401: error },
      },
      post: {
        summary: 'Create a session',
        requestBody: {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  title: { type: 'string' },
                  sources: {
                    type: 'array',
                    items: { type: 'string' },
                    description:
                      "Names from GET /api/sources that the session's sql() may query; left out: the server's defaults (its --data sources)",
                  },
                },
              },
            },
          },
        },
        responses: {
          201: { description: '{ "id": string, "sources": string[] }' },
          400: error,
          401: error,
          404: { ...error, description: 'A source that does not exist, or that this token may not use' },
        },
      },
    },
    '/api/sources': {
      get: {
        summary:
          'The sources this token may give a session: name, kind, whether it is a default, and its description (tables, columns, keys), or why it cannot be reached; never a URL or a password',
        responses: { 200: { description: 'SourceInfo[]' }, 401: error },
      },
    },
    '/api/templates': {
      get: {
        summary:
          'The templates built here, newest first: name, id, base, languages, Python, main packages and their versions, size',
        responses: { 200: { description: 'TemplateView[]' }, 401: error },
      },
      post: {
        summary:
          'Build a template: { name, spec (as a spec file holds it: base, apt, pip, env, run, workdir, start), force? }. Off unless the server runs with --allow-template-builds (403 otherwise); administrators only when sign-in is on. A spec may not name files on the server (files, pip requirements, local find-links, archive bases). Answers at once with the build; follow it at /api/templates/builds/{id}',
        requestBody: {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['name', 'spec'],
                properties: {
                  name: { type: 'string' },
                  spec: { type: 'object' },
                  force: { type: 'boolean' },
                },
              },
            },
          },
        },
        responses: {
          202: { description: 'TemplateBuildView' },
          400: error,
          403: error,
          409: error,
          429: error,
        },
      },
    },
    '/api/templates/{name}': {
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary: 'A template, by name or id',
        responses: { 200: { description: 'TemplateView' }, 404: error },
      },
      delete: {
        summary:
          'Remove a name (and the template, when no name is left on it); administrators only when sign-in is on',
        responses: { 204: { description: 'Removed' }, 403: error, 404: error },
      },
    },
    '/api/templates/builds/{id}': {
      parameters: [sessionId],
      get: {
        summary:
          "A build of the caller's: status (waiting, building, ready, error, cancelled), the step it runs, why it failed, and its log from ?logsOffset= (1,000 lines a page)",
        responses: { 200: { description: 'TemplateBuildView & { log, logsOffset }' }, 404: error },
      },
      delete: {
        summary: 'Cancel the build: its processes end and nothing of it is kept (409 when it had ended)',
        responses: { 204: { description: 'Cancelled' }, 404: error, 409: error },
      },
    },
    '/api/templates/builds/{id}/events': {
      parameters: [sessionId],
      get: {
        summary:
          'The build as server-sent events: its log so far, then each `log` line and `progress` (step, total, title) as they come, and `end` with the build',
        responses: { 200: { description: 'text/event-stream' }, 404: error },
      },
    },
    '/api/sessions/{id}': {
      parameters: [sessionId],
      get: {
        summary: 'A session: datasets, questions, steps, answers, status',
        responses: { 200: { description: 'SessionDetail' }, 404: error },
      },
      delete: {
        summary: 'Delete a session and its sandbox',
        responses: { 204: { description: 'Deleted' }, 404: error },
      },
    },
    '/api/sessions/{id}/files': {
      parameters: [sessionId],
      post: {
        summary: 'Upload a data file (multipart, field "file"); returns its profile',
        requestBody: {
          content: {
            'multipart/form-data': {
              schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' } } },
            },
          },
        },
        responses: { 201: { description: 'DatasetInfo' }, 400: error, 404: error, 413: error, 415: error },
      },
    },
    '/api/sessions/{id}/files/{name}': {
      parameters: [sessionId, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary: 'A data file of the session, as it was uploaded',
        responses: { 200: { description: 'The file' }, 404: error },
      },
    },
    '/api/sessions/{id}/ask': {
      parameters: [sessionId],
      post: {
        summary: 'Ask a question; the answer streams as server-sent events, ending with `done`',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  question: { type: 'string', minLength: 1 },
                  keepRunning: {
                    type: 'boolean',
                    description:
                      'The run goes on if the client disconnects; watch it again at /api/sessions/{id}/runs/{runId}/events',
                  },
                },
                required: ['question'],
              },
            },
          },
        },
        responses: {
          200: {
            description:
              "text/event-stream: run-start, step-start, model-text-delta, model-text, code, guard, stdout, stderr, result, error, artifact, observation, usage, step-end, answer, then done (the AskResult), failed, or stopped (POST /api/sessions/{id}/stop). A failure once the stream has begun (the disk full, the database gone) is a `failed` event with its message and hint; a step's file the server's disk could not keep is named in step-end's record.refused and told to the model",
          },
          400: error,
          404: error,
          429: error,
          503: noRoom,
        },
      },
    },
    '/api/sessions/{id}/cells': {
      parameters: [sessionId],
      post: {
        summary:
          "Run a person's cell in the session's kernel (the guard first), recorded as a run of its own and seen by the model at the next question; closing the request stops it",
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { code: { type: 'string', minLength: 1 } },
                required: ['code'],
              },
            },
          },
        },
        responses: {
          200: {
            description:
              'The run it was recorded as: { runId, violations (the guard refused it, nothing ran), error? { name, value } }; its output is in GET /api/sessions/{id}',
          },
          400: error,
          404: error,
          503: noRoom,
        },
      },
    },
    '/api/sessions/{id}/results/{resultId}/rows': {
      parameters: [sessionId, { name: 'resultId', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary:
          "A page of a DataFrame result as the session's kernel keeps it (its result's frame.id), sorted, filtered and searched there; format=csv, xlsx or parquet downloads the whole selection, streamed as it is made",
        parameters: [
          { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } },
          {
            name: 'sort',
            in: 'query',
            schema: { type: 'string' },
            description: '`col` ascending, `-col` descending',
          },
          {
            name: 'filter',
            in: 'query',
            schema: { type: 'string' },
            description: "A pandas DataFrame.query expression, run in the session's sandbox",
          },
          {
            name: 'search',
            in: 'query',
            schema: { type: 'string' },
            description: 'Rows with this text in any column',
          },
          { name: 'format', in: 'query', schema: { type: 'string', enum: ['csv', 'xlsx', 'parquet'] } },
        ],
        responses: {
          200: {
            description:
              '{ rows (after filter and search), offset, data: { column: values } }, or the file. While a cell runs in the session, its kernel starts (its cells replayed) or a download is being made, a client that accepts text/event-stream gets `waiting` at once ({ reason: cell, starting or download, message }; again each time the reason changes, and `answering` once nothing holds the kernel), then `answer` (that JSON) or `failed` (status, message, hint). Each grid of each client (its `Analyst-Client` header) has one waiting request: a newer one replaces it (409)',
          },
          400: error,
          404: error,
          410: error,
        },
      },
    },
    '/api/sessions/{id}/runs/{runId}/steps/{step}/results/{index}/chart': {
      parameters: [
        sessionId,
        { name: 'runId', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'step', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
        {
          name: 'index',
          in: 'path',
          required: true,
          schema: { type: 'integer', minimum: 0 },
          description: "The result's place among the step's results",
        },
      ],
      put: {
        summary:
          "Keep a person's edit of a chart drawn from its data (another mark, titles; an empty title hides it): the page draws it, shared pages show it, the exports carry its Vega-Lite spec. {} puts the chart back as it was drawn",
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                additionalProperties: false,
                properties: {
                  mark: { type: 'string', enum: ['bar', 'line', 'scatter', 'area'] },
                  title: { type: 'string', maxLength: 500 },
                  xTitle: { type: 'string', maxLength: 500 },
                  yTitle: { type: 'string', maxLength: 500 },
                },
              },
            },
          },
        },
        responses: {
          200: { description: '{ chartEdit: the edit kept, or null }' },
          400: error,
          404: error,
          409: error,
        },
      },
    },
    '/api/sessions/{id}/restart': {
      parameters: [sessionId],
      post: {
        summary:
          "Restart the session's kernel: its sandbox ends now, and the next question or cell rebuilds the state by replaying the session's cells that ran without error",
        responses: {
          200: { description: '{ replaying: the number of cells the next start replays }' },
          404: error,
          409: error,
        },
      },
    },
    '/api/sessions/{id}/kernel': {
      parameters: [sessionId],
      get: {
        summary:
          "Whether a kernel holds the session's state now (the web UI asks as a page comes back into view, so that its grids learn of a restart done in another browser). The kernel is not asked: a running cell does not hold the answer up",
        responses: {
          200: {
            description:
              '{ running: false when no kernel runs, or when another replica has answered in the session or restarted its kernel since this one did }',
          },
          404: error,
        },
      },
    },
    '/api/sessions/{id}/stop': {
      parameters: [sessionId],
      post: {
        summary:
          "Stop a question or a person's cell (the web UI's Stop): recorded as interrupted with the reason `Stopped.`, its running step kept with its output so far, the kernel interrupted with its state kept; the question's stream ends with a `stopped` event. Any replica takes it: the one that runs the session is told at once and answers. A closed connection ends a run too, with a reason of its own",
        requestBody: {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  runId: {
                    type: 'string',
                    description: 'The run to stop; left out, every question and cell of the session',
                  },
                },
              },
            },
          },
        },
        responses: {
          200: {
            description:
              "{ stopped, pending? }: stopped, how many runs it stopped, on this replica and on the one that runs the session once it answered (0: they had ended); pending: true when that replica did not answer within 1.5 s (its stop stays asked until it hears it or renews the session's lease, for one lease's length)",
          },
          400: error,
          404: error,
        },
      },
    },
    '/api/sessions/{id}/variables': {
      parameters: [sessionId],
      get: {
        summary:
          "The session's kernel's variables: name, type, and a frame's or array's shape and memory (bytes); [] when its kernel is not running",
        responses: { 200: { description: '[{ name, type, shape?, bytes?, length? }]' }, 404: error },
      },
    },
    '/api/sessions/{id}/results/{resultId}/columns': {
      parameters: [sessionId, { name: 'resultId', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary:
          "Each column's type, nulls, and a 10-bin histogram (numbers) or its top values, over the rows that sort, filter and search select",
        responses: {
          200: { description: '{ rows, columns: { name: stats } }; waits for a running cell as rows does' },
          400: error,
          404: error,
          410: error,
        },
      },
    },
    '/api/sessions/{id}/runs/{runId}/events': {
      parameters: [sessionId, { name: 'runId', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary:
          'A run as it goes, from any replica: its committed steps, then each new one, then its end (Last-Event-ID or ?after= resumes after a step)',
        responses: {
          200: { description: 'text/event-stream: step (id: the step id), then run-end (the RunView)' },
          404: error,
        },
      },
    },
    '/api/sessions/{id}/artifacts/{name}': {
      parameters: [sessionId, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary: 'A file or chart the session produced',
        responses: { 200: { description: 'The file' }, 404: error },
      },
    },
    '/api/sessions/{id}/export': {
      parameters: [
        sessionId,
        {
          name: 'format',
          in: 'query',
          required: true,
          schema: { type: 'string', enum: ['ipynb', 'py', 'html'] },
        },
      ],
      get: {
        summary: 'The session as a notebook, a script or an HTML report',
        responses: { 200: { description: 'The export' }, 400: error, 404: error },
      },
    },
    // Sign-in (when ANALYST_OIDC_ISSUER is set): a cookie authorizes too, with X-CSRF-Token on writes.
    '/auth/login': {
      get: {
        summary: 'Starts signing in at the identity provider (?next= a path of this server)',
        security: [],
        responses: { 302: { description: 'To the provider' } },
      },
    },
    '/auth/logout': {
      post: {
        summary: 'Signs the browser out',
        responses: { 200: { description: '{ redirect }' }, 401: error },
      },
    },
    '/api/me': {
      get: {
        summary: 'Who is signed in: { user: { id, name, email, groups, admin }, csrfToken }',
        responses: { 200: { description: 'The user' }, 401: error },
      },
    },
    '/api/keys': {
      get: { summary: "The caller's API keys, without secrets", responses: { 200: { description: 'Keys' } } },
      post: {
        summary: 'A new API key { label, expiresInDays? }: its secret is in this answer only',
        responses: { 201: { description: '{ id, key, label, expiresAt }' }, 400: error, 403: error },
      },
    },
    '/api/keys/{id}': {
      parameters: [sessionId],
      delete: { summary: 'Revokes a key', responses: { 204: { description: 'Revoked' }, 404: error } },
    },
    '/api/sessions/{id}/share': {
      parameters: [sessionId],
      post: {
        summary: 'Shares the session read-only by link { allowFiles? }',
        responses: { 201: { description: '{ id, url }' }, 404: error },
      },
      delete: { summary: 'Stops sharing it', responses: { 204: { description: 'Revoked' }, 404: error } },
    },
    '/api/shared/{shareId}': {
      parameters: [{ name: 'shareId', in: 'path', required: true, schema: { type: 'string' } }],
      get: {
        summary: 'A shared session, read-only',
        responses: { 200: { description: 'SharedSessionView' }, 404: error },
      },
    },
    '/api/shared/{shareId}/files/{name}': {
      parameters: [
        { name: 'shareId', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
      ],
      get: {
        summary: 'A data file of a shared session, as uploaded (only when its owner allowed the data files)',
        responses: { 200: { description: 'The file' }, 403: error, 404: error },
      },
    },
    '/api/shared/{shareId}/fork': {
      parameters: [{ name: 'shareId', in: 'path', required: true, schema: { type: 'string' } }],
      post: {
        summary: "Continues a shared session as one of the caller's (when its data files are allowed)",
        responses: { 201: { description: '{ id }' }, 403: error, 404: error },
      },
    },
    '/api/admin/users': {
      get: {
        summary: 'Users and what they use (admins)',
        responses: { 200: { description: 'Users' }, 403: error },
      },
    },
    '/api/admin/users/{id}/disable': {
      parameters: [sessionId],
      post: {
        summary: 'Disables a user: their keys and browser sessions stop at once (admins; /enable undoes it)',
        responses: { 200: { description: 'The user' }, 403: error, 404: error },
      },
    },
    '/api/admin/users/{id}/sessions': {
      parameters: [sessionId],
      get: {
        summary: "A user's sessions by title, questions and dates, not their content (admins)",
        responses: { 200: { description: 'Sessions' }, 403: error, 404: error },
      },
    },
    '/api/admin/sessions': {
      get: {
        summary: "Sessions no user owns yet (an ANALYST_TOKEN token's, or nobody's), to assign (admins)",
        responses: {
          200: { description: '[{ id, title, owner: { token } | null, createdAt, updatedAt, questions }]' },
          403: error,
        },
      },
    },
    '/api/admin/sessions/{id}/assign': {
      parameters: [sessionId],
      post: {
        summary: "Gives a token's session to a user: { userId } (admins; a user's own session is a 409)",
        responses: { 200: { description: '{ id, userId }' }, 403: error, 404: error, 409: error },
      },
    },
    '/api/admin/audit': {
      get: {
        summary: 'The audit log, newest first (admins; ?limit=, ?actor=)',
        responses: { 200: { description: 'Entries' }, 403: error },
      },
    },
  }),
} as const

/**
 * Every /api operation with the fault answers it can give: each reads the store (sign-in's users
 * too), so the database unreachable is a 503 with Retry-After; each can write (a new record, or the
 * requests-per-minute quota's count), so the disk full is a 507. An operation's own description of
 * a status (the memory budget's 503) is kept.
 */
function withFaultAnswers<const P extends Record<string, object>>(paths: P): P {
  const faults = {
    503: { $ref: '#/components/responses/Unavailable' },
    507: { $ref: '#/components/responses/DiskFull' },
  }
  const methods = new Set(['get', 'put', 'post', 'delete', 'patch'])
  return Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      path.startsWith('/api/')
        ? Object.fromEntries(
            Object.entries(item).map(([key, operation]) => [
              key,
              methods.has(key)
                ? {
                    ...operation,
                    responses: { ...faults, ...(operation as { responses: object }).responses },
                  }
                : operation,
            ]),
          )
        : item,
    ]),
  ) as P
}
