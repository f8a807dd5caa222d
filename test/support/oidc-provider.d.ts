declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'
  /** The few parts of oidc-provider's API the tests use (the package ships no types). */
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    proxy: boolean
    Grant: new (input: {
      clientId: string
      accountId: string
    }) => {
      addOIDCScope(scope: string): void
      addOIDCClaims(claims: string[]): void
      save(): Promise<string>
    }
    on(event: string, listener: (...args: unknown[]) => void): void
  }
}
