"""mox.file.shift('os', 'mox'): let open, os, os.path, shutil and glob
functions accept obs:// and s3:// URLs; shift('mox', 'os') undoes it.
Local paths always go to the original functions."""

import builtins
import glob as _glob
import os
import shutil
import threading

from . import _file, _ops
from ._path import parse

_lock = threading.Lock()
_saved = {}


def _remote(p):
    return isinstance(p, str) and parse(p) is not None


def _wrappers():
    o = _saved

    def open_(file, mode="r", *args, **kwargs):
        if _remote(file):
            return _file.File(file, mode, **{k: v for k, v in kwargs.items()
                                              if k in ("encoding", "errors", "newline")})
        return o[(builtins, "open")](file, mode, *args, **kwargs)

    def exists(p):
        return _ops.exists(p) if _remote(p) else o[(os.path, "exists")](p)

    def isdir(p):
        return _ops.is_directory(p) if _remote(p) else o[(os.path, "isdir")](p)

    def isfile(p):
        if _remote(p):
            r = parse(p)
            return not r.is_root and _ops._remote_kind(r) == "file"
        return o[(os.path, "isfile")](p)

    def getsize(p):
        return _ops.get_size(p) if _remote(p) else o[(os.path, "getsize")](p)

    def listdir(p="."):
        return _ops.list_directory(p) if _remote(p) else o[(os, "listdir")](p)

    def makedirs(name, mode=0o777, exist_ok=False):
        if _remote(name):
            if not exist_ok and _ops.exists(name):
                raise FileExistsError(17, "%s exists" % name)
            return _ops.make_dirs(name)
        return o[(os, "makedirs")](name, mode, exist_ok)

    def mkdir(path, mode=0o777, *args, **kwargs):
        if _remote(path):
            return _ops.mk_dir(path)
        return o[(os, "mkdir")](path, mode, *args, **kwargs)

    def remove(path, *args, **kwargs):
        if _remote(path):
            return _ops.remove(path)
        return o[(os, "remove")](path, *args, **kwargs)

    def unlink(path, *args, **kwargs):
        if _remote(path):
            return _ops.remove(path)
        return o[(os, "unlink")](path, *args, **kwargs)

    def rename(src, dst, *args, **kwargs):
        if _remote(src) or _remote(dst):
            return _ops.rename(src, dst)
        return o[(os, "rename")](src, dst, *args, **kwargs)

    def walk(top, topdown=True, onerror=None, followlinks=False):
        if _remote(top):
            return _ops.walk(top, topdown, onerror)
        return o[(os, "walk")](top, topdown, onerror, followlinks)

    def copyfile(src, dst, *args, **kwargs):
        if _remote(src) or _remote(dst):
            _ops.copy(src, dst)
            return dst
        return o[(shutil, "copyfile")](src, dst, *args, **kwargs)

    def copy(src, dst, *args, **kwargs):
        if _remote(src) or _remote(dst):
            if _ops.is_directory(dst):
                dst = dst.rstrip("/") + "/" + src.rstrip("/").rsplit("/", 1)[-1]
            _ops.copy(src, dst)
            return dst
        return o[(shutil, "copy")](src, dst, *args, **kwargs)

    def copytree(src, dst, *args, **kwargs):
        if _remote(src) or _remote(dst):
            _ops.copy_parallel(src, dst)
            return dst
        return o[(shutil, "copytree")](src, dst, *args, **kwargs)

    def rmtree(path, *args, **kwargs):
        if _remote(path):
            return _ops.remove(path, recursive=True)
        return o[(shutil, "rmtree")](path, *args, **kwargs)

    def move(src, dst, *args, **kwargs):
        if _remote(src) or _remote(dst):
            _ops.rename(src, dst)
            return dst
        return o[(shutil, "move")](src, dst, *args, **kwargs)

    def glob(pathname, *args, **kwargs):
        if _remote(pathname):
            return _ops.glob(pathname)
        return o[(_glob, "glob")](pathname, *args, **kwargs)

    return {
        (builtins, "open"): open_, (os.path, "exists"): exists, (os.path, "isdir"): isdir,
        (os.path, "isfile"): isfile, (os.path, "getsize"): getsize, (os, "listdir"): listdir,
        (os, "makedirs"): makedirs, (os, "mkdir"): mkdir, (os, "remove"): remove,
        (os, "unlink"): unlink, (os, "rename"): rename, (os, "walk"): walk,
        (shutil, "copyfile"): copyfile, (shutil, "copy"): copy, (shutil, "copytree"): copytree,
        (shutil, "rmtree"): rmtree, (shutil, "move"): move, (_glob, "glob"): glob,
    }


def shift(src, dst):
    """shift('os', 'mox') patches open, os.path.exists/isdir/isfile/getsize,
    os.listdir/makedirs/mkdir/remove/unlink/rename/walk,
    shutil.copyfile/copy/copytree/rmtree/move and glob.glob so that they
    also take OBS URLs; shift('mox', 'os') restores the originals."""
    with _lock:
        if (src, dst) == ("os", "mox"):
            if _saved:
                return
            targets = [(mod, name) for mod, name in (
                (builtins, "open"), (os.path, "exists"), (os.path, "isdir"), (os.path, "isfile"),
                (os.path, "getsize"), (os, "listdir"), (os, "makedirs"), (os, "mkdir"),
                (os, "remove"), (os, "unlink"), (os, "rename"), (os, "walk"),
                (shutil, "copyfile"), (shutil, "copy"), (shutil, "copytree"), (shutil, "rmtree"),
                (shutil, "move"), (_glob, "glob"))]
            for t in targets:
                _saved[t] = getattr(t[0], t[1])
            for (mod, name), fn in _wrappers().items():
                setattr(mod, name, fn)
        elif (src, dst) == ("mox", "os"):
            for (mod, name), fn in _saved.items():
                setattr(mod, name, fn)
            _saved.clear()
        else:
            raise ValueError("shift(%r, %r): use shift('os', 'mox') or shift('mox', 'os')" % (src, dst))
