"""The mox.file functions. Each accepts a local path or an obs:// / s3://
URL; a directory URL may be written with or without its trailing slash."""

import concurrent.futures
import errno
import fnmatch
import glob as _glob
import os
import shutil
import stat as _stat
from collections import namedtuple

from .. import _s3
from .._errors import (MoxFileNameDuplicateException, MoxFileNotExistsException)
from . import _path
from ._path import parse

client = _s3.Client()

StatResult = namedtuple("StatResult", ["length", "mtime_nsec", "is_directory"])
StatResult.__doc__ = "What mox.file.stat returns: size in bytes, mtime in ns, whether a directory."


def set_auth(ak=None, sk=None, server=None, port=None, is_secure=None, ssl_verify=None,
             long_conn_mode=None, path_style=None, retry=None, retry_wait=None,
             client_timeout=None, list_max_keys=None, security_token=None, region=None,
             multipart_threshold=None, part_size=None):
    """Set OBS credentials and client options, overriding the environment
    (S3_ENDPOINT / AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    AWS_SESSION_TOKEN, AWS_DEFAULT_REGION). Arguments left None keep their
    value. server is a host name (with port and is_secure) or a URL;
    connections are always kept alive, so long_conn_mode is accepted and
    ignored. multipart_threshold and part_size (bytes) tune uploads."""
    client.set_auth(ak=ak, sk=sk, server=server, port=port, is_secure=is_secure,
                    ssl_verify=ssl_verify, path_style=path_style, retry=retry,
                    retry_wait=retry_wait, client_timeout=client_timeout,
                    list_max_keys=list_max_keys, security_token=security_token, region=region,
                    multipart_threshold=multipart_threshold, part_size=part_size)


# ---- helpers ---------------------------------------------------------------

def _not_exists(url, what="no such file or directory"):
    return MoxFileNotExistsException("%s: %s" % (url, what), str(url))


def _local_missing(url, e):
    if isinstance(e, MoxFileNotExistsException):
        return e
    return MoxFileNotExistsException("%s: %s" % (url, e.strerror or "no such file or directory"), str(url))


def _prefix_exists(r):
    try:
        objects, prefixes, _ = client.list_page(r.bucket, r.prefix, max_keys=1)
    except MoxFileNotExistsException:
        return False
    return bool(objects or prefixes)


def _remote_kind(r):
    """"file", "dir" or None. A bucket is a directory."""
    if r.is_root:
        return "dir" if client.head_bucket(r.bucket) else None
    if not r.key.endswith("/") and client.head_object(r.bucket, r.key) is not None:
        return "file"
    return "dir" if _prefix_exists(r) else None


def _local_kind(p):
    if os.path.isdir(p):
        return "dir"
    if os.path.exists(p):
        return "file"
    return None


def _kind(url):
    r = parse(url)
    return _remote_kind(r) if r is not None else _local_kind(_path.local(url))


def _add_parents(dirs, rel):
    parts = rel.split("/")
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d and not d.endswith("/"):
            dirs.add(d)


def _remote_tree(r):
    """Everything under the directory r: ({rel: ObjectInfo} of files, set of
    rel dirs, whether any key (a marker included) lies under it)."""
    prefix = r.prefix
    files, dirs, found = {}, set(), False
    for objects, _ in client.list(r.bucket, prefix):
        for o in objects:
            found = True
            rel = o.key[len(prefix):]
            if not rel:
                continue
            if rel.endswith("/"):
                d = rel.rstrip("/")
                if d:
                    dirs.add(d)
                _add_parents(dirs, d)
            else:
                files[rel] = o
                _add_parents(dirs, rel)
    return files, dirs, found


def _local_tree(p):
    """({rel: path} of files, set of rel dirs) under the local directory p."""
    files, dirs = {}, set()
    for root, ds, fs in os.walk(p):
        rel_root = os.path.relpath(root, p)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        for d in ds:
            dirs.add(rel_root + d)
        for f in fs:
            files[rel_root + f] = os.path.join(root, f)
    return files, dirs


def _ensure_parent(p):
    d = os.path.dirname(os.path.abspath(p))
    if d:
        os.makedirs(d, exist_ok=True)


def _data_bytes(data, binary, what):
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError("%s: data must be %s, not %s" % (
        what, "bytes" if binary else "str", type(data).__name__))


