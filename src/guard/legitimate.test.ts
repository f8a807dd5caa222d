/**
 * The guard must not get in the way of ordinary analysis: every snippet here is code a model writes
 * for a data question, and every one must pass with no violation. Each snippet is also compiled by
 * real CPython, so the corpus holds only real Python.
 */
import { beforeAll, describe, expect, test } from 'vitest'
import { syntaxErrors } from '../../test/guard/python.js'
import { checkCode } from './index.js'
import { parsePython } from './parser.js'

const pandas = [
  `import pandas as pd\ndf = pd.read_csv('data/titanic.csv')\ndf.head()`,
  `import pandas as pd\ndf = pd.read_csv('data/abalone.csv')\nprint(df.shape)\nprint(df.dtypes)`,
  `df = pd.read_csv('data/insurance.csv')\ndf.describe(include='all')`,
  `df.isna().sum().sort_values(ascending=False)`,
  `df['Age'] = df['Age'].fillna(df['Age'].median())\ndf['Age'].isna().sum()`,
  `df = df.dropna(subset=['Fare', 'Embarked']).reset_index(drop=True)`,
  `df['Date'] = pd.to_datetime(df['Date'], format='%d/%m/%Y')\ndf = df.set_index('Date').sort_index()`,
  `monthly = df['Close'].resample('M').mean()\nmonthly.tail(12)`,
  `df['returns'] = df['Close'].pct_change()\ndf['rolling'] = df['returns'].rolling(30).std() * (252 ** 0.5)`,
  `df.groupby('Sex')['Survived'].mean().round(3)`,
  `df.groupby(['Pclass', 'Sex']).agg(count=('Survived', 'size'), rate=('Survived', 'mean'))`,
  `pd.pivot_table(df, values='charges', index='region', columns='smoker', aggfunc='mean')`,
  `pd.crosstab(df['Pclass'], df['Survived'], normalize='index')`,
  `merged = pd.merge(left, right, on='id', how='left', validate='one_to_one')\nmerged.shape`,
  `combined = pd.concat([a, b], ignore_index=True)\ncombined.drop_duplicates(inplace=True)`,
  `df['bmi_cat'] = pd.cut(df['bmi'], bins=[0, 18.5, 25, 30, 100], labels=['under', 'normal', 'over', 'obese'])`,
  `df['q'] = pd.qcut(df['charges'], 4, labels=False)`,
  `df.value_counts('region', normalize=True)`,
  `df['name'].str.extract(r',\\s*([^\\.]+)\\.')[0].value_counts().head()`,
  `df['url'].str.startswith('/api').sum()`,
  `df['path'].str.split('/').str[-1].value_counts()`,
  `df.columns = [c.strip().lower().replace(' ', '_') for c in df.columns]`,
  `df = df.rename(columns={'Unnamed: 0': 'id'}).astype({'id': 'int64'})`,
  `df.select_dtypes(include='number').corr(method='pearson')`,
  `df.melt(id_vars=['country'], var_name='year', value_name='gdp')`,
  `wide = long.pivot(index='country', columns='year', values='gdp')`,
  `df.sort_values(['year', 'gdp'], ascending=[True, False]).groupby('year').head(3)`,
  `df['rank'] = df.groupby('continent')['lifeExp'].rank(ascending=False)`,
  `df.loc[df['Fare'] > df['Fare'].quantile(0.99), 'Fare'] = df['Fare'].quantile(0.99)`,
  `df.iloc[:, 1:4].apply(lambda col: col.max() - col.min())`,
  `df.assign(total=lambda d: d['a'] + d['b']).nlargest(5, 'total')`,
  `out = df.pipe(lambda d: d[d['year'] >= 2000]).reset_index(drop=True)`,
  `df['weekday'] = df['Date'].dt.day_name()\ndf.groupby('weekday').size()`,
  `s = pd.Series([1, 2, 3], index=['a', 'b', 'c'])\ns.to_dict()`,
  `df.to_csv('cleaned.csv', index=False)`,
  `df.to_excel('summary.xlsx', sheet_name='summary', index=False)`,
  `df.to_json('records.json', orient='records', indent=2)`,
  `df.to_html('table.html')`,
  `with pd.ExcelWriter('report.xlsx') as writer:\n    df.to_excel(writer, sheet_name='all')\n    df.describe().to_excel(writer, sheet_name='stats')`,
  `xl = pd.ExcelFile('data/book.xlsx')\nsheets = {name: xl.parse(name) for name in xl.sheet_names}`,
  `import io\ntext = "a,b\\n1,2\\n3,4"\npd.read_csv(io.StringIO(text))`,
  `df = pd.read_csv('data/beauty and the labor market.csv', sep=',', na_values=['..', 'NA'])`,
  `pd.read_csv('/home/user/data/tree.csv', usecols=['tree_id', 'dbh'])`,
  `chunks = pd.read_csv('data/2015.csv', chunksize=1000)\ntotal = sum(len(chunk) for chunk in chunks)`,
  `df.info(memory_usage='deep')`,
  `pd.set_option('display.max_columns', 50)\npd.set_option('display.width', 200)`,
]

