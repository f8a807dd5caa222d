/**
 * The kernel's environment on every engine: a clean one, plus what the caller passes. No host
 * variable enters but the few that only tune the CPU's math libraries (DESIGN.md, security layer 4).
 * @module
 */

/** Where matplotlib keeps its cache and config inside a sandbox (a private /tmp). */
export const MPL_CONFIG_DIR = '/tmp/.matplotlib'

/** Host variables that only tune the CPU's math libraries: no secrets, and numpy can crash without them. */
const PASSED_THROUGH =
  /^(OPENBLAS_CORETYPE|OPENBLAS_L2_SIZE|OPENBLAS_NUM_THREADS|OMP_NUM_THREADS|MKL_NUM_THREADS)$/

/** The kernel's whole environment: a clean one, plus the caller's. No other host variable enters. */
export function kernelEnv(
  home: string,
  callerEnvs: Record<string, string> = {},
  host: NodeJS.ProcessEnv = process.env,
  /** Folders of the engine's own programs, searched last (the local engine's `python`, where the system has only python3). */
  binDirs: string[] = [],
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: ['/usr/local/bin', '/usr/bin', '/bin', ...binDirs].join(':'),
    HOME: home,
    USER: 'user',
    LOGNAME: 'user',
    SHELL: '/bin/sh',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    TMPDIR: '/tmp',
    MPLBACKEND: 'module://analyst_mpl_backend',
    MPLCONFIGDIR: MPL_CONFIG_DIR,
    XDG_CACHE_HOME: '/tmp/.cache',
    XDG_CONFIG_HOME: '/tmp/.config',
    PYTHONDONTWRITEBYTECODE: '1',
  }
  for (const [key, value] of Object.entries(host)) {
    if (PASSED_THROUGH.test(key) && value !== undefined) env[key] = value
  }
  return { ...env, ...callerEnvs }
}
