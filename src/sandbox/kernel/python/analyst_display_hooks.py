"""Libraries that show things through IPython, made to show them as results of the cell, as in
E2B's template (a Jupyter IPython kernel with its startup scripts):

- PIL: `image.show()` displays the image (no viewer to open), and `image.save('x.png')` from the
  cell's code displays it too, as E2B's template patches it. A save from inside matplotlib
  (plt.savefig writes PNGs through PIL) is no display: the figure is shown already.
- IPython: `IPython.display.display(...)` and `IPython.get_ipython()` are the kernel's, not
  IPython's (which would print a repr, or answer None, outside an IPython shell).

A module already imported (matplotlib brings PIL.Image in with the preload) is patched at once;
one imported later is patched right after it loads, by a finder on sys.meta_path, so importing
neither costs anything until code does.
"""

import importlib.abc
import sys


def _patch_pil(module, display):
    image_class = module.Image
    if getattr(image_class, '_analyst_patched', False):
        return
    original_save = image_class.save

    def show(self, title=None, **options):
        display(self)

    def save(self, fp, format=None, **params):
        caller = sys._getframe(1).f_globals.get('__name__', '')
        if isinstance(fp, str) and not caller.startswith(('matplotlib', 'PIL')):
            display(self)
        return original_save(self, fp, format, **params)

    image_class.show = show
    image_class.save = save
    image_class._analyst_patched = True


def _patch_display_functions(module, display):
    module.display = lambda *objs, **kwargs: display(*objs)


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.patch(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds a patched module with the other finders and patches it once it has run."""

    def __init__(self, patches):
        self.patches = patches

    def find_spec(self, name, path, target=None):
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, 'find_spec'):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


def install(display, get_ipython):
    def patch_getipython(module):
        module.get_ipython = get_ipython

    patches = {
        'PIL.Image': lambda module: _patch_pil(module, display),
        'IPython.core.display_functions': lambda module: _patch_display_functions(module, display),
        'IPython.core.getipython': patch_getipython,
    }
    for name, patch in patches.items():
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, _AfterImport(patches))