const numpy = [
  `import numpy as np\na = np.arange(12).reshape(3, 4)\na.sum(axis=0)`,
  `np.random.seed(42)\nx = np.random.normal(0, 1, size=1000)\nx.mean(), x.std()`,
  `rng = np.random.default_rng(0)\nsample = rng.choice(df.index, size=100, replace=False)`,
  `np.percentile(df['charges'], [25, 50, 75])`,
  `np.corrcoef(df['age'], df['charges'])[0, 1]`,
  `weights = np.linalg.lstsq(X, y, rcond=None)[0]`,
  `np.where(df['Age'] < 18, 'child', 'adult')`,
  `np.log1p(df['income']).describe()`,
  `cov = np.cov(np.vstack([x, y]))\neigvals, eigvecs = np.linalg.eig(cov)`,
  `np.save('array.npy', a)\nb = np.load('array.npy')`,
  `np.savetxt('matrix.txt', a, delimiter=',', fmt='%d')`,
  `data = np.genfromtxt('data/test_x.csv', delimiter=',', skip_header=1)`,
  `counts, edges = np.histogram(x, bins=20)`,
  `np.clip(a, 0, 10).astype(np.float32)`,
  `z = (x - x.mean()) / x.std(ddof=1)\nnp.abs(z) > 3`,
  `np.unique(labels, return_counts=True)`,
]

const scipy = [
  `from scipy import stats\nstats.ttest_ind(a, b, equal_var=False)`,
  `from scipy import stats\nr, p = stats.pearsonr(df['x'], df['y'])\nprint(f'r={r:.3f}, p={p:.3g}')`,
  `from scipy.stats import spearmanr, kendalltau\nspearmanr(x, y)`,
  `import scipy.stats as st\nst.shapiro(df['residuals'])`,
  `stats.chi2_contingency(pd.crosstab(df['a'], df['b']))`,
  `stats.mannwhitneyu(g1, g2, alternative='two-sided')`,
  `stats.f_oneway(*[group['y'].values for _, group in df.groupby('g')])`,
  `stats.kruskal(*groups)`,
  `stats.zscore(df['value'])`,
  `from scipy.optimize import curve_fit\n\ndef model(t, a, b):\n    return a * np.exp(b * t)\n\nparams, cov = curve_fit(model, t, y, p0=(1, 0.1))`,
  `from scipy.optimize import minimize\nres = minimize(lambda w: ((X @ w - y) ** 2).sum(), x0=np.zeros(3))`,
  `from scipy.interpolate import interp1d\nf = interp1d(x, y, kind='cubic')`,
  `from scipy.signal import find_peaks\npeaks, _ = find_peaks(series, height=0.5)`,
  `from scipy.cluster.hierarchy import linkage, fcluster\nZ = linkage(X, 'ward')\nlabels = fcluster(Z, 3, criterion='maxclust')`,
  `stats.norm.ppf(0.975)`,
  `stats.linregress(df['year'], df['value'])`,
]

