/**
 * The policy's content: which modules, functions and attributes each rule names, and what the
 * model is told to do instead.
 * @module
 */

export type RuleId =
  | 'network'
  | 'process'
  | 'ffi'
  | 'dynamic-import'
  | 'dynamic-code'
  | 'dunder'
  | 'frame'
  | 'sys-modules'
  | 'module-escape'
  | 'dynamic-attribute'
  | 'path'

export const RULE_IDS: readonly RuleId[] = [
  'network',
  'process',
  'ffi',
  'dynamic-import',
  'dynamic-code',
  'dunder',
  'frame',
  'sys-modules',
  'module-escape',
  'dynamic-attribute',
  'path',
]

/** What each rule tells the model, after naming what it found. */
export const ADVICE: Record<RuleId, string> = {
  network: "network is off in the sandbox: read the files under data/ instead (pd.read_csv('data/<name>'))",
  process:
    'running programs or shell commands is not allowed: do the work in Python (pandas, os.listdir, shutil, zipfile)',
  ffi: 'loading native code is not allowed: use numpy, pandas or scipy',
  'dynamic-import': 'dynamic imports are not allowed: write a plain import statement (import pandas as pd)',
  'dynamic-code':
    "running code built at run time is not allowed: write the code directly; for an expression over a DataFrame use df.eval('a + b') or df.query('a > 1')",
  dunder:
    "interpreter internals are off-limits: use the object's public API (type(x).__name__, isinstance() and vars(obj) are fine)",
  frame:
    'frame and traceback internals are off-limits: to show an error use traceback.format_exc(); to see a value, print it',
  'sys-modules':
    'the import system is off-limits: write a plain import statement (importlib.metadata.version() gives versions)',
  'module-escape':
    "reaching a module through another module's attributes is not allowed: import what you need directly",
  'dynamic-attribute':
    "looking up this module's attributes by a computed name is not allowed: use the attribute by its name (os.path.join, sys.version)",
  path: "input files are at data/<name> (read-only); write outputs in the working directory, e.g. 'out.csv'",
}

/**
 * Dotted names that a rule forbids, with everything under them: `subprocess` covers
 * `subprocess.run`. Matched against what an import brings in and against resolved references.
 */
const NAMES = new Map<string, RuleId>()

function add(rule: RuleId, names: readonly string[]): void {
  for (const name of names) NAMES.set(name, rule)
}

add('network', [
  'socket',
  '_socket',
  'ssl',
  '_ssl',
  'requests',
  'httpx',
  'urllib3',
  'urllib.request',
  'urllib.robotparser',
  'urllib.urlopen',
  'urllib.urlretrieve',
  'urllib2',
  'http.client',
  'http.server',
  'httplib',
  'aiohttp',
  'ftplib',
  'smtplib',
  'poplib',
  'imaplib',
  'nntplib',
  'telnetlib',
  'xmlrpc',
  'socketserver',
  'websocket',
  'websockets',
  'paramiko',
  'pycurl',
  'webbrowser',
  'asyncio.open_connection',
  'asyncio.open_unix_connection',
  'asyncio.start_server',
  'asyncio.start_unix_server',
  'yfinance',
  'pandas_datareader',
  'kaggle',
  'boto3',
  'botocore',
  'grpc',
  'selenium',
  'mechanize',
  'scapy',
  'pandas.io.common.urlopen',
  // Data set downloaders: a model's habit when it forgets the files it was given.
  ...[
    'fetch_openml',
    'fetch_california_housing',
    'fetch_20newsgroups',
    'fetch_20newsgroups_vectorized',
    'fetch_covtype',
    'fetch_kddcup99',
    'fetch_lfw_people',
    'fetch_lfw_pairs',
    'fetch_olivetti_faces',
    'fetch_rcv1',
    'fetch_species_distributions',
  ].map((name) => `sklearn.datasets.${name}`),
  'seaborn.load_dataset',
  'statsmodels.api.datasets.get_rdataset',
  'statsmodels.datasets.get_rdataset',
  'nltk.download',
  'datasets.load_dataset',
  'huggingface_hub',
  'kagglehub',
  'gdown',
  'wget',
])

