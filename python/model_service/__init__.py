"""Atelier's model serving runtime, compatible with Huawei ModelArts handlers.

A model version is a directory holding config.json and customize_service.py.
customize_service.py defines ONE class that subclasses a base class of this
package, exactly as on ModelArts:

    model_service.pytorch_model_service.PTServingBaseService   (PyTorch)
    model_service.tfserving_model_service.TfServingBaseService (TensorFlow)
    model_service.model_service.SingleNodeService               (MindSpore, generic)

and overrides __init__(self, model_name, model_path), _preprocess,
_inference and _postprocess. `python -m model_service.server` loads such a
directory and serves it over HTTP (see model_service.server). Only the
Python standard library is used (Python 3.8 or later).
"""

__version__ = "1.0.0"

__all__ = ["__version__"]