# ---- reading and writing ---------------------------------------------------

def read(url, binary=False, client_id=None):
    """The whole content of a file: str (UTF-8) or, with binary=True, bytes."""
    r = parse(url)
    if r is None:
        try:
            with open(_path.local(url), "rb") as f:
                data = f.read()
        except FileNotFoundError as e:
            raise _local_missing(url, e) from None
    else:
        if r.is_root or r.key.endswith("/"):
            raise IsADirectoryError(errno.EISDIR, "%s is a directory" % url)
        data = client.get_object(r.bucket, r.key).body
    return data if binary else data.decode("utf-8")


def write(url, data, binary=False):
    """Write data (str, or bytes with binary=True) to a file, replacing it."""
    b = _data_bytes(data, binary, "mox.file.write")
    r = parse(url)
    if r is None:
        with open(_path.local(url), "wb") as f:
            f.write(b)
        return
    if r.is_root or r.key.endswith("/"):
        raise IsADirectoryError(errno.EISDIR, "%s is a directory name, not a file name" % url)
    client.put_bytes(r.bucket, r.key, b)


def append(url, data, binary=False):
    """Append data to a file, creating it when missing. On OBS the object is
    read and written back whole (S3 has no append)."""
    b = _data_bytes(data, binary, "mox.file.append")
    r = parse(url)
    if r is None:
        with open(_path.local(url), "ab") as f:
            f.write(b)
        return
    if r.is_root or r.key.endswith("/"):
        raise IsADirectoryError(errno.EISDIR, "%s is a directory name, not a file name" % url)
    try:
        old = client.get_object(r.bucket, r.key).body
    except MoxFileNotExistsException:
        old = b""
    client.put_bytes(r.bucket, r.key, old + b)


# ---- listing -----------------------------------------------------------------

def list_directory(url, recursive=False, remove_sep=False, skip_file=False, skip_dir=False):
    """Names in a directory, RELATIVE to url, sorted; directories without a
    trailing slash. recursive=True lists the whole subtree (files and
    directories). skip_file / skip_dir leave those out."""
    r = parse(url)
    files, dirs = set(), set()
    if r is None:
        p = _path.local(url)
        if not os.path.isdir(p):
            if os.path.exists(p):
                raise NotADirectoryError(errno.ENOTDIR, "%s is not a directory" % url)
            raise _not_exists(url)
        if recursive:
            fs, ds = _local_tree(p)
            files, dirs = set(fs), ds
        else:
            for name in os.listdir(p):
                (dirs if os.path.isdir(os.path.join(p, name)) else files).add(name)
    else:
        if recursive:
            fs, dirs, found = _remote_tree(r)
            files = set(fs)
        else:
            found = False
            prefix = r.prefix
            for objects, prefixes in client.list(r.bucket, prefix, "/"):
                for o in objects:
                    found = True
                    rel = o.key[len(prefix):]
                    if rel:
                        files.add(rel)
                for p in prefixes:
                    found = True
                    d = p[len(prefix):].rstrip("/")
                    if d:
                        dirs.add(d)
        if not found and not r.is_root:
            if client.head_object(r.bucket, r.key.rstrip("/")) is not None:
                raise NotADirectoryError(errno.ENOTDIR, "%s is a file, not a directory" % url)
            raise _not_exists(url)
    out = set()
    if not skip_file:
        out |= files
    if not skip_dir:
        out |= dirs
    return sorted(out)


def _has_magic(s):
    return any(c in s for c in "*?[")


def glob(url_pattern):
    """Paths matching a shell pattern (* ? [..], not crossing "/"). OBS
    results are absolute URLs (files and directories); local results are as
    glob.glob returns them."""
    r = parse(url_pattern)
    if r is None:
        return sorted(_glob.glob(_path.local(url_pattern)))
    key = r.key.rstrip("/")
    segs = key.split("/") if key else []
    magic = [i for i, s in enumerate(segs) if _has_magic(s)]
    if not magic:
        return [url_pattern] if exists(url_pattern) else []
    first = magic[0]
    prefix = "/".join(segs[:first])
    prefix = prefix + "/" if prefix else ""
    base = _path.Remote(r.scheme, r.bucket, prefix)
    candidates = set()
    try:
        if first == len(segs) - 1:
            for objects, prefixes in client.list(r.bucket, prefix, "/"):
                for o in objects:
                    if o.key != prefix:
                        candidates.add(o.key)
                for p in prefixes:
                    candidates.add(p.rstrip("/"))
        else:
            fs, ds, _ = _remote_tree(base)
            candidates = {prefix + x for x in fs} | {prefix + x for x in ds}
    except MoxFileNotExistsException:
        return []
    out = []
    for c in candidates:
        parts = c.split("/")
        if len(parts) == len(segs) and all(fnmatch.fnmatchcase(p, s) for p, s in zip(parts, segs)):
            out.append("%s%s/%s" % (r.scheme, r.bucket, c))
    return sorted(out)