const OS_PROCESS = [
  'system',
  'popen',
  'popen2',
  'popen3',
  'popen4',
  'fork',
  'forkpty',
  'posix_spawn',
  'posix_spawnp',
  'startfile',
  ...['l', 'le', 'lp', 'lpe', 'v', 've', 'vp', 'vpe'].flatMap((suffix) => [
    `exec${suffix}`,
    `spawn${suffix}`,
  ]),
]

add('process', [
  'subprocess',
  '_posixsubprocess',
  'pty',
  'pexpect',
  'sh',
  'plumbum',
  'commands',
  'popen2',
  'platform.popen',
  'asyncio.create_subprocess_exec',
  'asyncio.create_subprocess_shell',
  ...['os', 'posix', 'nt'].flatMap((module) => OS_PROCESS.map((name) => `${module}.${name}`)),
])

add('ffi', ['ctypes', '_ctypes', 'cffi', '_cffi_backend', 'cppyy', 'numpy.ctypeslib'])

add('dynamic-import', [
  'builtins.__import__',
  'importlib.import_module',
  'importlib.__import__',
  'importlib.reload',
  'importlib.util',
  'importlib.machinery',
  'importlib._bootstrap',
  'importlib._bootstrap_external',
  'imp',
  '_imp',
  '_frozen_importlib',
  '_frozen_importlib_external',
  'zipimport',
  'pkgutil.resolve_name',
  'pkgutil.get_loader',
  'pkgutil.find_loader',
  'pkgutil.get_importer',
  'pkgutil.ImpImporter',
  'pydoc.locate',
  'pydoc.importfile',
  'pydoc.safeimport',
])

add('dynamic-code', [
  'runpy',
  'code.interact',
  'code.InteractiveInterpreter',
  'code.InteractiveConsole',
  'code.compile_command',
  'codeop',
  'marshal.loads',
  'marshal.load',
])

add('frame', [
  'sys._getframe',
  'sys._current_frames',
  'sys._current_exceptions',
  'sys.settrace',
  'sys.setprofile',
  'inspect.currentframe',
  'inspect.stack',
  'inspect.trace',
  'inspect.getouterframes',
  'inspect.getinnerframes',
  'traceback.walk_stack',
  'gc.get_objects',
  'gc.get_referrers',
  'gc.get_referents',
])

add('sys-modules', ['sys.modules', 'sys.meta_path', 'sys.path_hooks', 'sys.path_importer_cache'])

/** The rule that forbids `name` or a dotted prefix of it, with the prefix that matched. */
export function ruleForName(name: string): { rule: RuleId; entry: string } | undefined {
  let end = name.length
  for (;;) {
    const prefix = name.slice(0, end)
    const rule = NAMES.get(prefix)
    if (rule) return { rule, entry: prefix }
    end = name.lastIndexOf('.', end - 1)
    if (end <= 0) return undefined
  }
}

/** Names forbidden only when called: checking `isinstance(f, types.FunctionType)` is fine. */
export const CALL_ONLY: ReadonlyMap<string, RuleId> = new Map(
  Object.entries({
    'types.FunctionType': 'dynamic-code',
    'types.CodeType': 'dynamic-code',
    'types.LambdaType': 'dynamic-code',
  }),
)

/** Functions that run code given as a string, and the names of the arguments that carry it, in order. */
export const CODE_STRING_ARGUMENTS: ReadonlyMap<string, readonly string[]> = new Map([
  ['timeit.timeit', ['stmt', 'setup']],
  ['timeit.repeat', ['stmt', 'setup']],
  ['timeit.Timer', ['stmt', 'setup']],
])

/**
 * Attribute names that only ever mean running programs, importing or walking frames: looked up by
 * string (operator.attrgetter('system'), getattr(m, 'popen')) they are reported whatever the object.
 */
