"""Compatibility alias: moxing.framework.file is moxing.file, as in MoXing."""

import sys

from .. import file

sys.modules[__name__ + ".file"] = file

__all__ = ["file"]
