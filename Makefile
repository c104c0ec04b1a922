# One-command entry points. `make reproduce` and `make test` create .venv from envs/ when it is missing
# or older than the pinned files; `make venv` does only that.
PYTHON_BOOT ?= $(shell command -v python3.11 || command -v python3)
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
ENV_FILES   := $(wildcard envs/*.txt)
SNAKEMAKE   := $(PY) -m snakemake
NODEPS_NAMES := $(shell sed -n 's/^\([A-Za-z0-9_.-]*\)==.*/\1/p' envs/nodeps.txt 2>/dev/null | paste -sd'|')
CORES       ?= all
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: venv tools test reproduce smoke full audit perf-check report-index clean help

help:
	@echo "make reproduce   set up .venv, run the quick scale of every enabled paper, then the audit gate"
	@echo "make test        set up .venv and run the test suite"
	@echo "make venv        only set up .venv from envs/ (idempotent)"
	@echo "make tools       install bubblewrap where missing (the sandbox of model-generated code)"
	@echo "make audit       fail when a quick-scale verdict differs from claims.yaml 'expected' or the committed report,"
	@echo "                 or a committed full-scale report does not render again from its committed metrics"
	@echo "make smoke|full  run every paper at that scale"
	@echo "make perf-check  rerun every paper's performance experiment at full scale and compare its headline ratios"
	@echo "                 with the committed ones (reports/performance_reproducibility.md; PAPERS=a,b for some)"

venv: $(STAMP)

$(STAMP): $(ENV_FILES)
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --quiet -r envs/base.txt
	@if [ -f envs/llm.txt ]; then $(PY) -m pip install --quiet -r envs/llm.txt; fi
	@if [ -f envs/nodeps.txt ]; then $(PY) -m pip install --quiet --no-deps -r envs/nodeps.txt; fi
	@# pip check, ignoring the declared (and deliberately absent) dependencies of the --no-deps wheels
	@$(PY) -m pip check | grep -v -E '^($(NODEPS_NAMES)) ' | grep -v '^No broken requirements' \
		| (! grep .) || (echo "pip check: conflicting requirements (above)" >&2; exit 1)
	@touch $(STAMP)

# bubblewrap isolates model-generated code (shared.sandbox); installed from Debian's packages where missing.
tools:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing bubblewrap (shared.sandbox runs model-generated code under it)"; \
	    (apt-get install -y -q bubblewrap || (apt-get update -q && apt-get install -y -q bubblewrap)) >/dev/null; \
	  else \
	    echo "make: bubblewrap (bwrap) is missing: shared.sandbox will refuse to run model-generated code" \
	         "(sacopt, cirbench). Install it: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap" \
	         "(Fedora)." >&2; \
	  fi; }

test: $(STAMP) tools
	$(PY) -m pytest

reproduce: $(STAMP) tools
	$(SNAKEMAKE) --cores $(CORES) --config scale=quick
	$(MAKE) --no-print-directory audit

smoke: $(STAMP)
	$(SNAKEMAKE) --cores $(CORES) --config scale=smoke

full: $(STAMP)
	$(SNAKEMAKE) --cores $(CORES) --config scale=full

audit: $(STAMP)
	$(PY) -m shared.claims.gate --scale quick
	$(PY) -m shared.claims.gate --scale full

perf-check: $(STAMP)
	$(PY) -m shared.perfcheck --papers "$(PAPERS)"

clean:
	rm -rf results logs .snakemake
