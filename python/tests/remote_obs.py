"""Every mox.file function against a live OBS (S3) endpoint.

Runs when S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
MOX_TEST_BUCKET (an existing, writable bucket) are set, and is skipped
otherwise. test/e2e/python_sdk_test.go runs it against a real Atelier
server; test_fake_obs.py runs it against an in-memory fake.

    S3_ENDPOINT=http://127.0.0.1:9000 ... MOX_TEST_BUCKET=b \\
        python3 -m unittest -v remote_obs      (from python/tests)

With MOX_TEST_SYSPATH_ONLY=1 the moxing on PYTHONPATH is tested rather
than the source tree next to this file.
"""

import hashlib
import os
import random
import shutil
import sys
import tempfile
import time
import unittest
import uuid

if not os.environ.get("MOX_TEST_SYSPATH_ONLY"):
    # Test the source tree; with MOX_TEST_SYSPATH_ONLY=1 the tree on
    # PYTHONPATH (as the binary extracts it) is tested instead.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import moxing as mox  # noqa: E402
from moxing.file import _file, _ops  # noqa: E402

MiB = 1 << 20


def _env_ready():
    return all(os.environ.get(v) for v in ("S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                           "MOX_TEST_BUCKET"))


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(MiB), b""):
            h.update(b)
    return h.hexdigest()


class RemoteOBSTests(unittest.TestCase):
    """Each test works under its own prefix of MOX_TEST_BUCKET."""

    @classmethod
    def setUpClass(cls):
        if not _env_ready():
            raise unittest.SkipTest("S3_ENDPOINT, AWS_* credentials and MOX_TEST_BUCKET are not set")
        cls.bucket = os.environ["MOX_TEST_BUCKET"]
        cls.root = "obs://%s/mox-test-%s/" % (cls.bucket, uuid.uuid4().hex[:8])

    @classmethod
    def tearDownClass(cls):
        _ops.client.reset_auth()
        try:
            mox.file.remove(cls.root, recursive=True)
        except mox.file.MoxFileNotExistsException:
            pass

    def setUp(self):
        _ops.client.reset_auth()
        self.base = self.root + self._testMethodName + "/"
        self.tmp = tempfile.mkdtemp(prefix="mox-remote-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def u(self, rel):
        return self.base + rel

    def local(self, rel):
        return os.path.join(self.tmp, rel)

    # ---- read / write / append ------------------------------------------

    def test_write_read_append(self):
        mox.file.write(self.u("t.txt"), "héllo\n")
        self.assertEqual(mox.file.read(self.u("t.txt")), "héllo\n")
        self.assertEqual(mox.file.read(self.u("t.txt"), binary=True), "héllo\n".encode())
        mox.file.append(self.u("t.txt"), "world\n")
        self.assertEqual(mox.file.read(self.u("t.txt")), "héllo\nworld\n")
        mox.file.append(self.u("new.txt"), b"\x00\x01", binary=True)
        self.assertEqual(mox.file.read(self.u("new.txt"), binary=True), b"\x00\x01")
        mox.file.write(self.u("b.bin"), bytes(range(256)), binary=True)
        # s3:// and obs:// name the same object
        s3 = self.u("b.bin").replace("obs://", "s3://", 1)
        self.assertEqual(mox.file.read(s3, binary=True), bytes(range(256)))
        mox.file.write(self.u("t.txt"), "")
        self.assertEqual(mox.file.read(self.u("t.txt")), "")

    def test_special_keys(self):
        for name in ("a b.txt", "中文/空 格.txt", "plus+%25.txt", "q?x=1&y#z.txt", "tilde~.txt"):
            mox.file.write(self.u(name), name)
            self.assertEqual(mox.file.read(self.u(name)), name)
        self.assertEqual(mox.file.list_directory(self.base),
                         sorted(["a b.txt", "中文", "plus+%25.txt", "q?x=1&y#z.txt", "tilde~.txt"]))
        self.assertEqual(mox.file.list_directory(self.u("中文")), ["空 格.txt"])

    # ---- File -----------------------------------------------------------

    def test_file_modes(self):
        url = self.u("f.txt")
        with mox.file.File(url, "w") as f:
            f.write("line1\n")
            f.writelines(["line2\n", "line3\n"])
            self.assertEqual(f.size(), 18)
            self.assertEqual(f.tell(), 18)
        self.assertEqual(mox.file.read(url), "line1\nline2\nline3\n")
        with mox.file.File(url, "r") as f:
            self.assertEqual(f.size(), 18)
            self.assertEqual(f.read(3), "lin")
            self.assertEqual(f.readline(), "e1\n")
            self.assertEqual(f.readlines(), ["line2\n", "line3\n"])
            f.seek(0)
            self.assertEqual(list(f), ["line1\n", "line2\n", "line3\n"])
        with mox.file.File(url, "a") as f:
            f.write("line4\n")
        self.assertEqual(mox.file.read(url), "line1\nline2\nline3\nline4\n")
        with mox.file.File(url, "r+") as f:
            f.seek(4)
            f.write("X")
            f.seek(0)
            self.assertEqual(f.readline(), "lineX\n")
        self.assertEqual(mox.file.read(url), "lineX\nline2\nline3\nline4\n")
        with mox.file.File(url, "w+") as f:
            f.write("fresh")
            f.seek(0)
            self.assertEqual(f.read(), "fresh")
        self.assertEqual(mox.file.read(url), "fresh")
        with mox.file.File(url, "a+") as f:
            f.write("!")
            f.seek(0)
            self.assertEqual(f.read(), "fresh!")
        self.assertEqual(mox.file.read(url), "fresh!")
        # an untouched r+ file is not uploaded again
        with mox.file.File(url, "r+") as f:
            self.assertEqual(f.read(), "fresh!")

    def test_file_binary_modes_and_ranges(self):
        data = os.urandom(100000)
        url = self.u("bin/data.bin")
        with mox.file.File(url, "wb") as f:
            f.write(data[:50000])
            f.flush()  # uploads what is there so far
            self.assertEqual(mox.file.get_size(url), 50000)
            f.write(data[50000:])
        old = _file.READ_BUFFER
        _file.READ_BUFFER = 4096  # many ranged GETs
        try:
            for mode in ("rb", "br"):
                with mox.file.File(url, mode) as f:
                    self.assertEqual(f.size(), len(data))
                    self.assertEqual(f.read(10), data[:10])
                    f.seek(99990)
                    self.assertEqual(f.read(), data[99990:])
                    f.seek(-5000, os.SEEK_END)
                    self.assertEqual(f.tell(), 95000)
                    self.assertEqual(f.read(7000), data[95000:])
                    f.seek(12345)
                    self.assertEqual(f.read(20000), data[12345:32345])
                    f.seek(0)
                    self.assertEqual(f.read(), data)
        finally:
            _file.READ_BUFFER = old
        with mox.file.File(url, "ab") as f:
            f.write(b"tail")
        with mox.file.File(url, "bw") as f:
            pass
        self.assertEqual(mox.file.read(url, binary=True), b"")
        with mox.file.File(self.u("bin/new.bin"), "ba") as f:
            f.write(b"x")
        self.assertEqual(mox.file.read(self.u("bin/new.bin"), binary=True), b"x")
        with mox.file.File(self.u("bin/new.bin"), "rb+") as f:
            f.write(b"y")
        self.assertEqual(mox.file.read(self.u("bin/new.bin"), binary=True), b"y")
        for mode in ("r", "rb", "r+", "rb+"):
            with self.assertRaises(mox.file.MoxFileNotExistsException):
                mox.file.File(self.u("bin/missing"), mode)
        with self.assertRaises(ValueError):
            mox.file.File(url, "rw")

    # ---- listing ----------------------------------------------------------

    def _tree(self):
        for name in ("a.txt", "dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin", "z.txt"):
            mox.file.write(self.u(name), "content of " + name)
        mox.file.make_dirs(self.u("empty"))

    def test_list_directory(self):
        self._tree()
        top = ["a.txt", "dir", "empty", "z.txt"]
        self.assertEqual(mox.file.list_directory(self.base), top)
        self.assertEqual(mox.file.list_directory(self.base.rstrip("/")), top)
        self.assertEqual(mox.file.list_directory(self.u("dir")), ["b.txt", "sub"])
        self.assertEqual(mox.file.list_directory(self.u("dir/")), ["b.txt", "sub"])
        self.assertEqual(mox.file.list_directory(self.u("empty")), [])
        full = ["a.txt", "dir", "dir/b.txt", "dir/sub", "dir/sub/c.txt", "dir/sub/d.bin", "empty", "z.txt"]
        self.assertEqual(mox.file.list_directory(self.base, recursive=True), full)
        self.assertEqual(mox.file.list_directory(self.base, recursive=True, skip_dir=True),
                         ["a.txt", "dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin", "z.txt"])
        self.assertEqual(mox.file.list_directory(self.base, recursive=True, skip_file=True),
                         ["dir", "dir/sub", "empty"])
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.list_directory(self.u("nope"))
        with self.assertRaises(NotADirectoryError):
            mox.file.list_directory(self.u("a.txt"))

    def test_list_pagination(self):
        for i in range(25):
            mox.file.write(self.u("p/f%02d" % i), str(i))
            mox.file.write(self.u("p/d%02d/x" % i), str(i))
        mox.file.set_auth(list_max_keys=7)
        want = sorted(["f%02d" % i for i in range(25)] + ["d%02d" % i for i in range(25)])
        self.assertEqual(mox.file.list_directory(self.u("p")), want)
        self.assertEqual(len(mox.file.list_directory(self.u("p"), recursive=True)), 75)
        self.assertEqual(len(mox.file.glob(self.u("p/d*/x"))), 25)

    def test_glob(self):
        self._tree()
        self.assertEqual(mox.file.glob(self.u("dir/*")), [self.u("dir/b.txt"), self.u("dir/sub")])
        self.assertEqual(mox.file.glob(self.u("*.txt")), [self.u("a.txt"), self.u("z.txt")])
        self.assertEqual(mox.file.glob(self.u("*/sub/?.txt")), [self.u("dir/sub/c.txt")])
        self.assertEqual(mox.file.glob(self.u("dir/sub/[cd].*")), [self.u("dir/sub/c.txt"), self.u("dir/sub/d.bin")])
        self.assertEqual(mox.file.glob(self.u("a.txt")), [self.u("a.txt")])
        self.assertEqual(mox.file.glob(self.u("nothing*")), [])
        s3 = self.base.replace("obs://", "s3://", 1)
        self.assertEqual(mox.file.glob(s3 + "a.*"), [s3 + "a.txt"])

    def test_walk(self):
        self._tree()
        top = self.base.rstrip("/")
        got = list(mox.file.walk(self.base))
        self.assertEqual(got, [
            (top, ["dir", "empty"], ["a.txt", "z.txt"]),
            (top + "/dir", ["sub"], ["b.txt"]),
            (top + "/dir/sub", [], ["c.txt", "d.bin"]),
            (top + "/empty", [], []),
        ])
        self.assertEqual([d for d, _, _ in mox.file.walk(self.base, topdown=False)],
                         [top + "/dir/sub", top + "/dir", top + "/empty", top])
        pruned = []
        for d, subdirs, _ in mox.file.walk(top):
            pruned.append(d)
            subdirs[:] = [s for s in subdirs if s != "dir"]
        self.assertEqual(pruned, [top, top + "/empty"])
        errors = []
        self.assertEqual(list(mox.file.walk(self.u("nope"), onerror=errors.append)), [])
        self.assertIsInstance(errors[0], mox.file.MoxFileNotExistsException)

    # ---- queries ------------------------------------------------------------

    def test_exists_is_directory_get_size_stat(self):
        self._tree()
        before = time.time()
        for url, exists, isdir in (
                (self.u("a.txt"), True, False), (self.u("dir"), True, True), (self.u("dir/"), True, True),
                (self.u("empty"), True, True), (self.u("empty/"), True, True), (self.u("nope"), False, False),
                (self.u("di"), False, False), ("obs://%s" % self.bucket, True, True),
                ("obs://%s/" % self.bucket, True, True)):
            self.assertEqual(mox.file.exists(url), exists, url)
            self.assertEqual(mox.file.is_directory(url), isdir, url)
        self.assertEqual(mox.file.get_size(self.u("a.txt")), len("content of a.txt"))
        self.assertEqual(mox.file.get_size(self.u("dir")), 0)
        want = sum(len("content of " + n) for n in ("dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin"))
        self.assertEqual(mox.file.get_size(self.u("dir"), recursive=True), want)
        self.assertEqual(mox.file.get_size(self.u("dir/"), recursive=True), want)
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.get_size(self.u("nope"))
        st = mox.file.stat(self.u("a.txt"))
        self.assertEqual(st.length, len("content of a.txt"))
        self.assertFalse(st.is_directory)
        self.assertLess(abs(st.mtime_nsec / 1e9 - before), 120)
        st = mox.file.stat(self.u("dir"))
        self.assertTrue(st.is_directory)
        self.assertEqual(st.length, 0)
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.stat(self.u("nope"))

    def test_make_dirs_mk_dir(self):
        mox.file.make_dirs(self.u("x/y/z"))
        self.assertTrue(mox.file.is_directory(self.u("x/y/z")))
        self.assertTrue(mox.file.is_directory(self.u("x/y")))
        self.assertEqual(mox.file.list_directory(self.u("x/y/z")), [])
        mox.file.make_dirs(self.u("x/y/z/"))  # again, with a slash: no error
        mox.file.mk_dir(self.u("x/y/w"))
        self.assertEqual(mox.file.list_directory(self.u("x/y")), ["w", "z"])
        with self.assertRaises(OSError):
            mox.file.mk_dir(self.u("missing/parent/child"))
        self.assertFalse(mox.file.exists(self.u("missing")))

    # ---- remove / rename / copy --------------------------------------------

    def test_remove(self):
        self._tree()
        mox.file.remove(self.u("a.txt"))
        self.assertFalse(mox.file.exists(self.u("a.txt")))
        mox.file.remove(self.u("dir"))  # a directory without recursive: no-op
        self.assertTrue(mox.file.exists(self.u("dir/b.txt")))
        mox.file.remove(self.u("z.txt"), recursive=True)  # a file with recursive: no-op
        self.assertTrue(mox.file.exists(self.u("z.txt")))
        mox.file.remove(self.u("dir/"), recursive=True)
        self.assertFalse(mox.file.exists(self.u("dir")))
        self.assertFalse(mox.file.exists(self.u("dir/sub/c.txt")))
        mox.file.remove(self.u("empty"), recursive=True)
        self.assertFalse(mox.file.exists(self.u("empty")))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.remove(self.u("nope"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.remove(self.u("nope"), recursive=True)

    def test_rename(self):
        self._tree()
        mox.file.rename(self.u("a.txt"), self.u("moved/a.txt"))
        self.assertFalse(mox.file.exists(self.u("a.txt")))
        self.assertEqual(mox.file.read(self.u("moved/a.txt")), "content of a.txt")
        mox.file.rename(self.u("moved/a.txt"), self.local("down/a.txt"))
        self.assertFalse(mox.file.exists(self.u("moved/a.txt")))
        with open(self.local("down/a.txt")) as f:
            self.assertEqual(f.read(), "content of a.txt")
        mox.file.rename(self.local("down/a.txt"), self.u("up/a.txt"))
        self.assertFalse(os.path.exists(self.local("down/a.txt")))
        self.assertEqual(mox.file.read(self.u("up/a.txt")), "content of a.txt")
        mox.file.rename(self.u("dir"), self.u("dir2"))
        self.assertFalse(mox.file.exists(self.u("dir")))
        self.assertEqual(mox.file.list_directory(self.u("dir2"), recursive=True),
                         ["b.txt", "sub", "sub/c.txt", "sub/d.bin"])
        mox.file.rename(self.u("dir2/"), self.local("dir3"))
        self.assertFalse(mox.file.exists(self.u("dir2")))
        self.assertEqual(sorted(os.listdir(self.local("dir3/sub"))), ["c.txt", "d.bin"])
        mox.file.rename(self.local("dir3"), self.u("dir4"))
        self.assertEqual(mox.file.read(self.u("dir4/sub/d.bin")), "content of dir/sub/d.bin")
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.rename(self.u("nope"), self.u("nope2"))
        with self.assertRaises(OSError):
            mox.file.rename(self.u("dir4"), self.u("dir4/inside"))
        self.assertTrue(mox.file.exists(self.u("dir4/sub/d.bin")))
        mox.file.rename(self.u("dir4"), self.u("dir4/"))  # the same: nothing to do
        self.assertTrue(mox.file.exists(self.u("dir4/sub/d.bin")))

    def test_copy(self):
        src = self.local("src.bin")
        data = os.urandom(3000)
        with open(src, "wb") as f:
            f.write(data)
        mox.file.copy(src, self.u("c/one.bin"))
        mox.file.copy(self.u("c/one.bin"), self.u("c/two.bin"))          # server-side
        mox.file.copy(self.u("c/two.bin"), self.local("deep/er/three.bin"))  # parents created
        with open(self.local("deep/er/three.bin"), "rb") as f:
            self.assertEqual(f.read(), data)
        s3 = self.u("c/two.bin").replace("obs://", "s3://", 1)
        mox.file.copy(s3, self.u("c/four.bin"))
        self.assertEqual(mox.file.read(self.u("c/four.bin"), binary=True), data)
        with self.assertRaises(IsADirectoryError):
            mox.file.copy(self.u("c"), self.u("d"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy(self.u("c/nope"), self.local("x"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy(self.local("nope"), self.u("x"))
        self.assertFalse([n for n in os.listdir(self.local("deep/er")) if n.endswith(".moxtmp")])

    def test_copy_parallel(self):
        src = self.local("src")
        rnd = random.Random(7)
        names = []
        for i in range(210):
            rel = "d%d/s%d/f%03d.bin" % (i % 7, i % 3, i) if i % 5 else "top%03d.txt" % i
            p = os.path.join(src, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 2048))))
            names.append(rel)
        with open(os.path.join(src, "big.bin"), "wb") as f:
            for _ in range(20):
                f.write(os.urandom(MiB))
        names.append("big.bin")
        mox.file.set_auth(multipart_threshold=8 * MiB, part_size=6 * MiB)  # big.bin: 4 parts
        mox.file.copy_parallel(src, self.u("cp"))
        self.assertEqual(mox.file.list_directory(self.u("cp"), recursive=True, skip_dir=True), sorted(names))
        etag = _ops.client.head_object(self.bucket, self.u("cp/big.bin")[len("obs://%s/" % self.bucket):]).headers["ETag"]
        self.assertTrue(etag.strip('"').endswith("-4"), etag)
        self.assertEqual(mox.file.get_size(self.u("cp/big.bin")), 20 * MiB)
        mox.file.copy_parallel(self.u("cp/"), self.u("cp2"), threads=8)  # OBS -> OBS
        dst = self.local("dst")
        mox.file.copy_parallel(self.u("cp2"), dst)
        for rel in names:
            self.assertEqual(_sha(os.path.join(src, rel)), _sha(os.path.join(dst, rel)), rel)
        # file_list, sequential
        few = self.local("few")
        mox.file.copy_parallel(self.u("cp"), few, file_list=["top000.txt", "d1/s1/f001.bin"],
                               threads=0, is_processing=False)
        self.assertEqual(sorted(mox.file.list_directory(few, recursive=True, skip_dir=True)),
                         ["d1/s1/f001.bin", "top000.txt"])
        # local -> local
        mox.file.copy_parallel(dst, self.local("dst2"))
        self.assertEqual(_sha(os.path.join(dst, "big.bin")), _sha(self.local("dst2/big.bin")))
        with self.assertRaises(NotADirectoryError):
            mox.file.copy_parallel(self.u("cp/big.bin"), self.local("nd"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy_parallel(self.u("nope"), self.local("nd"))

    def test_name_duplicate(self):
        mox.file.write(self.u("dup/x"), "file")
        mox.file.write(self.u("dup/x/y"), "file under x")
        with self.assertRaises(mox.file.MoxFileNameDuplicateException):
            mox.file.copy_parallel(self.u("dup"), self.local("dup"))

    # ---- errors -------------------------------------------------------------

    def test_errors(self):
        with self.assertRaises(mox.file.MoxFileNotExistsException) as cm:
            mox.file.read(self.u("missing.txt"))
        self.assertIn("NoSuchKey", str(cm.exception))
        self.assertIn("missing.txt", str(cm.exception))
        self.assertIsInstance(cm.exception, FileNotFoundError)
        with self.assertRaises(mox.file.MoxFileNotExistsException) as cm:
            mox.file.list_directory("obs://no-such-bucket-%s/" % uuid.uuid4().hex[:8])
        self.assertFalse(mox.file.exists("obs://no-such-bucket-%s/k" % uuid.uuid4().hex[:8]))
        mox.file.write(self.u("k.txt"), "x")
        mox.file.set_auth(ak="AKNOSUCHKEY0000000000", retry=0)
        with self.assertRaises(mox.file.MoxFileRespException) as cm:
            mox.file.read(self.u("k.txt"))
        self.assertIn("InvalidAccessKeyId", str(cm.exception))
        self.assertEqual(cm.exception.resp.status, 403)
        with self.assertRaises(mox.file.MoxFileRespException) as cm:
            mox.file.exists(self.u("k.txt"))  # a HEAD: the code comes from a GET
        self.assertIn("InvalidAccessKeyId", str(cm.exception))
        _ops.client.reset_auth()
        mox.file.set_auth(sk="wrong-secret", retry=0)
        with self.assertRaises(mox.file.MoxFileRespException) as cm:
            mox.file.write(self.u("k.txt"), "y")
        self.assertIn("SignatureDoesNotMatch", str(cm.exception))
        _ops.client.reset_auth()
        self.assertEqual(mox.file.read(self.u("k.txt")), "x")

    # ---- shift --------------------------------------------------------------

    def test_shift(self):
        mox.file.shift("os", "mox")
        try:
            with open(self.u("sh/a.txt"), "w") as f:
                f.write("shifted")
            self.assertTrue(os.path.exists(self.u("sh/a.txt")))
            self.assertTrue(os.path.isdir(self.u("sh")))
            self.assertTrue(os.path.isfile(self.u("sh/a.txt")))
            self.assertEqual(os.listdir(self.u("sh")), ["a.txt"])
            shutil.copyfile(self.u("sh/a.txt"), self.local("a.txt"))
            with open(self.local("a.txt")) as f:  # local paths still work
                self.assertEqual(f.read(), "shifted")
            os.remove(self.u("sh/a.txt"))
            self.assertFalse(os.path.exists(self.u("sh/a.txt")))
        finally:
            mox.file.shift("mox", "os")
        self.assertFalse(os.path.exists(self.u("sh")))  # the original again: a local relative path


if __name__ == "__main__":
    unittest.main()
