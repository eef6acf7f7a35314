"""mox.file.File: open() for local paths and OBS objects."""

import errno
import io
import os
import tempfile

from .._errors import MoxFileNotExistsException, MoxFileReadException
from . import _path
from ._ops import client

READ_BUFFER = 4 << 20


def parse_mode(mode):
    """(base "r"|"w"|"a", plus, binary) of a mode such as "r", "rb", "br",
    "w+", "ab+", "rt"; ValueError for anything else."""
    if not isinstance(mode, str):
        raise TypeError("mode must be a str, not %s" % type(mode).__name__)
    base = [c for c in mode if c in "rwa"]
    if (len(base) != 1 or any(c not in "rwab+t" for c in mode) or len(set(mode)) != len(mode)
            or ("b" in mode and "t" in mode)):
        raise ValueError("invalid mode %r: use r, w or a, optionally with b and/or +" % mode)
    return base[0], "+" in mode, "b" in mode


class _RemoteRaw(io.RawIOBase):
    """A seekable, read-only view of an OBS object by ranged GETs."""

    def __init__(self, remote, size, etag):
        io.RawIOBase.__init__(self)
        self._r, self._size, self._etag, self._pos = remote, size, etag, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError("invalid whence %r" % whence)
        if pos < 0:
            raise ValueError("negative seek position %d" % pos)
        self._pos = pos
        return pos

    def _get(self, n):
        r = client.get_object(self._r.bucket, self._r.key, self._pos, self._pos + n - 1)
        etag = r.headers.get("ETag")
        if self._etag and etag and etag != self._etag:
            raise MoxFileReadException("%s changed while it was being read" % self._r.url(), self._r.url())
        data = r.body[:n]
        if not data:
            raise MoxFileReadException("%s: no data at offset %d of %d bytes (was it truncated?)" % (
                self._r.url(), self._pos, self._size), self._r.url())
        self._pos += len(data)
        return data

    def readinto(self, b):
        n = min(len(b), self._size - self._pos)
        if n <= 0:
            return 0
        data = self._get(n)
        memoryview(b)[:len(data)] = data
        return len(data)

    def readall(self):
        n = self._size - self._pos
        if n <= 0:
            return b""
        return self._get(n)

    def size(self):
        return self._size


class File:
    """A file on the local disk or OBS, opened as with open().

    Modes: r, w, a with optional b and + ("br", "rb", "w+", "ab+", …).
    OBS objects opened for reading only are read with ranged GETs; every
    other mode works on a local temporary copy that is uploaded on flush()
    and close() when it changed. Text is UTF-8 unless encoding says
    otherwise. Usable as a context manager and as an iterator of lines."""

    def __init__(self, name, mode="r", encoding=None, errors=None, newline=None):
        self.name = name
        self.mode = mode
        self._base, self._plus, self._binary = parse_mode(mode)
        self._tmp = None
        self._raw = None
        self._dirty = False
        self._f = None
        self._closed = False
        if self._binary:
            if encoding is not None or errors is not None or newline is not None:
                raise ValueError("binary mode takes no encoding, errors or newline argument")
        else:
            encoding = encoding or "utf-8"
        self._text_args = (encoding, errors, newline)
        pymode = self._base + ("+" if self._plus else "") + ("b" if self._binary else "")
        self._remote = _path.parse(name)
        if self._remote is None:
            try:
                self._f = open(_path.local(name), pymode, encoding=encoding, errors=errors, newline=newline)
            except FileNotFoundError as e:
                if self._base == "r":
                    raise MoxFileNotExistsException("%s: %s" % (name, e.strerror), str(name)) from None
                raise
            return
        r = self._remote
        if r.is_root or r.key.endswith("/"):
            raise IsADirectoryError(errno.EISDIR, "%s is a directory name, not a file name" % name)
        if self._base == "r" and not self._plus:
            h = client.head_object(r.bucket, r.key)
            if h is None:
                raise MoxFileNotExistsException("%s: no such file" % name, name)
            self._raw = _RemoteRaw(r, int(h.headers.get("Content-Length") or 0), h.headers.get("ETag"))
            buf = io.BufferedReader(self._raw, READ_BUFFER)
            self._f = buf if self._binary else io.TextIOWrapper(buf, encoding, errors, newline)
            return
        fd, self._tmp = tempfile.mkstemp(prefix="mox-", suffix="-" + os.path.basename(r.key)[-64:])
        try:
            with os.fdopen(fd, "wb") as f:
                if self._base in "ra":
                    try:
                        client.download(r.bucket, r.key, f)
                    except MoxFileNotExistsException:
                        if self._base == "r":
                            raise
                        self._dirty = True
            if self._base == "w":
                self._dirty = True
            self._f = open(self._tmp, pymode, encoding=encoding, errors=errors, newline=newline)
        except BaseException:
            os.remove(self._tmp)
            self._tmp = None
            raise

    # ---- state ------------------------------------------------------------

    @property
    def closed(self):
        return self._closed

    def _check(self):
        if self._closed:
            raise ValueError("I/O operation on closed file %s" % self.name)

    def size(self):
        """The file's size in bytes, including what was written so far."""
        self._check()
        if self._raw is not None:
            return self._raw.size()
        self._f.flush()
        if self._tmp is not None:
            return os.path.getsize(self._tmp)
        return os.fstat(self._f.fileno()).st_size

    # ---- reading ----------------------------------------------------------

    def read(self, n=-1):
        self._check()
        return self._f.read(n)

    def readline(self, size=-1):
        self._check()
        return self._f.readline(size)

    def readlines(self, hint=-1):
        self._check()
        return self._f.readlines(hint)

    def __iter__(self):
        self._check()
        return self

    def __next__(self):
        self._check()
        return next(self._f)

    # ---- writing ----------------------------------------------------------

    def write(self, data):
        self._check()
        n = self._f.write(data)
        self._dirty = True
        return n

    def writelines(self, lines):
        self._check()
        self._f.writelines(lines)
        self._dirty = True

    def truncate(self, size=None):
        self._check()
        n = self._f.truncate(size)
        self._dirty = True
        return n

    def flush(self):
        """Flush buffers; for OBS, upload the file if it changed."""
        self._check()
        self._f.flush()
        if self._tmp is not None and self._dirty:
            client.put_file(self._remote.bucket, self._remote.key, self._tmp)
            self._dirty = False

    # ---- positioning ------------------------------------------------------

    def seek(self, offset, whence=io.SEEK_SET):
        self._check()
        return self._f.seek(offset, whence)

    def tell(self):
        self._check()
        return self._f.tell()

    def readable(self):
        return self._f.readable()

    def writable(self):
        return self._f.writable()

    def seekable(self):
        return self._f.seekable()

    # ---- closing ----------------------------------------------------------

    def close(self):
        """Close the file; for OBS, upload it first if it changed."""
        if self._closed or self._f is None:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            try:
                self._f.close()
            finally:
                if self._tmp is not None:
                    try:
                        os.remove(self._tmp)
                    except OSError:
                        pass

    def __enter__(self):
        self._check()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except BaseException:
            pass

    def __getattr__(self, name):
        f = self.__dict__.get("_f")
        if f is None:
            raise AttributeError(name)
        return getattr(f, name)

    def __repr__(self):
        return "<moxing.file.File name=%r mode=%r%s>" % (self.name, self.mode, " closed" if self._closed else "")