def walk(url, topdown=True, onerror=None, followlinks=False):
    """os.walk for local paths and OBS: yields (dir, subdirs, files). For OBS
    dir is a URL without a trailing slash; with topdown=True the caller may
    prune subdirs in place."""
    r = parse(url)
    if r is None:
        yield from os.walk(_path.local(url), topdown=topdown, onerror=onerror, followlinks=followlinks)
        return
    try:
        fs, ds, found = _remote_tree(r)
    except MoxFileNotExistsException as e:
        if onerror is not None:
            onerror(e)
        return
    if not found and not r.is_root:
        if onerror is not None:
            onerror(_not_exists(url))
        return
    children = {"": ([], [])}
    for d in sorted(ds):
        children.setdefault(d, ([], []))
        parent, _, name = d.rpartition("/")
        children.setdefault(parent, ([], []))[0].append(name)
    for f in sorted(fs):
        parent, _, name = f.rpartition("/")
        children.setdefault(parent, ([], []))[1].append(name)
    top = r.dir_url()

    def visit(rel, here):
        subdirs, files = children.get(rel, ([], []))
        subdirs, files = list(subdirs), list(files)
        if topdown:
            yield here, subdirs, files
        for d in list(subdirs):
            yield from visit(rel + "/" + d if rel else d, here + "/" + d)
        if not topdown:
            yield here, subdirs, files

    yield from visit("", top)


# ---- queries -----------------------------------------------------------------

def exists(url):
    """Whether a file or directory (or bucket) exists."""
    return _kind(url) is not None


def is_directory(url):
    """Whether url is a directory: a local dir, an OBS prefix with keys
    under it (or its "dir/" marker), or a bucket."""
    r = parse(url)
    if r is None:
        return os.path.isdir(_path.local(url))
    if r.is_root:
        return client.head_bucket(r.bucket)
    return _prefix_exists(r)


def get_size(url, recursive=False):
    """Size of a file in bytes. A directory counts only with recursive=True
    (the sum of its files); otherwise it is 0."""
    r = parse(url)
    if r is None:
        p = _path.local(url)
        if os.path.isdir(p):
            if not recursive:
                return 0
            return sum(os.path.getsize(f) for f in _local_tree(p)[0].values() if os.path.isfile(f))
        try:
            return os.path.getsize(p)
        except FileNotFoundError as e:
            raise _local_missing(url, e) from None
    if not r.is_root and not r.key.endswith("/"):
        h = client.head_object(r.bucket, r.key)
        if h is not None:
            return int(h.headers.get("Content-Length") or 0)
    if recursive:
        try:
            fs, _, found = _remote_tree(r)
        except MoxFileNotExistsException:
            raise _not_exists(url) from None
        if found or r.is_root:
            return sum(o.size for o in fs.values())
    elif is_directory(url):
        return 0
    raise _not_exists(url)


def stat(url):
    """A StatResult(length, mtime_nsec, is_directory); raises
    MoxFileNotExistsException when nothing is there."""
    r = parse(url)
    if r is None:
        try:
            st = os.stat(_path.local(url))
        except FileNotFoundError as e:
            raise _local_missing(url, e) from None
        isdir = _stat.S_ISDIR(st.st_mode)
        return StatResult(0 if isdir else st.st_size, st.st_mtime_ns, isdir)
    if not r.is_root and not r.key.endswith("/"):
        h = client.head_object(r.bucket, r.key)
        if h is not None:
            return StatResult(int(h.headers.get("Content-Length") or 0),
                              _s3.http_date_ns(h.headers.get("Last-Modified")), False)
    if is_directory(url):
        mtime = 0
        if not r.is_root:
            m = client.head_object(r.bucket, r.prefix)
            if m is not None:
                mtime = _s3.http_date_ns(m.headers.get("Last-Modified"))
        return StatResult(0, mtime, True)
    raise _not_exists(url)


