"""Loading a model directory: config.json, the handler class of
customize_service.py, model_path, the handler instance and the warmup
request.

Every function raises LoadError (carrying the stage, "load" or "warmup")
or lets the handler's own exception through; model_service.server turns
either into the failed ready file.
"""

import importlib.util
import inspect
import json
import mimetypes
import os
import sys

from . import log as _log_module
from ._body import UploadedFile
from .model_service import BaseService, SingleNodeService
from .pytorch_model_service import PTServingBaseService
from .tfserving_model_service import TfServingBaseService

__all__ = ["LoadError", "read_config", "import_handler_module", "find_handler_class", "model_path_for",
           "instantiate", "warmup_data", "BASE_CLASSES", "MODULE_NAME"]

MODULE_NAME = "customize_service"
BASE_CLASSES = (BaseService, SingleNodeService, PTServingBaseService, TfServingBaseService)


class LoadError(Exception):
    """A model directory that cannot be served, with the stage it failed
    in ("load" or "warmup")."""

    def __init__(self, message, stage="load"):
        Exception.__init__(self, message)
        self.stage = stage


def read_config(model_dir):
    """config.json of model_dir as a dict ({} when the file is absent).
    Only model_type and warmup matter to the server; the other keys are
    the platform's (dependencies are installed before the server starts)."""
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise LoadError("cannot read %s: %s" % (path, e))
    try:
        cfg = json.loads(raw)
    except ValueError as e:
        raise LoadError("config.json is not valid JSON: %s" % e)
    if not isinstance(cfg, dict):
        raise LoadError("config.json must hold a JSON object, not %s" % type(cfg).__name__)
    mt = cfg.get("model_type")
    if mt is not None and not isinstance(mt, str):
        raise LoadError("config.json: model_type must be a string, not %s" % type(mt).__name__)
    if "warmup" in cfg:
        _check_warmup(cfg["warmup"])
    return cfg


def _check_warmup(w):
    if not isinstance(w, dict):
        raise LoadError('config.json: warmup must be an object: {"json": {...}} or '
                        '{"file": "<path in the model dir>", "field": "images"}', "warmup")
    has_json = "json" in w
    has_file = "file" in w
    if has_json == has_file:
        raise LoadError('config.json: warmup must have exactly one of "json" and "file"', "warmup")
    extra = set(w) - {"json", "file", "field"}
    if extra:
        raise LoadError("config.json: warmup has unknown key(s) %s" % ", ".join(sorted(extra)), "warmup")
    if has_file:
        if not isinstance(w["file"], str) or not w["file"]:
            raise LoadError('config.json: warmup "file" must be a path in the model directory', "warmup")
        if not isinstance(w.get("field", "images"), str) or not w.get("field", "images"):
            raise LoadError('config.json: warmup "field" must be a non-empty string', "warmup")
    elif "field" in w:
        raise LoadError('config.json: warmup "field" goes with "file", not "json"', "warmup")


def _alias_log_module():
    """Make `import log` (ModelArts handlers' logging module) work when the
    model directory and the environment have no log module of their own."""
    if "log" in sys.modules:
        return
    try:
        found = importlib.util.find_spec("log") is not None
    except (ImportError, ValueError):
        found = True
    if not found:
        sys.modules["log"] = _log_module


def import_handler_module(model_dir):
    """Import model_dir/customize_service.py as the module customize_service,
    with model_dir first on sys.path so that its sibling modules import."""
    path = os.path.join(model_dir, MODULE_NAME + ".py")
    if not os.path.isfile(path):
        raise LoadError("%s.py not found in the model directory %s" % (MODULE_NAME, model_dir))
    if sys.path[:1] != [model_dir]:
        sys.path.insert(0, model_dir)
    _alias_log_module()
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(MODULE_NAME, None)
        raise
    return module


def find_handler_class(module):
    """The one class defined in module (not imported into it) that
    subclasses a model_service base class."""
    found = []
    imported = []
    for name, obj in sorted(vars(module).items()):
        if not isinstance(obj, type) or obj in BASE_CLASSES:
            continue
        try:
            if not issubclass(obj, BaseService):
                continue
        except TypeError:
            continue
        if obj.__module__ == module.__name__:
            found.append(obj)
        else:
            imported.append(obj)
    if len(found) == 1:
        return found[0]
    if not found:
        msg = ("%s.py defines no handler class: define one class that subclasses "
               "PTServingBaseService (model_service.pytorch_model_service), TfServingBaseService "
               "(model_service.tfserving_model_service) or SingleNodeService (model_service.model_service)"
               % MODULE_NAME)
        if imported:
            msg += "; it only imports %s" % ", ".join("%s.%s" % (c.__module__, c.__name__) for c in imported)
        raise LoadError(msg)
    raise LoadError("%s.py defines %d handler classes (%s); it must define exactly one"
                    % (MODULE_NAME, len(found), ", ".join(c.__name__ for c in found)))


def model_path_for(model_dir, cls, config):
    """model_path as ModelArts gives it: for PyTorch (config.json model_type
    PyTorch, or a PTServingBaseService handler) the first *.pth or *.pt file
    at the top of model_dir, sorted by name; otherwise, or when there is
    none, model_dir itself."""
    pytorch = str(config.get("model_type") or "").lower() == "pytorch" or issubclass(cls, PTServingBaseService)
    if pytorch:
        names = sorted(n for n in os.listdir(model_dir)
                       if (n.endswith(".pth") or n.endswith(".pt"))
                       and os.path.isfile(os.path.join(model_dir, n)))
        if names:
            return os.path.join(model_dir, names[0])
    return model_dir


def _takes_one_argument(cls):
    """True when cls(...) takes only model_path: ModelArts' machine-learning
    handlers define __init__(self, model_path)."""
    if cls.__init__ is object.__init__:
        return False
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return False
    positional = 0
    for p in list(sig.parameters.values())[1:]:
        if p.kind == p.VAR_POSITIONAL:
            return False
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional == 1


def instantiate(cls, model_name, model_path):
    """cls(model_name, model_path) (cls(model_path) for a one-argument
    __init__). model_name and model_path are set on the instance when its
    __init__ did not set them."""
    if _takes_one_argument(cls):
        inst = cls(model_path)
    else:
        inst = cls(model_name, model_path)
    if not hasattr(inst, "model_name"):
        inst.model_name = model_name
    if not hasattr(inst, "model_path"):
        inst.model_path = model_path
    return inst


def warmup_data(model_dir, warmup):
    """The handler data of config.json's warmup: the "json" value itself, or
    {field: {basename: file}} holding the "file" (a path inside model_dir),
    as a multipart upload arrives."""
    if "json" in warmup:
        return json.loads(json.dumps(warmup["json"]))  # a private copy
    rel = warmup["file"]
    root = os.path.realpath(model_dir)
    path = os.path.realpath(os.path.join(root, rel))
    if os.path.isabs(rel) or not (path == root or path.startswith(root + os.sep)):
        raise LoadError('config.json: warmup "file" %r must be a path inside the model directory' % rel,
                        "warmup")
    try:
        with open(path, "rb") as f:
            content = f.read()
    except OSError as e:
        raise LoadError('config.json: warmup "file" %r cannot be read: %s' % (rel, e), "warmup")
    name = os.path.basename(path)
    return {warmup.get("field", "images"): {name: UploadedFile(content, name, _guess_type(name))}}


def _guess_type(name):
    return mimetypes.guess_type(name)[0] or "application/octet-stream"
