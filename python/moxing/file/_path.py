"""obs:// and s3:// URLs (equivalent) versus local paths."""

import os

SCHEMES = ("obs://", "s3://")


class Remote:
    """An OBS location: scheme ("obs://" or "s3://" as the caller wrote
    it), bucket and key ("" for the bucket itself; may end with "/")."""

    __slots__ = ("scheme", "bucket", "key")

    def __init__(self, scheme, bucket, key):
        self.scheme, self.bucket, self.key = scheme, bucket, key

    @property
    def prefix(self):
        """The key as a directory prefix: "" or ending with exactly one "/"."""
        k = self.key.rstrip("/")
        return k + "/" if k else ""

    @property
    def is_root(self):
        return self.key.strip("/") == ""

    def url(self, key=None):
        return "%s%s/%s" % (self.scheme, self.bucket, self.key if key is None else key)

    def dir_url(self):
        """The URL without a trailing slash (the bucket as scheme://bucket)."""
        k = self.key.rstrip("/")
        return "%s%s" % (self.scheme, self.bucket) + ("/" + k if k else "")

    def child(self, rel):
        return Remote(self.scheme, self.bucket, self.prefix + rel)

    def parent(self):
        k = self.key.rstrip("/")
        return Remote(self.scheme, self.bucket, k.rsplit("/", 1)[0] + "/" if "/" in k else "")

    def __repr__(self):
        return self.url()


def parse(url):
    """A Remote for obs:// and s3:// URLs, None for local paths (str or
    os.PathLike, returned by local())."""
    if isinstance(url, Remote):
        return url
    if isinstance(url, os.PathLike):
        return None
    if not isinstance(url, str):
        raise TypeError("expected a path or an obs:// URL, got %s" % type(url).__name__)
    low = url[:6].lower()
    for scheme in SCHEMES:
        if low.startswith(scheme):
            rest = url[len(scheme):]
            bucket, _, key = rest.partition("/")
            if not bucket:
                raise ValueError("%r names no bucket (expected %sbucket/key)" % (url, url[:len(scheme)]))
            return Remote(url[:len(scheme)], bucket, key)
    return None


def local(path):
    return os.fspath(path)


def join(base, rel):
    """base joined with a relative path that uses "/" separators."""
    r = parse(base)
    if r is not None:
        return r.child(rel).url()
    return os.path.join(local(base), *rel.split("/"))
