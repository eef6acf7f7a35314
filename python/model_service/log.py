"""ModelArts-style logging module: `logger = log.getLogger(__name__)`.

Handlers written for ModelArts do `import log`; when the model directory
has no log module of its own, the server makes `import log` resolve to this
module.
"""

from .log_util import get_logger

__all__ = ["getLogger"]


def getLogger(name=None):
    """Return a logger that writes INFO and above to stderr."""
    return get_logger(name)