export const FORBIDDEN_ATTRIBUTE =
  /^(system|popen[234]?|fork|forkpty|posix_spawnp?|exec[lv]p?e?|spawn[lv]p?e?|__import__|import_module|_getframe|_current_frames|currentframe|urlopen|urlretrieve|create_subprocess_(exec|shell))$/

/**
 * A pickle that imports a forbidden function: protocol 0 writes `cos\nsystem\n`, later protocols
 * the two names as short strings. Unpickling it calls the function.
 */
export const PICKLE_CALL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: pickles are binary; the separators are control bytes
  /(?:^|[^A-Za-z0-9_])c?(?:os|posix|nt|subprocess|builtins|__builtin__|socket|ctypes|importlib|sys|pty|runpy)[\n\x00-\x1f\x80-\xff]{1,3}(?:system|popen|exec[lv]?p?e?|spawn[lv]p?e?|eval|exec|compile|__import__|getattr|Popen|run|call|check_output|check_call|getoutput|socket|create_connection|CDLL|import_module|_getframe|modules)(?![A-Za-z0-9_])/

/** PyYAML tags that build Python objects or call functions (yaml.unsafe_load runs them). */
export const YAML_PYTHON_TAG = /!!python\/(?:object|name|module)/

/** Builtins that run a string as code: allowed only on a literal, whose code is checked too. */
export const CODE_RUNNERS = new Set(['builtins.eval', 'builtins.exec', 'builtins.compile'])

/** Attribute and variable names that walk the interpreter's internals, anywhere they appear. */
export const INTERNAL_NAMES: ReadonlyMap<string, RuleId> = new Map(
  Object.entries({
    __import__: 'dynamic-import',
    __builtins__: 'dunder',
    __subclasses__: 'dunder',
    __globals__: 'dunder',
    __mro__: 'dunder',
    __bases__: 'dunder',
    __base__: 'dunder',
    __code__: 'dunder',
    __closure__: 'dunder',
    __loader__: 'dynamic-import',
    __spec__: 'dynamic-import',
    __self__: 'dunder',
    func_globals: 'dunder',
    tb_frame: 'frame',
    f_globals: 'frame',
    f_locals: 'frame',
    f_builtins: 'frame',
    f_back: 'frame',
    gi_frame: 'frame',
    cr_frame: 'frame',
    ag_frame: 'frame',
  }),
)

/** The same names inside string literals ('{0.__globals__}'.format(f), getattr(f, '__globals__')). */
export const INTERNAL_NAME_IN_TEXT = new RegExp(
  `(?<![A-Za-z0-9_])(${[...INTERNAL_NAMES.keys()].join('|')})(?![A-Za-z0-9_])`,
)

/**
 * Modules whose attributes must not be looked up by a computed name (getattr(os, name), vars(os),
 * os.__dict__): a computed name can be any of the forbidden ones.
 */
export const SENSITIVE_MODULES = new Set([
  'os',
  'posix',
  'nt',
  'sys',
  'builtins',
  'importlib',
  'imp',
  'gc',
  'inspect',
  'types',
  'pydoc',
  'pkgutil',
  'code',
  'marshal',
  'shutil',
  'io',
  '_io',
  'platform',
  'asyncio',
])

/** Module names that, as an attribute of a module, hand out that module (os.sys, random._os). */
export const MODULE_ATTRIBUTES = new Set([
  'os',
  'sys',
  'subprocess',
  'builtins',
  'socket',
  'ctypes',
  'importlib',
  'posix',
  'nt',
  'pty',
  'marshal',
])

/** Private module aliases that are only ever a way around an import: flagged on any object. */
export const PRIVATE_MODULE_ATTRIBUTES = new Set([
  '_os',
  '_sys',
  '_socket',
  '_subprocess',
  '_posixsubprocess',
  '_ctypes',
  '_builtins',
  '_imp',
  '_bootstrap',
  '_bootstrap_external',
])

/**
 * Names a cell may use without importing them, because an earlier cell did: an unbound `os` in a
 * cell is the os module.
 */
