"""mox.file: file operations on local paths and OBS (obs:// or s3:// URLs),
compatible with Huawei ModelArts MoXing's mox.file API."""

from .._errors import (MoxFileConfigException, MoxFileConnectionException, MoxFileException,
                       MoxFileNameDuplicateException, MoxFileNotExistsException,
                       MoxFileReadException, MoxFileRespException)
from ._file import File
from ._ops import (StatResult, append, copy, copy_parallel, exists, get_size, glob,
                   is_directory, list_directory, make_dirs, mk_dir, read, remove, rename,
                   set_auth, stat, walk, write)
from ._shift import shift

__all__ = [
    "File", "StatResult", "append", "copy", "copy_parallel", "exists", "get_size", "glob",
    "is_directory", "list_directory", "make_dirs", "mk_dir", "read", "remove", "rename",
    "set_auth", "shift", "stat", "walk", "write",
    "MoxFileException", "MoxFileNotExistsException", "MoxFileReadException",
    "MoxFileRespException", "MoxFileNameDuplicateException", "MoxFileConnectionException",
    "MoxFileConfigException",
]
