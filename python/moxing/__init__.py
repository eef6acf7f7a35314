"""Atelier's MoXing: `import moxing as mox` and use mox.file.* to read and
write local files and OBS objects alike (obs://bucket/key, s3://bucket/key).

Inside an Atelier job the OBS endpoint and temporary credentials come from
the environment (S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN); elsewhere set them there or call mox.file.set_auth.
Only the Python standard library is used.
"""

from . import file, manifest
from ._errors import (MoxFileException, MoxFileNameDuplicateException,
                      MoxFileNotExistsException, MoxFileReadException,
                      MoxFileRespException)

__version__ = "1.0.0"

__all__ = ["file", "manifest", "MoxFileException", "MoxFileNotExistsException", "MoxFileReadException",
           "MoxFileRespException", "MoxFileNameDuplicateException", "__version__"]
