"""mox.manifest on local files."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import moxing as mox  # noqa: E402


class ManifestTests(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="mox-manifest-")
        self.addCleanup(shutil.rmtree, self.d, True)

    def write(self, lines):
        p = os.path.join(self.d, "ds-v1.manifest")
        with open(p, "w", encoding="utf-8") as f:
            f.write("\ufeff" + "\n".join(lines) + "\n\n")
        return p

    def test_samples_and_annotations(self):
        p = self.write([
            json.dumps({"source": "/data/cat/1.png", "usage": "TRAIN", "id": "a1", "source-etag": "e1",
                        "source-version-id": "0192d3a4-5b6c-7d8e-9f00-112233445566",
                        "annotation": [{"type": "modelarts/image_classification", "name": "cat", "annotated-by": "human"}]}),
            json.dumps({"source": "/data/2.png", "annotation": [{"type": "modelarts/object_detection", "name": "dog",
                        "annotation-loc": "/data/2.xml", "hard": "false",
                        "property": {"@modelarts:shape": "bndbox", "@modelarts:feature": [[1, 2], [30, 40]]}}]}),
            json.dumps({"source": "content://good product", "annotation": [{"type": "modelarts/text_classification", "name": "pos"}]}),
        ])
        ds = mox.manifest.parse_manifest(p)
        self.assertEqual(ds.get_size(), 3)
        s = ds.get_sample_list()
        self.assertEqual(s[0].get_source(), "/data/cat/1.png")
        self.assertEqual(s[0].get_usage(), "TRAIN")
        self.assertEqual(s[0].get_source_etag(), "e1")
        self.assertEqual(s[0].get_source_version_id(), "0192d3a4-5b6c-7d8e-9f00-112233445566")
        self.assertIsNone(s[1].get_source_version_id())
        self.assertEqual(s[0].get_annotations()[0].get_name(), "cat")
        self.assertEqual(s[0].get_annotations()[0].get_annotated_by(), "human")
        a = s[1].get_annotations()[0]
        self.assertEqual(a.get_loc(), "/data/2.xml")
        self.assertEqual(a.get_bndbox(), [[1, 2], [30, 40]])
        self.assertIsNone(s[0].get_annotations()[0].get_bndbox())
        self.assertEqual(ds.get_classes(), ["cat", "dog", "pos"])
        self.assertEqual(mox.manifest.get_annotations(json.dumps({"source": "x", "annotation": [{"name": "z"}]}))[0].get_name(), "z")

    def test_errors_name_the_line(self):
        for lines, want in ((['{"source": "a"}', "not json"], "line 2 is not JSON"),
                            (['{"usage": "TRAIN"}'], 'line 1 has no "source"'),
                            (['["a"]'], 'line 1 has no "source"')):
            with self.assertRaises(mox.manifest.ManifestError) as cm:
                mox.manifest.parse_manifest(self.write(lines))
            self.assertIn(want, str(cm.exception))

    def test_missing_file(self):
        with self.assertRaises(mox.MoxFileException):
            mox.manifest.parse_manifest(os.path.join(self.d, "nope.manifest"))


if __name__ == "__main__":
    unittest.main()
