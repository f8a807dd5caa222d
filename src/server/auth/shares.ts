/**
 * Shares: a read-only link to a session for the instance's other users, revoked at once (the link
 * is looked up on every request). The view has the questions, steps, code, outputs, charts and
 * answers; the data files' profiles (their sample rows) and forking with the data only when the
 * owner allows it. "Continue from here" forks it into the caller's own session.
 * @module
 */
import { Hono } from 'hono'
import { z } from 'zod'
import { ForbiddenError, NotFoundError } from '../../errors.js'
import type { SessionService } from '../../session/index.js'
import { artifactResponse, dataFileResponse } from '../artifact-response.js'
import { jsonBody, parse } from '../request-body.js'
import type { SharedSessionView } from '../types.js'
import { sessionDetail } from '../views.js'
import { callingUser } from './caller.js'
import type { AuthEnv } from './routes.js'
import type { SignIn } from './signin.js'

const NewShare = z.object({ allowFiles: z.boolean().optional() }).strict()

function sharedArtifactUrl(shareId: string, name: string): string {
  return `/api/shared/${encodeURIComponent(shareId)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`
}

export function shareRoutes(signin: SignIn, service: SessionService): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>()
  const actorOf = (c: { get(key: 'identity'): AuthEnv['Variables']['identity'] }) => {
    const identity = c.get('identity')
    return identity && identity.via !== 'token' ? identity.user.id : identity?.owner
  }

  /** The share the route names; a revoked or unknown one is a 404. */
  const shareOf = async (shareId: string) => {
    const share = await signin.store.getShare(shareId)
    if (!share) throw new NotFoundError(`No shared session ${shareId} (the link may have been revoked)`)
    return share
  }

  app.post('/api/sessions/:id/share', async (c) => {
    const session = await service.getSession(c.req.param('id'), c.get('owner'))
    const body = parse(NewShare, await jsonBody(c))
    const actor = actorOf(c) ?? 'unknown'
    const share = await signin.store.share({
      sessionId: session.id,
      createdBy: actor,
      allowFiles: Boolean(body.allowFiles),
    })
    await signin.audit.record({
      action: 'share-created',
      actor,
      target: session.id,
      detail: { share: share.id, allowFiles: share.allowFiles },
    })
    return c.json(
      { id: share.id, url: `${signin.settings.publicUrl}/s/${share.id}`, allowFiles: share.allowFiles },
      201,
    )
  })

  app.delete('/api/sessions/:id/share', async (c) => {
    const session = await service.getSession(c.req.param('id'), c.get('owner'))
    if (!(await signin.store.unshare(session.id))) throw new NotFoundError('This session is not shared')
    await signin.audit.record({ action: 'share-revoked', actor: actorOf(c), target: session.id })
    return c.body(null, 204)
  })

  app.get('/api/shared/:shareId', async (c) => {
    const share = await shareOf(c.req.param('shareId'))
    const history = await service.sessionHistory(share.sessionId)
    const {
      datasets,
      blocked: _,
      ...detail
    } = sessionDetail(history, (name) => sharedArtifactUrl(share.id, name))
    const view: SharedSessionView = {
      share: { id: share.id, allowFiles: share.allowFiles, createdAt: share.createdAt },
      session: {
        ...detail,
        datasets: datasets.map((d) => (share.allowFiles ? d : { name: d.name, bytes: d.bytes })),
      },
    }
    return c.json(view)
  })

  app.get('/api/shared/:shareId/artifacts/*', async (c) => {
    const share = await shareOf(c.req.param('shareId'))
    const path = new URL(c.req.url).pathname
    const name = decodeURIComponent(path.slice(path.indexOf('/artifacts/') + '/artifacts/'.length))
    const { artifact, content } = await service.openArtifact(share.sessionId, name)
    return artifactResponse(artifact, content)
  })

  // The data files, only when the owner shared them.
  app.get('/api/shared/:shareId/files/:name', async (c) => {
    const share = await shareOf(c.req.param('shareId'))
    if (!share.allowFiles)
      throw new ForbiddenError('This session is shared without its data files', {
        hint: 'Ask its owner to share it with its data files allowed.',
      })
    const { dataset, content } = await service.openDataset(share.sessionId, c.req.param('name'))
    return dataFileResponse(dataset, content)
  })

  app.post('/api/shared/:shareId/fork', async (c) => {
    const share = await shareOf(c.req.param('shareId'))
    const datasets = await service.history.datasets(share.sessionId)
    if (datasets.length > 0 && !share.allowFiles)
      throw new ForbiddenError('This session is shared without its data files, so it cannot be continued', {
        hint: 'Ask its owner to share it with its data files allowed.',
      })
    const user = callingUser(c.get('identity'))
    const copy = await service.forkSession(share.sessionId, {
      owner: c.get('owner'),
      ...(user ? { user } : {}),
    })
    await signin.audit.record({
      action: 'share-forked',
      actor: actorOf(c),
      target: copy.id,
      detail: { share: share.id },
    })
    return c.json({ id: copy.id }, 201)
  })

  return app
}
