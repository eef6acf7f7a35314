"""Trains a small CNN on the digits dataset, ModelArts style:

    train.py --data_url DIR --train_url DIR [--epochs 8] [--lr 0.01] [--batch_size 64]

--data_url holds train/<digit>/*.png and val/<digit>/*.png. Every epoch writes
the checkpoint train_url/latest.pth (a restarted job resumes from it) and
reports loss and accuracy with atelier.report. At the end train_url/model/
holds a deployable model package: config.json, customize_service.py, the
shared net.py and preprocess.py, the weights and a warm-up image.
"""
import argparse
import os
import shutil
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "model"))
from net import DigitsNet  # noqa: E402
from preprocess import to_tensor  # noqa: E402

try:
    import atelier
except ImportError:  # outside Atelier: print the metrics instead
    atelier = None


def load_split(root):
    """ImageFolder layout -> (tensor N x 1 x 8 x 8, labels, class names)."""
    from PIL import Image
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not classes:
        raise FileNotFoundError("Found 0 classes in %s: expected %s/<class>/<image>.png" % (root, root))
    xs, ys = [], []
    for label, name in enumerate(classes):
        d = os.path.join(root, name)
        for f in sorted(os.listdir(d)):
            with Image.open(os.path.join(d, f)) as img:
                xs.append(to_tensor(img))
            ys.append(label)
    return torch.stack(xs), torch.tensor(ys), classes


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data_url", required=True)
    p.add_argument("--train_url", required=True)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--batch_size", type=int, default=64)
    args, _ = p.parse_known_args()
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    t0 = time.time()
    x_train, y_train, classes = load_split(os.path.join(args.data_url, "train"))
    x_val, y_val, _ = load_split(os.path.join(args.data_url, "val"))
    print("loaded %d train and %d val images, classes %s in %.1fs" % (len(x_train), len(x_val), classes, time.time() - t0))

    model = DigitsNet(len(classes))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    ckpt = os.path.join(args.train_url, "latest.pth")
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
        print("resuming from %s at epoch %d" % (ckpt, start))

    g = torch.Generator().manual_seed(1)
    for epoch in range(start, args.epochs):
        model.train()
        perm = torch.randperm(len(x_train), generator=g)
        total = 0.0
        for i in range(0, len(perm), args.batch_size):
            idx = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        train_loss = total / len(x_train)
        val_acc = accuracy(model, x_val, y_val)
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict()}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
        print("epoch %d: loss %.4f val_accuracy %.4f" % (epoch, train_loss, val_acc))
        if atelier:
            atelier.report(step=epoch, loss=train_loss, accuracy=val_acc)

    out = os.path.join(args.train_url, "model")
    os.makedirs(out, exist_ok=True)
    for f in ("config.json", "customize_service.py", "net.py", "preprocess.py"):
        shutil.copy(os.path.join(HERE, "model", f), os.path.join(out, f))
    torch.save(model.state_dict(), os.path.join(out, "digits.pth"))
    # A warm-up image for the service's readiness check: the first val image.
    first = sorted(os.listdir(os.path.join(args.data_url, "val", classes[0])))[0]
    shutil.copy(os.path.join(args.data_url, "val", classes[0], first), os.path.join(out, "warmup.png"))
    print("final val_accuracy %.4f; model package in %s" % (accuracy(model, x_val, y_val), out))


if __name__ == "__main__":
    main()
