"""Writes scikit-learn's handwritten digits (1,797 8x8 images, 10 classes) as
PNG files in ImageFolder layout: OUT/train/<digit>/<n>.png and
OUT/val/<digit>/<n>.png, with a fixed seed (80% train, 20% val).

    /usr/bin/python3 make_dataset.py OUT
"""
import os
import random
import sys

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def main(out):
    digits = load_digits()
    order = list(range(len(digits.images)))
    random.Random(42).shuffle(order)
    cut = int(len(order) * 0.8)
    counts = {"train": 0, "val": 0}
    for rank, i in enumerate(order):
        split = "train" if rank < cut else "val"
        label = int(digits.target[i])
        d = os.path.join(out, split, str(label))
        os.makedirs(d, exist_ok=True)
        # Pixel values are 0..16; scale to 0..255 grey levels.
        pixels = (digits.images[i] * (255.0 / 16.0)).round().astype(np.uint8)
        Image.fromarray(pixels, mode="L").save(os.path.join(d, "%04d.png" % i))
        counts[split] += 1
    print("wrote %d train and %d val images under %s" % (counts["train"], counts["val"], out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_dataset.py OUT_DIR")
    main(sys.argv[1])
