#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make-data.py - writes the small tabular data of jobs/tabular-csv.yaml
and jobs/regression-npy.yaml into the directory given (default: this
script's own), the same bytes on every run (numpy's PCG64 from a fixed
seed; only numpy is needed):

  tabular-train.csv, tabular-eval.csv   header x0,x1,x2,x3,label: 3
      classes, each a Gaussian blob; the four features on scales from
      0.01 to 1000, as raw measurements come (data.normalize: standard
      puts them on one footing)
  regression-train-x.npy, regression-train-y.npy, regression-eval-x.npy,
  regression-eval-y.npy   float32 features (N, 4) on scales from 0.1 to
      100 and two float32 targets (N, 2), each a linear function of the
      features plus Gaussian noise of standard deviation 0.1

Usage: python3 jobs/data/make-data.py [DIR]

Beside them, fortunes-bpe.json (the 512-id BPE of jobs/fortunes-bpe.yaml)
is not this script's: dtrain writes it, the same bytes on every run, from
the text Debian's fortunes package installs:

  dtrain tokenize --vocab-size 512 -o jobs/data/fortunes-bpe.json \
      /usr/share/games/fortunes/cookie
"""
import os
import sys

import numpy as np

SCALES = np.array([0.01, 1.0, 100.0, 1000.0])


def classes(rng, n):
    centres = np.array([[0, 0, 0, 0], [2, -1, 1, 0], [-1, 2, 0, 2]], float)
    y = rng.integers(0, 3, n)
    x = (centres[y] + rng.normal(0, 0.8, (n, 4))) * SCALES + 5 * SCALES
    return x, y


def write_csv(path, x, y):
    with open(path, "w") as f:
        f.write("x0,x1,x2,x3,label\n")
        for row, label in zip(x, y):
            f.write(",".join("%.6g" % v for v in row) + ",%d\n" % label)


def regression(rng, n):
    x = rng.normal(0, 1, (n, 4)) * np.array([0.1, 1, 10, 100])
    w = np.array([[3.0, -1.0], [0.5, 2.0], [-0.2, 0.1], [0.01, -0.02]])
    y = x @ w + np.array([1.0, -2.0]) + rng.normal(0, 0.1, (n, 2))
    return x.astype(np.float32), y.astype(np.float32)


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    rng = np.random.default_rng(32)
    for name, n in (("train", 240), ("eval", 80)):
        write_csv(os.path.join(out, "tabular-%s.csv" % name),
                  *classes(rng, n))
    for name, n in (("train", 240), ("eval", 80)):
        x, y = regression(rng, n)
        np.save(os.path.join(out, "regression-%s-x.npy" % name), x)
        np.save(os.path.join(out, "regression-%s-y.npy" % name), y)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
