# The Jupyter Server of analyst-jupyter (/etc/jupyter): on every address of the container, kernels
# and files under /data. The token comes from JUPYTER_TOKEN, as with Jupyter's own images.
c = get_config()  # noqa: F821 (Jupyter's config loader defines it)
c.ServerApp.ip = '0.0.0.0'
c.ServerApp.port = 8888
c.ServerApp.port_retries = 0
c.ServerApp.root_dir = '/data'
c.ServerApp.open_browser = False

# Tornado leaves Nagle's algorithm on for the kernels' WebSockets: about 40 ms a round trip.
from jupyter_server.services.kernels.handlers import ZMQChannelsHandler  # noqa: E402

_open = ZMQChannelsHandler.open


def _open_nodelay(self, *args, **kwargs):
    self.set_nodelay(True)
    return _open(self, *args, **kwargs)


ZMQChannelsHandler.open = _open_nodelay