# ---- directories -------------------------------------------------------------

def make_dirs(url):
    """Create a directory and its parents (no error when it exists). On OBS
    this writes the empty "dir/" marker object."""
    r = parse(url)
    if r is None:
        os.makedirs(_path.local(url), exist_ok=True)
        return
    if r.is_root:
        if not client.head_bucket(r.bucket):
            raise _not_exists(url, "no such bucket")
        return
    client.put_bytes(r.bucket, r.prefix, b"")


def mk_dir(url):
    """Create one directory; OSError (MoxFileNotExistsException) when its
    parent is missing."""
    r = parse(url)
    if r is None:
        try:
            os.mkdir(_path.local(url))
        except FileNotFoundError as e:
            raise MoxFileNotExistsException(
                "%s: the parent directory does not exist (%s)" % (url, e.strerror), str(url)) from None
        return
    if r.is_root:
        return make_dirs(url)
    parent = r.parent()
    if not (client.head_bucket(r.bucket) if parent.is_root else _prefix_exists(parent)):
        raise MoxFileNotExistsException("%s: the parent directory %s does not exist" % (
            url, parent.dir_url()), str(url))
    client.put_bytes(r.bucket, r.prefix, b"")


def remove(url, recursive=False):
    """Remove a file, or with recursive=True a directory and everything in
    it. A mismatch (a directory without recursive, a file with it) is a
    silent no-op, as in MoXing; nothing there at all raises
    MoxFileNotExistsException."""
    r = parse(url)
    if r is None:
        p = _path.local(url)
        kind = "file" if os.path.islink(p) else _local_kind(p)
        if kind is None:
            raise _not_exists(url)
        if kind == "dir" and recursive:
            shutil.rmtree(p)
        elif kind == "file" and not recursive:
            os.remove(p)
        return
    if recursive:
        keys = [o.key for objects, _ in client.list(r.bucket, r.prefix) for o in objects]
        if keys:
            client.delete_objects(r.bucket, keys)
            return
        if not r.is_root and client.head_object(r.bucket, r.key.rstrip("/")) is not None:
            return
        if r.is_root and client.head_bucket(r.bucket):
            return
        raise _not_exists(url)
    if not r.is_root and not r.key.endswith("/"):
        if client.head_object(r.bucket, r.key) is not None:
            client.delete_object(r.bucket, r.key)
            return
    if is_directory(url):
        return
    raise _not_exists(url)


# ---- copying -----------------------------------------------------------------

def _copy_file(src, dst):
    """Copy one file without checking what src is; dst's local parent
    directories are created. A missing source raises
    MoxFileNotExistsException."""
    try:
        _copy_file_unchecked(src, dst)
    except FileNotFoundError as e:
        if isinstance(e, MoxFileNotExistsException) or parse(src) is not None:
            raise
        if e.filename is not None and os.fspath(e.filename) == _path.local(src):
            raise _local_missing(src, e) from None
        raise


def _copy_file_unchecked(src, dst):
    s, d = parse(src), parse(dst)
    if s is None and d is None:
        dp = _path.local(dst)
        _ensure_parent(dp)
        shutil.copyfile(_path.local(src), dp)
    elif s is None:
        client.put_file(d.bucket, d.key, _path.local(src))
    elif d is None:
        dp = _path.local(dst)
        _ensure_parent(dp)
        tmp, f = _create_temp_beside(dp)
        try:
            with f:
                client.download(s.bucket, s.key, f)
            os.replace(tmp, dp)
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise
    else:
        client.copy_object(s.bucket, s.key, d.bucket, d.key)


def _create_temp_beside(path):
    """A new file next to path (same directory, so that os.replace is
    atomic), created with the umask's permissions: (name, binary file)."""
    d, base = os.path.split(os.path.abspath(path))
    for _ in range(100):
        tmp = os.path.join(d, ".%s.%s.moxtmp" % (base, os.urandom(4).hex()))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return tmp, os.fdopen(fd, "wb")
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file beside %s" % path)


