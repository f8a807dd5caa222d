/**
 * A PEP 503 package index on 127.0.0.1 serving wheels the test made, for pip steps in builds.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

/** A tiny pure-Python package, built into a wheel with the host's pip. */
export function buildWheel(dir: string, name: string, version: string): string {
  const project = join(dir, `${name}-${version}-src`)
  mkdirSync(join(project, name), { recursive: true })
  writeFileSync(join(project, name, '__init__.py'), `VERSION = ${JSON.stringify(version)}\n`)
  writeFileSync(
    join(project, 'pyproject.toml'),
    `[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "${name}"\nversion = "${version}"\n`,
  )
  const wheels = join(dir, 'wheels')
  mkdirSync(wheels, { recursive: true })
  // No build isolation: no index to fetch setuptools from; the host's is used.
  execFileSync(
    '/usr/bin/python3',
    ['-m', 'pip', 'wheel', '--no-build-isolation', '--no-deps', '--quiet', '-w', wheels, project],
    {
      env: { PATH: '/usr/bin:/bin', HOME: dir, PIP_DISABLE_PIP_VERSION_CHECK: '1' },
    },
  )
  return wheels
}

export interface PackageIndex {
  url: string
  close(): Promise<void>
}

/** Serves every wheel in `wheels` as a PEP 503 simple index at <url> (…/simple). */
export async function servePackageIndex(wheels: string): Promise<PackageIndex> {
  const normalize = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-')
  const files = () =>
    readdirSync(wheels)
      .filter((file) => file.endsWith('.whl'))
      .map((file) => ({ file, project: normalize(file.split('-')[0] as string) }))
  const server: Server = createServer((request, response) => {
    const path = decodeURIComponent((request.url ?? '/').split('?')[0] as string)
    const html = (body: string) => {
      response.writeHead(200, { 'content-type': 'text/html' })
      response.end(`<!DOCTYPE html><html><body>${body}</body></html>`)
    }
    if (path === '/simple/') {
      const projects = [...new Set(files().map((f) => f.project))]
      return html(projects.map((p) => `<a href="/simple/${p}/">${p}</a>`).join('\n'))
    }
    const project = /^\/simple\/([^/]+)\/$/.exec(path)?.[1]
    if (project) {
      const links = files().filter((f) => f.project === normalize(project))
      if (links.length === 0) {
        response.writeHead(404)
        return response.end()
      }
      return html(
        links
          .map(({ file }) => {
            const sha = createHash('sha256')
              .update(readFileSync(join(wheels, file)))
              .digest('hex')
            return `<a href="/files/${file}#sha256=${sha}">${file}</a>`
          })
          .join('\n'),
      )
    }
    const file = /^\/files\/([^/]+\.whl)$/.exec(path)?.[1]
    if (file && files().some((f) => f.file === file)) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' })
      return response.end(readFileSync(join(wheels, file)))
    }
    response.writeHead(404)
    response.end()
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/simple`,
    close: () => new Promise((done) => server.close(() => done())),
  }
}
