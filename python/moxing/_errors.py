"""Exceptions of mox.file, named as in Huawei ModelArts MoXing.

Every exception is an OSError, so code written for local files keeps
catching them; MoxFileNotExistsException is also a FileNotFoundError.
"""

import errno


class MoxFileException(OSError):
    """Base of every mox.file error."""

    def __init__(self, message, url=None, resp=None):
        OSError.__init__(self, message)
        self.message = message
        self.url = url
        self.resp = resp

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.url, None))


class MoxFileNotExistsException(MoxFileException, FileNotFoundError):
    """The file, directory or bucket does not exist."""

    def __init__(self, message, url=None, resp=None):
        FileNotFoundError.__init__(self, errno.ENOENT, message)
        self.message = message
        self.url = url
        self.filename = url
        self.resp = resp


class MoxFileReadException(MoxFileException):
    """Reading an object failed part-way (short body, object changed)."""


class MoxFileRespException(MoxFileException):
    """OBS answered with an error status (>= 300); .resp is the Response."""


class MoxFileNameDuplicateException(MoxFileException):
    """Object keys clash with each other as local names (a key is both a
    file and the directory of another key), so they cannot be downloaded."""


class MoxFileConnectionException(MoxFileException, ConnectionError):
    """OBS could not be reached, even after the configured retries."""


class MoxFileConfigException(MoxFileException):
    """No endpoint, or an invalid setting in set_auth or the environment."""
