"""Preprocessing shared by train.py and the inference handler, so that a
prediction sees exactly what training saw."""
import torch
from PIL import Image

SIZE = 8


def to_tensor(img):
    """A PIL image (any mode, any size) -> a 1x8x8 float tensor in [0, 1]."""
    img = img.convert("L")
    if img.size != (SIZE, SIZE):
        img = img.resize((SIZE, SIZE), Image.BILINEAR)
    data = torch.tensor(list(img.getdata()), dtype=torch.float32).view(1, SIZE, SIZE)
    return data / 255.0
