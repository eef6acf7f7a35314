"""TfServingBaseService: the base class of TensorFlow handlers
(ModelArts `model_service.tfserving_model_service`).

model_path is the model directory (a SavedModel, for instance). Atelier has
no built-in TensorFlow Serving: a TensorFlow handler loads its model in
__init__ and overrides _inference.
"""

from .model_service import SingleNodeService

__all__ = ["TfServingBaseService"]


class TfServingBaseService(SingleNodeService):
    """Base class of TensorFlow handlers."""

    def __init__(self, model_name, model_path):
        super(TfServingBaseService, self).__init__(model_name, model_path)
        self.model_inputs = {}
        self.model_outputs = {}

    def _inference(self, data):
        raise NotImplementedError(
            "TensorFlow serving is not available: override _inference in %s "
            "(load the model in __init__, e.g. with tf.saved_model.load(self.model_path), "
            "and call it in _inference)" % type(self).__name__)
