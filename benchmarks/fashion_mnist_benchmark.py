"""Benchmark of loading Fashion-MNIST (``vit.data.dataset: fashion_mnist``): all 70,000 images from the gzipped idx
files, the first time (decompression into torchvision's layout, md5, reading) and again (md5 and reading).

Not a test: run it by hand, e.g. ``.venv/bin/python benchmarks/fashion_mnist_benchmark.py`` after
``apt-get install dataset-fashion-mnist``. It decompresses into a fresh temporary folder, never into ``data/``.
"""

from __future__ import annotations

import argparse
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="/usr/share/datasets/fashion-mnist", help="the four .gz idx files")
    args = parser.parse_args()
    t0 = time.perf_counter()
    from maxmargin.experiments.vit import load_fashion_mnist

    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        data = load_fashion_mnist(root, args.files)
        t2 = time.perf_counter()
        load_fashion_mnist(root, args.files)
        t3 = time.perf_counter()
    n = len(data.x_train) + len(data.x_test)
    print(f"import of torch, torchvision and the package: {t1 - t0:.2f} s")
    print(f"first load of {n} images {tuple(data.x_train.shape[1:])} (decompress, md5, read): {t2 - t1:.2f} s")
    print(f"second load (md5, read): {t3 - t2:.2f} s")


if __name__ == "__main__":
    main()
