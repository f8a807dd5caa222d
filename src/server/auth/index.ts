/**
 * Teams: sign-in with the company's identity provider (OpenID Connect), users, their browser
 * sessions and API keys, shares of sessions, the admin API and the audit log.
 * @module
 */
export { callingUser } from './caller.js'
export { type SignInSettings, signInSettingsFromEnv } from './config.js'
export { type AuthEnv, signInRoutes, userOf, userView } from './routes.js'
export { hashSecret, newSecret, ownerOf, sameSecret } from './secrets.js'
export { shareRoutes } from './shares.js'
export {
  type AuthVariables,
  bearerOf,
  type Identity,
  SignIn,
  type SignInOptions,
  safeNext,
  userOwner,
} from './signin.js'
