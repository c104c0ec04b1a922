"""Fit and cache the frozen digits classifier of the prompt-tuning substitute.

``python -m papers.romberg_zoge.frozen_model data/romberg_zoge/frozen_mlp.npz`` (run by the rule
``romberg_zoge_data_frozen_model``; BLAS pinned to one thread so that the weights do not depend on the machine's
thread count).
"""
from __future__ import annotations

import sys

from papers.romberg_zoge.problems import fit_frozen_model, save_frozen_model


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m papers.romberg_zoge.frozen_model OUT.npz", file=sys.stderr)
        return 2
    save_frozen_model(args[0], fit_frozen_model())
    print(f"frozen model written to {args[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
