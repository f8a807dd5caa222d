"""Matplotlib backend for Analyst's kernel: Agg rendering, and plt.show() sends the open figures to
the host as PNG results (as Jupyter's inline backend does). Selected by
MPLBACKEND=module://analyst_mpl_backend."""

from matplotlib.backend_bases import FigureManagerBase as FigureManager  # noqa: F401
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas  # noqa: F401


def show(*args, **kwargs):
    import analyst_kernel

    analyst_kernel.flush_figures()