export const CONVENTIONAL_ALIASES: ReadonlyMap<string, string> = new Map(
  Object.entries({
    np: 'numpy',
    pd: 'pandas',
    plt: 'matplotlib.pyplot',
    sns: 'seaborn',
    sm: 'statsmodels.api',
    smf: 'statsmodels.formula.api',
  }),
)

/**
 * Modules an unbound name is taken to be, because an earlier cell imported them: an unbound `os` in
 * a cell is the os module. Only modules the guard lets a cell import: a forbidden module cannot have
 * come from an earlier guarded cell, and a variable called `requests` is most likely a DataFrame.
 */
export const KNOWN_MODULES = new Set([
  ...[...SENSITIVE_MODULES].filter((name) => name !== 'code'), // `code` is a common variable name
  'pathlib',
  'glob',
  'tempfile',
  'zipfile',
  'tarfile',
  'gzip',
  'bz2',
  'lzma',
  'sqlite3',
  'codecs',
  'pickle',
  'json',
  'random',
  'traceback',
  'urllib',
  'http',
])

/**
 * Functions that open, list, change or remove files: their path arguments must stay in the
 * workspace. Qualified names; a trailing '.' covers the whole module.
 */
export const FILE_FUNCTIONS = new Set([
  'builtins.open',
  'io.open',
  'io.FileIO',
  '_io.open',
  '_io.FileIO',
  'codecs.open',
  'os.open',
  'os.listdir',
  'os.scandir',
  'os.walk',
  'os.fwalk',
  'os.stat',
  'os.lstat',
  'os.remove',
  'os.unlink',
  'os.rmdir',
  'os.removedirs',
  'os.mkdir',
  'os.makedirs',
  'os.rename',
  'os.renames',
  'os.replace',
  'os.chdir',
  'os.chmod',
  'os.chown',
  'os.lchown',
  'os.link',
  'os.symlink',
  'os.readlink',
  'os.truncate',
  'os.utime',
  'os.access',
  'os.mkfifo',
  'os.mknod',
  'os.chroot',
  'os.statvfs',
  'os.getxattr',
  'os.listxattr',
  'os.path.exists',
  'os.path.lexists',
  'os.path.isfile',
  'os.path.isdir',
  'os.path.islink',
  'os.path.getsize',
  'os.path.getmtime',
  'os.path.getatime',
  'os.path.getctime',
  'os.path.samefile',
  'shutil.',
  'glob.glob',
  'glob.iglob',
  'pathlib.Path',
  'pathlib.PurePath',
  'pathlib.PosixPath',
  'pathlib.PurePosixPath',
  'zipfile.ZipFile',
  'tarfile.open',
  'tarfile.TarFile',
  'gzip.open',
  'gzip.GzipFile',
  'bz2.open',
  'bz2.BZ2File',
  'lzma.open',
  'lzma.LZMAFile',
  'sqlite3.connect',
  'linecache.getline',
  'linecache.getlines',
  'fileinput.input',
  'shelve.open',
  'dbm.open',
  'filecmp.cmp',
  'filecmp.dircmp',
  'tempfile.',
])

/**
 * Method names that take a path whatever their object is: pandas' read_x and to_x, numpy's load/save,
 * matplotlib's savefig, PIL's open, pathlib's methods.
 */
export const FILE_METHOD =
  /^(read_\w+|to_\w+|open|extract|extractall|load|loadtxt|genfromtxt|fromfile|save|savez|savez_compressed|savetxt|tofile|memmap|savefig|imread|imsave|load_workbook|ExcelWriter|ExcelFile|HDFStore|connect|Path|joinpath|File|ZipFile|glob|rglob|copy|copy2|copyfile|copytree|move|rmtree|listdir|walk|scandir|makedirs|mkdir)$/

/** Keyword arguments that carry a path. */
export const PATH_KEYWORDS = new Set([
  'file',
  'filename',
  'fname',
  'path',
  'filepath',
  'filepath_or_buffer',
  'path_or_buf',
  'path_or_buffer',
  'excel_writer',
  'io',
  'src',
  'dst',
  'source',
  'destination',
  'dir',
  'root_dir',
  'base_dir',
  'database',
  'top',
])
