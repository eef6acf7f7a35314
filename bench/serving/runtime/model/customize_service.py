"""The benchmark's trivial handler: echo the request."""

from model_service.model_service import SingleNodeService


class EchoService(SingleNodeService):
    def _inference(self, data):
        return {"ok": True, "echo": data}
