"""Loggers for handler code: get_logger(name) returns a logging.Logger that
writes INFO and above to stderr (the instance log), whatever the root
logger's configuration.
"""

import logging
import sys
import time

__all__ = ["get_logger", "Formatter"]


class Formatter(logging.Formatter):
    """`2024-05-01T12:00:00.123Z INFO name: message`, in UTC: the format of
    every line model_service writes."""

    converter = time.gmtime

    def __init__(self):
        logging.Formatter.__init__(self, "%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatTime(self, record, datefmt=None):
        return "%s.%03dZ" % (time.strftime("%Y-%m-%dT%H:%M:%S", self.converter(record.created)),
                             int(record.msecs))


def get_logger(name=None, level=logging.INFO):
    """Return the logger `name` set to level with its own stderr handler
    (added once; the logger does not propagate to the root logger, so a
    handler calling logging.basicConfig does not print lines twice)."""
    logger = logging.getLogger(name)
    logger.setLevel(level)
    if not any(getattr(h, "_model_service", False) for h in logger.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(Formatter())
        h._model_service = True
        logger.addHandler(h)
    logger.propagate = False
    return logger
