"""mox.file on local paths: no server needed."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import moxing as mox  # noqa: E402
from moxing.file import _file, _path  # noqa: E402


class LocalTests(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="mox-local-")
        self.addCleanup(shutil.rmtree, self.d, True)

    def p(self, *rel):
        return os.path.join(self.d, *rel)

    def tree(self):
        for rel in ("a.txt", "dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin", "z.txt"):
            os.makedirs(os.path.dirname(self.p(rel)), exist_ok=True)
            with open(self.p(rel), "w") as f:
                f.write("content of " + rel)
        os.makedirs(self.p("empty"))

    def test_read_write_append(self):
        mox.file.write(self.p("t.txt"), "héllo\n")
        self.assertEqual(mox.file.read(self.p("t.txt")), "héllo\n")
        self.assertEqual(mox.file.read(self.p("t.txt"), binary=True), "héllo\n".encode())
        mox.file.append(self.p("t.txt"), "more")
        self.assertEqual(mox.file.read(self.p("t.txt")), "héllo\nmore")
        mox.file.write(self.p("b.bin"), b"\x00\xff", binary=True)
        mox.file.append(self.p("b.bin"), b"\x01", binary=True)
        self.assertEqual(mox.file.read(self.p("b.bin"), binary=True), b"\x00\xff\x01")
        mox.file.append(self.p("new.txt"), "n")
        self.assertEqual(mox.file.read(self.p("new.txt")), "n")
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.read(self.p("missing"))
        with self.assertRaises(FileNotFoundError):  # also a FileNotFoundError
            mox.file.read(self.p("missing"))
        with self.assertRaises(TypeError):
            mox.file.write(self.p("x"), 12)
        import pathlib
        self.assertEqual(mox.file.read(pathlib.Path(self.p("new.txt"))), "n")

    def test_file_text_modes(self):
        path = self.p("f.txt")
        with mox.file.File(path, "w") as f:
            f.write("l1\n")
            f.writelines(["l2\n", "l3\n"])
            self.assertEqual(f.size(), 9)
        with mox.file.File(path, "r") as f:
            self.assertEqual(f.size(), 9)
            self.assertEqual(f.read(2), "l1")
            self.assertEqual(f.readline(), "\n")
            self.assertEqual(f.tell(), 3)
            self.assertEqual(f.readlines(), ["l2\n", "l3\n"])
            f.seek(0)
            self.assertEqual([line for line in f], ["l1\n", "l2\n", "l3\n"])
        with mox.file.File(path, "a") as f:
            f.write("l4\n")
        with mox.file.File(path, "r+") as f:
            f.write("L")
        with mox.file.File(path, "a+") as f:
            f.write("l5")
            f.seek(0)
            self.assertEqual(f.read(), "L1\nl2\nl3\nl4\nl5")
        with mox.file.File(path, "w+") as f:
            f.write("new")
            f.seek(0)
            self.assertEqual(f.read(), "new")
        f = mox.file.File(path)
        f.close()
        self.assertTrue(f.closed)
        with self.assertRaises(ValueError):
            f.read()
        f.close()  # twice is fine

    def test_file_binary_modes(self):
        path = self.p("f.bin")
        for mode in ("wb", "bw"):
            with mox.file.File(path, mode) as f:
                f.write(b"\x00\x01\x02")
        for mode in ("ab", "ba", "ab+", "a+b"):
            with mox.file.File(path, mode) as f:
                f.write(b"\x03")
        for mode in ("rb", "br", "rb+", "r+b", "br+"):
            with mox.file.File(path, mode) as f:
                self.assertEqual(f.read(), b"\x00\x01\x02\x03\x03\x03\x03")
                f.seek(1)
                self.assertEqual(f.read(1), b"\x01")
        with mox.file.File(path, "wb+") as f:
            f.write(b"abc")
            f.seek(0)
            self.assertEqual(f.read(), b"abc")
            self.assertEqual(f.name, path)
            self.assertEqual(f.mode, "wb+")
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.File(self.p("missing"), "rb")

    def test_parse_mode(self):
        ok = {"r": ("r", False, False), "rb": ("r", False, True), "br": ("r", False, True),
              "w": ("w", False, False), "bw": ("w", False, True), "a": ("a", False, False),
              "ba": ("a", False, True), "r+": ("r", True, False), "w+": ("w", True, False),
              "a+": ("a", True, False), "rb+": ("r", True, True), "br+": ("r", True, True),
              "+wb": ("w", True, True), "rt": ("r", False, False)}
        for mode, want in ok.items():
            self.assertEqual(_file.parse_mode(mode), want, mode)
        for bad in ("", "x", "rw", "rr", "rbt", "r++", "q", "wbb"):
            with self.assertRaises(ValueError, msg=bad):
                _file.parse_mode(bad)
        with self.assertRaises(TypeError):
            _file.parse_mode(None)

    def test_list_directory(self):
        self.tree()
        self.assertEqual(mox.file.list_directory(self.d), ["a.txt", "dir", "empty", "z.txt"])
        self.assertEqual(mox.file.list_directory(self.d + "/"), ["a.txt", "dir", "empty", "z.txt"])
        self.assertEqual(mox.file.list_directory(self.p("dir")), ["b.txt", "sub"])
        self.assertEqual(mox.file.list_directory(self.p("empty")), [])
        self.assertEqual(mox.file.list_directory(self.d, recursive=True),
                         ["a.txt", "dir", "dir/b.txt", "dir/sub", "dir/sub/c.txt", "dir/sub/d.bin", "empty", "z.txt"])
        self.assertEqual(mox.file.list_directory(self.d, recursive=True, skip_dir=True),
                         ["a.txt", "dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin", "z.txt"])
        self.assertEqual(mox.file.list_directory(self.d, skip_file=True), ["dir", "empty"])
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.list_directory(self.p("nope"))
        with self.assertRaises(NotADirectoryError):
            mox.file.list_directory(self.p("a.txt"))

    def test_glob(self):
        self.tree()
        self.assertEqual(mox.file.glob(self.p("dir", "*")), [self.p("dir", "b.txt"), self.p("dir", "sub")])
        self.assertEqual(mox.file.glob(self.p("*", "sub", "?.txt")), [self.p("dir", "sub", "c.txt")])
        self.assertEqual(mox.file.glob(self.p("nothing*")), [])

    def test_walk(self):
        self.tree()
        got = [(d, sorted(s), sorted(f)) for d, s, f in mox.file.walk(self.d)]
        self.assertEqual(sorted(got), sorted([
            (self.d, ["dir", "empty"], ["a.txt", "z.txt"]),
            (self.p("dir"), ["sub"], ["b.txt"]),
            (self.p("dir", "sub"), [], ["c.txt", "d.bin"]),
            (self.p("empty"), [], []),
        ]))
        self.assertEqual(list(mox.file.walk(self.p("nope"))), [])

    def test_exists_is_directory_get_size_stat(self):
        self.tree()
        self.assertTrue(mox.file.exists(self.p("a.txt")))
        self.assertTrue(mox.file.exists(self.p("dir")))
        self.assertFalse(mox.file.exists(self.p("nope")))
        self.assertTrue(mox.file.is_directory(self.p("dir")))
        self.assertTrue(mox.file.is_directory(self.p("dir") + "/"))
        self.assertFalse(mox.file.is_directory(self.p("a.txt")))
        self.assertFalse(mox.file.is_directory(self.p("nope")))
        self.assertEqual(mox.file.get_size(self.p("a.txt")), len("content of a.txt"))
        self.assertEqual(mox.file.get_size(self.p("dir")), 0)
        want = sum(len("content of " + r) for r in ("dir/b.txt", "dir/sub/c.txt", "dir/sub/d.bin"))
        self.assertEqual(mox.file.get_size(self.p("dir"), recursive=True), want)
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.get_size(self.p("nope"))
        st = mox.file.stat(self.p("a.txt"))
        self.assertEqual(st.length, len("content of a.txt"))
        self.assertFalse(st.is_directory)
        self.assertEqual(st.mtime_nsec, os.stat(self.p("a.txt")).st_mtime_ns)
        self.assertTrue(mox.file.stat(self.p("dir")).is_directory)
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.stat(self.p("nope"))

    def test_make_dirs_mk_dir(self):
        mox.file.make_dirs(self.p("x", "y", "z"))
        mox.file.make_dirs(self.p("x", "y", "z"))  # exists: fine
        self.assertTrue(os.path.isdir(self.p("x", "y", "z")))
        mox.file.mk_dir(self.p("x", "w"))
        self.assertTrue(os.path.isdir(self.p("x", "w")))
        with self.assertRaises(OSError):
            mox.file.mk_dir(self.p("missing", "child"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.mk_dir(self.p("missing", "child"))

    def test_remove(self):
        self.tree()
        mox.file.remove(self.p("a.txt"))
        self.assertFalse(os.path.exists(self.p("a.txt")))
        mox.file.remove(self.p("dir"))  # a directory without recursive: no-op
        self.assertTrue(os.path.isdir(self.p("dir")))
        mox.file.remove(self.p("z.txt"), recursive=True)  # a file with recursive: no-op
        self.assertTrue(os.path.exists(self.p("z.txt")))
        mox.file.remove(self.p("dir"), recursive=True)
        self.assertFalse(os.path.exists(self.p("dir")))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.remove(self.p("nope"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.remove(self.p("nope"), recursive=True)

    def test_rename(self):
        self.tree()
        mox.file.rename(self.p("a.txt"), self.p("b.txt"))
        self.assertEqual(mox.file.read(self.p("b.txt")), "content of a.txt")
        self.assertFalse(os.path.exists(self.p("a.txt")))
        mox.file.rename(self.p("dir"), self.p("dir2"))
        self.assertTrue(os.path.exists(self.p("dir2", "sub", "c.txt")))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.rename(self.p("nope"), self.p("nope2"))

    def test_copy(self):
        self.tree()
        mox.file.copy(self.p("a.txt"), self.p("new", "deep", "a.txt"))  # parents created
        self.assertEqual(mox.file.read(self.p("new", "deep", "a.txt")), "content of a.txt")
        with self.assertRaises(IsADirectoryError):
            mox.file.copy(self.p("dir"), self.p("dir3"))
        with self.assertRaises(IsADirectoryError):
            mox.file.copy(self.p("a.txt"), self.p("dir"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy(self.p("nope"), self.p("x"))

    def test_copy_parallel(self):
        self.tree()
        for threads in (16, 0, 1):
            dst = self.p("out%d" % threads)
            mox.file.copy_parallel(self.d + "/dir", dst, threads=threads, is_processing=False)
            self.assertEqual(mox.file.list_directory(dst, recursive=True),
                             ["b.txt", "sub", "sub/c.txt", "sub/d.bin"])
        mox.file.copy_parallel(self.d, self.p("../" + os.path.basename(self.d) + "-copy"))
        copy = self.d + "-copy"
        self.addCleanup(shutil.rmtree, copy, True)
        self.assertTrue(os.path.isdir(os.path.join(copy, "empty")))  # empty dirs too
        mox.file.copy_parallel(self.p("dir"), self.p("some"), file_list=["sub/c.txt", "/b.txt"])
        self.assertEqual(mox.file.list_directory(self.p("some"), recursive=True, skip_dir=True),
                         ["b.txt", "sub/c.txt"])
        with self.assertRaises(NotADirectoryError):
            mox.file.copy_parallel(self.p("a.txt"), self.p("x"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy_parallel(self.p("nope"), self.p("x"))
        with self.assertRaises(mox.file.MoxFileNotExistsException):
            mox.file.copy_parallel(self.p("dir"), self.p("y"), file_list=["no-such-file"])

    def test_shift_local_untouched(self):
        mox.file.shift("os", "mox")
        try:
            with open(self.p("s.txt"), "w") as f:
                f.write("s")
            self.assertTrue(os.path.exists(self.p("s.txt")))
            self.assertEqual(os.listdir(self.d), ["s.txt"])
            os.makedirs(self.p("m", "n"))
            shutil.rmtree(self.p("m"))
            self.assertFalse(os.path.exists(self.p("m")))
        finally:
            mox.file.shift("mox", "os")
        self.assertIs(open, __builtins__["open"] if isinstance(__builtins__, dict) else __builtins__.open)
        with self.assertRaises(ValueError):
            mox.file.shift("os", "tf")

    def test_urls(self):
        r = _path.parse("obs://b/k/x")
        self.assertEqual((r.scheme, r.bucket, r.key, r.prefix), ("obs://", "b", "k/x", "k/x/"))
        r = _path.parse("S3://b")
        self.assertEqual((r.scheme, r.bucket, r.key, r.prefix, r.is_root), ("S3://", "b", "", "", True))
        self.assertEqual(_path.parse("obs://b/d/").dir_url(), "obs://b/d")
        self.assertEqual(_path.parse("obs://b/d/e").parent().key, "d/")
        self.assertEqual(_path.join("s3://b/d/", "x/y"), "s3://b/d/x/y")
        self.assertEqual(_path.join("s3://b/d", "x"), "s3://b/d/x")
        self.assertIsNone(_path.parse("/tmp/obs://x"))
        with self.assertRaises(ValueError):
            _path.parse("obs:///k")
        with self.assertRaises(TypeError):
            _path.parse(12)

    def test_exceptions(self):
        for cls in (mox.file.MoxFileNotExistsException, mox.file.MoxFileReadException,
                    mox.file.MoxFileRespException, mox.file.MoxFileNameDuplicateException):
            e = cls("message", "obs://b/k")
            self.assertIsInstance(e, mox.file.MoxFileException)
            self.assertIsInstance(e, OSError)
            self.assertEqual(str(e), "message")
            self.assertIs(getattr(mox, cls.__name__), cls)
        self.assertIsNone(mox.file.MoxFileRespException("m").resp)
        import moxing.framework.file as framework_file
        self.assertIs(framework_file, mox.file)

    def test_no_endpoint(self):
        saved = {k: os.environ.pop(k) for k in ("S3_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
                 if k in os.environ}
        try:
            with self.assertRaises(mox.file.MoxFileConfigException) as cm:
                mox.file.read("obs://b/k")
            self.assertIn("S3_ENDPOINT", str(cm.exception))
        finally:
            os.environ.update(saved)


if __name__ == "__main__":
    unittest.main()