const statsmodels = [
  `import statsmodels.api as sm\nX = sm.add_constant(df[['age', 'bmi']])\nmodel = sm.OLS(df['charges'], X).fit()\nprint(model.summary())`,
  `import statsmodels.formula.api as smf\nsmf.ols('charges ~ age + bmi + C(smoker)', data=df).fit().params`,
  `smf.logit('Survived ~ Age + C(Sex) + C(Pclass)', data=df).fit(disp=0).summary2()`,
  `from statsmodels.tsa.seasonal import seasonal_decompose\nresult = seasonal_decompose(series, model='additive', period=12)`,
  `from statsmodels.tsa.arima.model import ARIMA\nfit = ARIMA(series, order=(1, 1, 1)).fit()\nfit.forecast(12)`,
  `from statsmodels.tsa.stattools import adfuller\nstat, p, *_ = adfuller(series.dropna())`,
  `from statsmodels.stats.multicomp import pairwise_tukeyhsd\npairwise_tukeyhsd(df['y'], df['group'])`,
  `from statsmodels.stats.outliers_influence import variance_inflation_factor\n[variance_inflation_factor(X.values, i) for i in range(X.shape[1])]`,
  `sm.stats.anova_lm(smf.ols('y ~ C(g)', data=df).fit(), typ=2)`,
  `from statsmodels.stats.proportion import proportions_ztest\nproportions_ztest([30, 45], [100, 110])`,
]

const sklearn = [
  `from sklearn.model_selection import train_test_split\nX_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)`,
  `from sklearn.linear_model import LinearRegression\nreg = LinearRegression().fit(X_train, y_train)\nreg.score(X_test, y_test)`,
  `from sklearn.ensemble import RandomForestClassifier\nclf = RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=2)\nclf.fit(X_train, y_train)`,
  `from sklearn.metrics import classification_report, confusion_matrix\nprint(classification_report(y_test, pred))`,
  `from sklearn.metrics import mean_squared_error, r2_score\nrmse = mean_squared_error(y_test, pred) ** 0.5`,
  `from sklearn.preprocessing import StandardScaler, OneHotEncoder\nscaler = StandardScaler()\nXs = scaler.fit_transform(X)`,
  `from sklearn.compose import ColumnTransformer\nfrom sklearn.pipeline import Pipeline\npre = ColumnTransformer([('num', StandardScaler(), num_cols), ('cat', OneHotEncoder(handle_unknown='ignore'), cat_cols)])\npipe = Pipeline([('pre', pre), ('model', LogisticRegression(max_iter=1000))])`,
  `from sklearn.cluster import KMeans\nkm = KMeans(n_clusters=3, n_init=10, random_state=0).fit(Xs)\ndf['cluster'] = km.labels_`,
  `from sklearn.decomposition import PCA\npca = PCA(n_components=2)\ncoords = pca.fit_transform(Xs)\npca.explained_variance_ratio_`,
  `from sklearn.model_selection import cross_val_score, KFold\nscores = cross_val_score(clf, X, y, cv=KFold(5, shuffle=True, random_state=1))`,
  `from sklearn.model_selection import GridSearchCV\nsearch = GridSearchCV(clf, {'max_depth': [3, 5, None]}, cv=3).fit(X, y)\nsearch.best_params_`,
  `from sklearn.impute import SimpleImputer\nimp = SimpleImputer(strategy='median')\nX = imp.fit_transform(X)`,
  `from sklearn.neighbors import KNeighborsClassifier\nknn = KNeighborsClassifier(n_neighbors=5).fit(X_train, y_train)`,
  `importances = pd.Series(clf.feature_importances_, index=X.columns).sort_values(ascending=False)`,
  `import pickle\nwith open('model.pkl', 'wb') as f:\n    pickle.dump(clf, f)`,
  `import joblib\njoblib.dump(clf, 'model.joblib')\nclf2 = joblib.load('model.joblib')`,
]

