/**
 * The kernel's environment on every engine: a clean one, plus what the caller passes. No host
 * variable enters but the few that only tune the CPU's math libraries (DESIGN.md, security layer 4).
 * Where the kernel runs on this host, those libraries' threads are sized to the sandbox's CPUs.
 * @module
 */
import { availableParallelism } from 'node:os'

/** Where matplotlib keeps its cache and config inside a sandbox (a private /tmp). */
export const MPL_CONFIG_DIR = '/tmp/.matplotlib'

/**
 * What the math libraries size their thread pools by, each read when the library loads: OpenBLAS,
 * OpenMP (scipy, scikit-learn, Arrow), MKL, BLIS, numexpr (its pool, and the threads it uses),
 * joblib/loky (scikit-learn's n_jobs=-1) and polars. Unset, each starts a thread per host core,
 * each with its stack and buffers: dozens on a large host, whatever the sandbox's CPU quota.
 */
const THREAD_VARIABLES = [
  'OPENBLAS_NUM_THREADS',
  'OMP_NUM_THREADS',
  'MKL_NUM_THREADS',
  'BLIS_NUM_THREADS',
  'NUMEXPR_MAX_THREADS',
  'NUMEXPR_NUM_THREADS',
  'LOKY_MAX_CPU_COUNT',
  'POLARS_MAX_THREADS',
]

/** Host variables that only tune the CPU's math libraries: no secrets, and numpy can crash without them. */
const PASSED_THROUGH = new Set(['OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE', ...THREAD_VARIABLES])

/** Threads for a sandbox's CPU quota (thousandths of a core; 0: none): its CPUs rounded up, at most the host's cores. */
export function threadsFor(milliCpus: number, cores = availableParallelism()): number {
  return milliCpus > 0 ? Math.max(1, Math.min(cores, Math.ceil(milliCpus / 1000))) : cores
}

/** The kernel's whole environment: a clean one, plus the caller's. No other host variable enters. */
export function kernelEnv(
  home: string,
  callerEnvs: Record<string, string> = {},
  host: NodeJS.ProcessEnv = process.env,
  /** Folders of the engine's own programs, searched last (the local engine's `python`, where the system has only python3). */
  binDirs: string[] = [],
  /**
   * Threads the math libraries may start (`threadsFor`), where the kernel runs on this host; a
   * value that the host's environment or the caller gives wins.
   */
  threads?: number,
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
  if (threads !== undefined) for (const name of THREAD_VARIABLES) env[name] = String(threads)
  for (const [key, value] of Object.entries(host)) {
    if (PASSED_THROUGH.has(key) && value !== undefined) env[key] = value
  }
  return { ...env, ...callerEnvs }
}
