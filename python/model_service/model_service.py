"""The base classes of inference handlers (ModelArts `model_service.model_service`).

A handler's pipeline is _preprocess -> _inference -> _postprocess, run by
inference(data). `data` is the decoded request: the parsed object for a JSON
body, {field: {filename: file_obj}} for multipart/form-data (plain text
fields as str). The return value of _postprocess becomes the JSON response.
"""

import time

__all__ = ["BaseService", "ModelService", "SingleNodeService"]


class BaseService(object):
    """Root of every handler class.

    __init__(model_name, model_path) stores both; subclasses that load a
    model override it and call super().__init__(model_name, model_path)
    first (a handler that sets the attributes itself works as well). The
    three steps default to passing the data through unchanged.
    """

    def __init__(self, model_name, model_path):
        self.model_name = model_name
        self.model_path = model_path
        self.ctx = None
        self.last_timings = None

    def _preprocess(self, data):
        """Turn the decoded request into the model's input."""
        return data

    def _inference(self, data):
        """Run the model on the preprocessed input."""
        return data

    def _postprocess(self, data):
        """Turn the model's output into a JSON-serialisable response."""
        return data

    def inference(self, data):
        """Run _preprocess, _inference and _postprocess on data and return
        the result. The seconds spent in each step are kept in
        self.last_timings as {"preprocess", "inference", "postprocess"}."""
        t0 = time.perf_counter()
        data = self._preprocess(data)
        t1 = time.perf_counter()
        data = self._inference(data)
        t2 = time.perf_counter()
        data = self._postprocess(data)
        t3 = time.perf_counter()
        self.last_timings = {"preprocess": t1 - t0, "inference": t2 - t1, "postprocess": t3 - t2}
        return data

    def ping(self):
        """Liveness hook kept for ModelArts compatibility; returns None."""
        return None

    def signature(self):
        """Model signature hook kept for ModelArts compatibility; returns None."""
        return None


# ModelArts' own name for the root class.
ModelService = BaseService


class SingleNodeService(BaseService):
    """A handler serving one model in one process (ModelArts' MindSpore and
    generic base class)."""