const plotting = [
  `import matplotlib.pyplot as plt\nplt.plot(df['year'], df['value'])\nplt.title('Value by year')\nplt.savefig('value.png', dpi=150)`,
  `fig, ax = plt.subplots(figsize=(8, 5))\ndf['Age'].hist(bins=30, ax=ax)\nax.set_xlabel('Age')\nfig.tight_layout()\nplt.show()`,
  `fig, axes = plt.subplots(2, 2, figsize=(10, 8))\nfor ax, col in zip(axes.flat, ['a', 'b', 'c', 'd']):\n    ax.boxplot(df[col].dropna())\n    ax.set_title(col)`,
  `import seaborn as sns\nsns.histplot(data=df, x='charges', hue='smoker', kde=True)`,
  `sns.heatmap(df.corr(numeric_only=True), annot=True, fmt='.2f', cmap='coolwarm')\nplt.savefig('corr.png', bbox_inches='tight')`,
  `sns.boxplot(x='day', y='total_bill', data=df)`,
  `sns.scatterplot(data=df, x='gdpPercap', y='lifeExp', hue='continent', size='pop')\nplt.xscale('log')`,
  `g = sns.pairplot(df[['a', 'b', 'c']])\ng.savefig('pairs.png')`,
  `sns.regplot(x='age', y='charges', data=df, scatter_kws={'alpha': 0.3})`,
  `ax = df.plot(kind='bar', x='region', y='charges', legend=False)\nax.figure.savefig('bar.png')`,
  `plt.figure(figsize=(12, 4))\nplt.plot(series.index, series.values, label='observed')\nplt.legend()\nplt.grid(True, alpha=0.3)`,
  `fig = plt.figure()\nax = fig.add_subplot(projection='3d')\nax.scatter(x, y, z)`,
  `plt.pie(counts, labels=counts.index, autopct='%1.1f%%')`,
  `import matplotlib\nmatplotlib.rcParams['figure.dpi'] = 120\nplt.close('all')`,
  `sns.set_theme(style='whitegrid')\nsns.lineplot(data=df, x='year', y='value', hue='country')`,
  `plt.savefig('/tmp/scratch.png')\nimg = plt.imread('value.png')`,
]

const evalQuery = [
  `df.eval('bmi = weight / (height / 100) ** 2', inplace=True)`,
  `df.query('age > 30 and smoker == "yes"')`,
  `threshold = 100\ndf.query('charges > @threshold')`,
  `df['total'] = df.eval('a + b + c')`,
  `pd.eval('df.a + df.b')`,
  `import ast\nvalues = ast.literal_eval("[1, 2, 3]")`,
  `eval('1 + 1')`,
  `exec('total = 0\\nfor i in range(3):\\n    total += i')`,
  `compile('x + 1', '<expr>', 'eval')`,
]

const files = [
  `import os\nos.path.join('data', 'titanic.csv')`,
  `import os\npath = os.path.join('data', 'insurance.csv')\nif os.path.exists(path):\n    df = pd.read_csv(path)`,
  `os.makedirs('output/charts', exist_ok=True)\nplt.savefig(os.path.join('output', 'charts', 'a.png'))`,
  `for name in os.listdir('data'):\n    print(name, os.path.getsize(os.path.join('data', name)))`,
  `os.listdir('.')`,
  `for root, dirs, names in os.walk('.'):\n    print(root, len(names))`,
  `base, ext = os.path.splitext(os.path.basename('data/x.csv'))`,
  `out = os.path.join(os.getcwd(), 'result.csv')\ndf.to_csv(out)`,
  `os.remove('tmp.csv') if os.path.exists('tmp.csv') else None`,
  `from pathlib import Path\nfor p in Path('data').glob('*.csv'):\n    print(p.name, p.stat().st_size)`,
  `from pathlib import Path\nout = Path('output')\nout.mkdir(exist_ok=True)\n(out / 'notes.txt').write_text('done')`,
  `Path('data/notes.txt').read_text(encoding='utf-8')`,
  `Path.cwd() / 'summary.csv'`,
  `Path('~/report.md').expanduser().write_text('# Report')`,
  `import shutil\nshutil.copy('a.csv', 'b.csv')`,
  `shutil.copy2('data/titanic.csv', 'titanic_copy.csv')`,
  `shutil.make_archive('results', 'zip', 'output')`,
  `shutil.rmtree('output', ignore_errors=True)`,
  `shutil.move('draft.csv', 'final.csv')`,
  `import glob\nfiles = sorted(glob.glob('data/*.csv'))\nframes = [pd.read_csv(f) for f in files]`,
  `with open('out.csv', 'w') as f:\n    f.write('a,b\\n1,2\\n')`,
  `with open('notes.txt', 'a', encoding='utf-8') as fh:\n    print('appended', file=fh)`,
  `with open('data/titanic.csv') as f:\n    header = f.readline().strip().split(',')`,
  `for i in range(3):\n    with open(f'part_{i}.txt', 'w') as f:\n        f.write(str(i))`,
  `out_dir = 'output'\ndf.to_csv(f'{out_dir}/clean.csv')`,
  `with open('/dev/null', 'w') as sink:\n    print('quiet', file=sink)`,
  `import tempfile\nwith tempfile.TemporaryDirectory() as tmp:\n    p = os.path.join(tmp, 'x.csv')\n    df.to_csv(p)`,
  `import hashlib\nhashlib.sha256(open('data/titanic.csv', 'rb').read()).hexdigest()`,
  `os.path.abspath('data/titanic.csv')`,
  `os.path.expanduser('~/out.csv')`,
  `import sqlite3\nconn = sqlite3.connect(':memory:')\ndf.to_sql('t', conn, index=False)\npd.read_sql('select count(*) from t', conn)`,
  `conn = sqlite3.connect('analysis.db')\nconn.execute('create table if not exists t (x int)')`,
]

