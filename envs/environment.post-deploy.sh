#!/usr/bin/env bash
# Runs inside the freshly created conda environment (Snakemake's post-deploy hook): the wheels whose declared
# dependencies are deliberately absent (see nodeps.txt), installed as `make venv` installs them.
set -euo pipefail
pip install --no-deps -r "$(dirname "${BASH_SOURCE[0]}")/nodeps.txt"
