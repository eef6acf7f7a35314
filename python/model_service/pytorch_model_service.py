"""PTServingBaseService: the base class of PyTorch handlers
(ModelArts `model_service.pytorch_model_service`).

The server passes as model_path the first *.pth / *.pt file (sorted by name)
at the top of the model directory, or the directory when there is none. The
handler's __init__ loads the model into self.model.
"""

from .model_service import SingleNodeService

__all__ = ["PTServingBaseService"]


class PTServingBaseService(SingleNodeService):
    """Base class of PyTorch handlers.

    The default _inference calls self.model: on each value of a dict input
    ({key: self.model(value)}, as ModelArts does), on the input itself
    otherwise. Handlers that need anything else (torch.no_grad, batching,
    devices) override _inference.
    """

    def __init__(self, model_name, model_path):
        super(PTServingBaseService, self).__init__(model_name, model_path)
        self.model = None

    def _inference(self, data):
        model = getattr(self, "model", None)
        if model is None:
            raise RuntimeError("%s._inference: self.model is not set; load the model in __init__ "
                               "(self.model = ...) or override _inference" % type(self).__name__)
        if isinstance(data, dict):
            return {k: model(v) for k, v in data.items()}
        return model(data)