const stdlib = [
  `import json\nwith open('summary.json', 'w') as f:\n    json.dump({'rows': len(df)}, f, indent=2)`,
  `import json\nconfig = json.loads('{"a": 1}')\nprint(json.dumps(config, sort_keys=True))`,
  `import re\npattern = re.compile(r'(\\d{4})-(\\d{2})')\n[m.groups() for m in pattern.finditer(text)]`,
  `re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')`,
  `import csv\nwith open('out.csv', 'w', newline='') as f:\n    writer = csv.writer(f)\n    writer.writerow(['a', 'b'])`,
  `with open('data/titanic.csv', newline='') as f:\n    rows = list(csv.DictReader(f))`,
  `import zipfile\nwith zipfile.ZipFile('bundle.zip', 'w', zipfile.ZIP_DEFLATED) as z:\n    z.write('out.csv')`,
  `with zipfile.ZipFile('data/archive.zip') as z:\n    print(z.namelist())\n    z.extractall('extracted')`,
  `import gzip\nwith gzip.open('data/log.csv.gz', 'rt') as f:\n    df = pd.read_csv(f)`,
  `import tarfile\nwith tarfile.open('data/bundle.tar.gz') as t:\n    t.extractall('unpacked')`,
  `from collections import Counter, defaultdict\ncounts = Counter(words)\ncounts.most_common(10)`,
  `from itertools import combinations, product\nlist(combinations(['a', 'b', 'c'], 2))`,
  `import math\nmath.sqrt(2), math.log(10), math.isclose(0.1 + 0.2, 0.3)`,
  `import statistics\nstatistics.median([1, 3, 5]), statistics.stdev([1, 2, 3, 4])`,
  `from datetime import datetime, timedelta\nstart = datetime.strptime('2020/01/31', '%Y/%m/%d')\nstart + timedelta(days=30)`,
  `import time\nt0 = time.perf_counter()\ntotal = sum(range(10**6))\nprint(time.perf_counter() - t0)`,
  `import random\nrandom.seed(1)\nrandom.sample(range(100), 5)`,
  `from functools import reduce, partial, lru_cache\nreduce(lambda a, b: a * b, [1, 2, 3, 4])`,
  `import operator\nsorted(items, key=operator.itemgetter(1), reverse=True)`,
  `from urllib.parse import urlparse, quote\nurlparse('https://example.com/a?b=1').netloc`,
  `import textwrap\nprint(textwrap.fill(summary, width=80))`,
  `from pprint import pprint\npprint(df.head().to_dict())`,
  `import warnings\nwarnings.filterwarnings('ignore', category=FutureWarning)`,
  `import logging\nlogging.basicConfig(level=logging.INFO)\nlogging.getLogger(__name__).info('rows: %d', len(df))`,
  `import sys\nprint(sys.version)\nprint(sys.getsizeof(df))`,
  `import sys\nsys.stdout.write('done\\n')\nsys.setrecursionlimit(5000)`,
  `import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    print(traceback.format_exc())`,
  `from importlib.metadata import version\nversion('pandas')`,
  `import platform\nplatform.python_version(), platform.system()`,
  `import gc\ndel big\ngc.collect()`,
  `import inspect\ninspect.signature(pd.read_csv).parameters['sep']`,
  `import types\nns = types.SimpleNamespace(a=1)\nisinstance(print, types.BuiltinFunctionType)`,
  `import os\nos.environ.get('MPLBACKEND', 'agg')\nos.cpu_count()`,
  `from decimal import Decimal\nDecimal('0.1') + Decimal('0.2')`,
  `import uuid\nstr(uuid.uuid4())`,
  `from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(2) as ex:\n    results = list(ex.map(len, ['a', 'bb']))`,
  `import xml.etree.ElementTree as ET\nroot = ET.fromstring('<a><b>1</b></a>')\n[el.text for el in root.iter('b')]`,
  `import string\nstring.ascii_lowercase.index('c')`,
  `from urllib.parse import urljoin\nurljoin('https://example.com/a/', 'b')`,
  `import base64\nbase64.b64encode(b'abc').decode()`,
  `import pickle\nwith open('model.pkl', 'rb') as f:\n    model = pickle.load(f)\nclone = pickle.loads(pickle.dumps(model))`,
  `import timeit\ntimeit.timeit('sum(range(100))', number=1000)\ntimeit.timeit(lambda: df['a'].sum(), number=10)`,
  `import operator\nget_name = operator.attrgetter('name')\nsorted(people, key=operator.attrgetter('age'))`,
  `from sklearn.datasets import load_iris, make_classification\nX, y = load_iris(return_X_y=True)`,
  `total = globals().get('total', 0) + 1\nprint(locals().get('df') is not None)`,
  `import os\nprint(os.name, os.sep, os.getpid())`,
  `print(f'données: {len(df)} lignes, moyenne {df["prix"].mean():.2f} €')`,
  `résumé = df.describe()\nrésumé.to_csv('résumé.csv')`,
  `import sys\nprint(sys.platform, sys.executable is not None)`,
  `import platform\nprint(platform.system(), platform.machine())`,
  `df.loc[df['os'] == 'linux', 'os system'] = 'Linux os system'\nprint("sys call rate by os run:", df.groupby('os').size())`,
]

