"""Reading ModelArts manifests (JSON Lines, one sample per line) as a dataset
version's job input stages them, or from OBS:

    import moxing as mox
    ds = mox.manifest.parse_manifest(os.path.join(args.data_url, "flowers-v1.manifest"))
    for s in ds.get_sample_list():
        s.get_source(), s.get_usage(), [a.get_name() for a in s.get_annotations()]

In an Atelier job the staged manifest's sources are local paths; the
`.obs.manifest` beside it keeps the obs:// ones. A path may be local or an
obs:// / s3:// URL (read with mox.file). Only the standard library is used.
"""

import json

from . import file as _file
from ._errors import MoxFileException

__all__ = ["Annotation", "Sample", "DataSet", "parse_manifest", "get_annotations", "ManifestError"]


class ManifestError(MoxFileException):
    """A manifest line that is not a JSON object with a "source"."""


def _text(d, key):
    v = d.get(key)
    return None if v is None else str(v)


class Annotation(object):
    """One annotation of a sample: a classification tag or a box."""

    def __init__(self, d):
        self._d = d

    def get_type(self):
        return _text(self._d, "type")

    def get_name(self):
        return _text(self._d, "name")

    def get_loc(self):
        """The annotation file (annotation-loc): a VOC XML for detection."""
        return _text(self._d, "annotation-loc")

    def get_annotation_format(self):
        return _text(self._d, "annotation-format")

    def get_property(self):
        return self._d.get("property")

    def get_hard(self):
        return _text(self._d, "hard")

    def get_confidence(self):
        return self._d.get("confidence")

    def get_annotated_by(self):
        return _text(self._d, "annotated-by")

    def get_creation_time(self):
        return _text(self._d, "creation-time")

    def get_bndbox(self):
        """The box [[xmin, ymin], [xmax, ymax]] in pixels, or None."""
        p = self._d.get("property") or {}
        if p.get("@modelarts:shape") == "bndbox":
            return p.get("@modelarts:feature")
        return None

    def to_dict(self):
        return dict(self._d)


class Sample(object):
    """One line of a manifest."""

    def __init__(self, d):
        self._d = d
        self._annotations = [Annotation(a) for a in (d.get("annotation") or []) if isinstance(a, dict)]

    def get_source(self):
        return _text(self._d, "source")

    def get_usage(self):
        return _text(self._d, "usage")

    def get_id(self):
        return _text(self._d, "id")

    def get_hard(self):
        return _text(self._d, "hard")

    def get_inference_loc(self):
        return _text(self._d, "inference-loc")

    def get_source_etag(self):
        """The ETag the version recorded for the source (Atelier)."""
        return _text(self._d, "source-etag")

    def get_source_version_id(self):
        """The version id the version pinned for the source, in a
        versioned bucket (Atelier); None when it pinned none."""
        return _text(self._d, "source-version-id")

    def get_annotations(self):
        return list(self._annotations)

    def to_dict(self):
        return dict(self._d)


class DataSet(object):
    """The samples of a manifest, in file order."""

    def __init__(self, samples):
        self._samples = list(samples)

    def get_sample_list(self):
        return list(self._samples)

    def get_size(self):
        return len(self._samples)

    def get_classes(self):
        """The annotation names, sorted."""
        return sorted({a.get_name() for s in self._samples for a in s.get_annotations() if a.get_name()})


def _sample(line, n, path):
    try:
        d = json.loads(line)
    except ValueError as e:
        raise ManifestError("%s line %d is not JSON: %s" % (path, n, e))
    if not isinstance(d, dict) or not isinstance(d.get("source"), str) or not d["source"]:
        raise ManifestError('%s line %d has no "source"' % (path, n))
    return Sample(d)


def parse_manifest(path):
    """The DataSet of the manifest at path (local, obs:// or s3://)."""
    text = _file.read(path)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    samples = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            samples.append(_sample(line, n, path))
    return DataSet(samples)


def get_annotations(line):
    """The annotations of one manifest line (a JSON text)."""
    return _sample(line, 1, "line").get_annotations()
