"""ModelArts-style inference handler for the digits CNN: a multipart upload
of images (field "images") -> the predicted digit of each."""

import torch
from PIL import Image

from model_service.pytorch_model_service import PTServingBaseService

from net import DigitsNet
from preprocess import to_tensor


class DigitsService(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(DigitsService, self).__init__(model_name, model_path)
        self.model = DigitsNet()
        self.model.load_state_dict(torch.load(model_path, map_location="cpu"))
        self.model.eval()
        torch.set_num_threads(1)

    def _preprocess(self, data):
        images = {}
        for field, files in data.items():
            if not isinstance(files, dict):
                continue
            for name, content in files.items():
                images[name] = to_tensor(Image.open(content))
        return images

    def _inference(self, data):
        if not data:
            return {}
        names = list(data)
        batch = torch.stack([data[n] for n in names])
        with torch.no_grad():
            probs = torch.softmax(self.model(batch), dim=1)
        conf, pred = probs.max(dim=1)
        return {n: (int(p), float(c)) for n, p, c in zip(names, pred, conf)}

    def _postprocess(self, data):
        return {"predictions": [{"file": n, "digit": d, "confidence": round(c, 4)} for n, (d, c) in data.items()]}