const dunders = [
  `type(x).__name__`,
  `print(df.__class__.__name__)`,
  `class Summary:\n    def __init__(self, df):\n        self.df = df\n\n    def __repr__(self):\n        return f'Summary({len(self.df)} rows)'\n\n    def __len__(self):\n        return len(self.df)`,
  `if __name__ == '__main__':\n    main()`,
  `class Point:\n    __slots__ = ('x', 'y')\n\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n\n    def __eq__(self, other):\n        return (self.x, self.y) == (other.x, other.y)\n\n    def __hash__(self):\n        return hash((self.x, self.y))`,
  `class Timer:\n    def __enter__(self):\n        self.t = time.time()\n        return self\n\n    def __exit__(self, *exc):\n        print(time.time() - self.t)`,
  `class Base:\n    def __init__(self):\n        self.name = type(self).__qualname__\n\nclass Child(Base):\n    def __init__(self):\n        super().__init__()`,
  `print(pd.__version__, np.__version__)`,
  `vars(args)\nobj.__dict__.get('x')`,
  `def f():\n    """Docstring."""\n\nprint(f.__doc__, f.__name__, f.__module__)`,
  `from dataclasses import dataclass, field, asdict\n\n@dataclass(frozen=True)\nclass Result:\n    name: str\n    values: list = field(default_factory=list)\n\nasdict(Result('a'))`,
  `class Frozen:\n    def __setattr__(self, name, value):\n        object.__setattr__(self, name, value)\n\n    def __getattr__(self, name):\n        raise AttributeError(name)`,
  `import functools\n\ndef logged(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        print('calling', fn.__name__)\n        return fn(*args, **kwargs)\n    return wrapper`,
  `hasattr(obj, '__iter__') and not isinstance(obj, str)`,
  `if 'df' not in globals():\n    df = pd.read_csv('data/titanic.csv')`,
  `getattr(df, 'shape')\nsetattr(config, 'debug', True)`,
  `agg = 'mean'\ngetattr(df['x'], agg)()\ngetattr(np, 'median')(df['x'])`,
  `for name in ['ttest_ind', 'mannwhitneyu']:\n    print(name, getattr(stats, name)(a, b))`,
]