def _check_file_dst(dst):
    d = parse(dst)
    if d is not None:
        if d.is_root or d.key.endswith("/"):
            raise IsADirectoryError(errno.EISDIR, "%s is a directory name; give the file's name" % dst)
    elif os.path.isdir(_path.local(dst)):
        raise IsADirectoryError(errno.EISDIR, "%s is a directory; give the file's name" % dst)


def copy(src_url, dst_url, client_id=None):
    """Copy ONE file: local->local, local->OBS, OBS->local (parents
    created, written atomically) and OBS->OBS (server-side copy)."""
    kind = _kind(src_url)
    if kind is None:
        raise _not_exists(src_url)
    if kind == "dir":
        raise IsADirectoryError(errno.EISDIR, "%s is a directory; use mox.file.copy_parallel" % src_url)
    _check_file_dst(dst_url)
    _copy_file(src_url, dst_url)


def _tree(url):
    """({rel: size-or-None} of files, set of rel dirs) under a directory."""
    r = parse(url)
    if r is None:
        fs, ds = _local_tree(_path.local(url))
        return {k: None for k in fs}, ds
    fs, ds, _ = _remote_tree(r)
    return {k: o.size for k, o in fs.items()}, ds


def copy_parallel(src_url, dst_url, file_list=None, threads=16, is_processing=True, use_queue=True):
    """Copy a DIRECTORY tree (or only file_list, paths relative to src_url)
    between any two of local and OBS, with a pool of `threads` threads
    (threads, not processes, whatever is_processing says). Raises the first
    error after the other copies finished."""
    kind = _kind(src_url)
    if kind is None:
        raise _not_exists(src_url)
    if kind == "file":
        raise NotADirectoryError(errno.ENOTDIR, "%s is a file; use mox.file.copy" % src_url)
    if file_list is None:
        files, dirs = _tree(src_url)
        rels = sorted(files)
    else:
        if isinstance(file_list, str):
            file_list = [file_list]
        rels = [f.replace("\\", "/").lstrip("/") for f in file_list]
        dirs = set()
        for f in rels:
            _add_parents(dirs, f)
    d = parse(dst_url)
    if d is None:
        clash = sorted(set(rels) & dirs)
        if clash:
            raise MoxFileNameDuplicateException(
                "cannot copy %s to the local directory %s: %d name(s) are both a file and a directory, e.g. %r" % (
                    src_url, dst_url, len(clash), clash[0]), str(src_url))
        root = _path.local(dst_url)
        os.makedirs(root, exist_ok=True)
        for rel in sorted(dirs):
            os.makedirs(os.path.join(root, *rel.split("/")), exist_ok=True)
    jobs = [(_path.join(src_url, rel), _path.join(dst_url, rel)) for rel in rels]
    if not jobs:
        return
    workers = max(1, min(int(threads or 1), len(jobs)))
    if workers == 1:
        for s, t in jobs:
            _copy_file(s, t)
        return
    first = None
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mox-copy") as ex:
        futures = [ex.submit(_copy_file, s, t) for s, t in jobs]
        for f in concurrent.futures.as_completed(futures):
            err = f.exception() if not f.cancelled() else None
            if err is not None and first is None:
                first = err
                for other in futures:
                    other.cancel()
    if first is not None:
        raise first


def rename(src_url, dst_url):
    """Move a file or directory: os.rename locally; otherwise copy then
    delete the source (local<->OBS and OBS->OBS)."""
    s, d = parse(src_url), parse(dst_url)
    if s is None and d is None:
        sp, dp = _path.local(src_url), _path.local(dst_url)
        if not os.path.lexists(sp):
            raise _not_exists(src_url)
        try:
            os.rename(sp, dp)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            shutil.move(sp, dp)
        return
    if s is not None and d is not None and s.bucket == d.bucket and (
            d.prefix.startswith(s.prefix) if not s.is_root else True):
        if s.prefix == d.prefix:
            return
        if _remote_kind(s) == "dir":
            raise OSError(errno.EINVAL, "cannot move %s into itself (%s)" % (src_url, dst_url))
    kind = _kind(src_url)
    if kind is None:
        raise _not_exists(src_url)
    if kind == "file":
        _check_file_dst(dst_url)
        _copy_file(src_url, dst_url)
        remove(src_url)
    else:
        copy_parallel(src_url, dst_url)
        remove(src_url, recursive=True)