const syntax = [
  `match command:\n    case {'op': 'sum', 'column': col}:\n        result = df[col].sum()\n    case {'op': 'mean', 'column': col}:\n        result = df[col].mean()\n    case _:\n        result = None`,
  `match point:\n    case (0, 0):\n        print('origin')\n    case (x, 0) | (0, x):\n        print('axis', x)`,
  `if (n := len(df)) > 1000:\n    print(f'{n} rows, sampling')\n    df = df.sample(1000, random_state=0)`,
  `[y for x in data if (y := x * 2) > 3]`,
  `print(f"{'total':>10}: {total:,.2f} ({pct:.1%})")`,
  `print(f"{df['a'].sum()!r} {len(df)=}")`,
  `squares = list(map(lambda v: v ** 2, range(10)))`,
  `key = lambda row: (row['year'], -row['value'])`,
  `@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)`,
  `import asyncio\nawait asyncio.sleep(0)`,
  `async def fetch_all(items):\n    return await asyncio.gather(*(process(i) for i in items))`,
  `try:\n    risky()\nexcept* ValueError as group:\n    print(len(group.exceptions))`,
  `def describe(x: int | None = None, *, verbose: bool = False) -> str:\n    return str(x)`,
  `def positional(a, b, /, c, *, d):\n    return a + b + c + d`,
  `counter = 0\ndef bump():\n    global counter\n    counter += 1`,
  `first, *rest = [1, 2, 3]\n{**defaults, **overrides}`,
  `with open('a.txt', 'w') as a, open('b.txt', 'w') as b:\n    a.write('1')\n    b.write('2')`,
  `total = sum(x for x in range(10) if x % 2)\nnested = {k: [v for v in vs if v] for k, vs in groups.items()}`,
  `class Config(dict):\n    pass\n\nconfig = Config(a=1)\nconfig | {'b': 2}`,
  `x = 1 if flag else 2\nassert x in (1, 2), 'unexpected'`,
  `while True:\n    line = f.readline()\n    if not line:\n        break`,
  `def gen():\n    yield from range(3)\n\nlist(gen())`,
  `values = [*range(3), *range(5, 7)]\nprint(*values, sep=', ')`,
  `del df['tmp']\nnumbers = 0x1F + 0o17 + 0b101 + 1_000_000 + 1e-3 + 2j.imag`,
]

const LEGITIMATE: readonly string[] = [
  ...pandas,
  ...numpy,
  ...scipy,
  ...statsmodels,
  ...sklearn,
  ...plotting,
  ...evalQuery,
  ...files,
  ...stdlib,
  ...dunders,
  ...syntax,
]

describe('legitimate analysis code', () => {
  let compileErrors: Array<string | null> = []
  beforeAll(async () => {
    compileErrors = await syntaxErrors(LEGITIMATE)
  })

  test('the corpus is large enough', () => {
    expect(LEGITIMATE.length).toBeGreaterThanOrEqual(150)
  })

  test.each(LEGITIMATE.map((code, index) => [index, code] as const))(
    'snippet %i passes',
    async (index, code) => {
      // Real Python first: the snippet must be code CPython compiles, and tree-sitter must agree.
      expect(compileErrors[index], code).toBeNull()
      const tree = await parsePython(code)
      const parsedCleanly = !tree.rootNode.hasError
      tree.delete()
      expect(parsedCleanly, code).toBe(true)
      expect(await checkCode(code)).toEqual([])
    },
  )
})
