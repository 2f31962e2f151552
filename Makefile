# Every target builds .venv by itself, so each works on a fresh clone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs into the one .venv: the package with its runtime dependencies and the
# `redteam` extra (all the demo needs: its last step is a redteam search), and the dev
# toolchain on top (`.[dev]`: pytest, mypy, ruff, the SDKs…). Each stamp
# is older than pyproject.toml after an edit there, so the next target re-installs.
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
# The lowest and the highest Python the package claims (pyproject.toml's classifiers): the
# suite runs on each, in .venv for the one `$(PY)` is and in .venv-X.Y for the others.
PYTHONS := 3.11 3.13
# Python may write its bytecode caches (a shell with PYTHONDONTWRITEBYTECODE set forbids it):
# without them every Python the suite starts, and pytest's assertion rewriting of each
# plugin, compiles its modules again, seconds per process.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-pythons lint browser servers peers bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[redteam]'
	touch $(RUNTIME)

# httpbin, the HTTP zoo the suite records, pins greenlet below 3 on Python 3.11 for gevent,
# which it never imports, and Playwright needs greenlet 3: it goes in without its pins, its
# own dependencies with `.[dev]`.
HTTPBIN := 'httpbin==0.10.4'

# `.[dev]` holds the runtime install too, so it stamps both.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps $(HTTPBIN)
	touch $(RUNTIME) $(STAMP)

demo: $(RUNTIME)
	$(BIN)/python -m faultdeck.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks
	$(BIN)/mypy

# The suite runs on two workers (pytest-xdist): CI has two cores. The venvs of every Python
# and the browser install side by side first (mostly waiting on downloads and the disk).
test:
	$(MAKE) --no-print-directory -j 3 --output-sync=target $(STAMP) $(OTHER_VENVS) browser servers
	$(MAKE) --no-print-directory peers
	$(MAKE) --no-print-directory lint
	$(BIN)/pytest -n 2
	$(MAKE) --no-print-directory test-pythons

# The web view's tests drive a real Chromium: Debian's package (Playwright cannot download a
# browser here). Installed when missing, as root or through sudo.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing Debian's chromium for the browser tests"; \
	  $$sudo apt-get update -q && $$sudo apt-get install -y -q chromium; }

# Clients and servers nobody here wrote, which the suite records and replays, besides the
# Python ones in `.[dev]`: from npm the OpenAI Node SDK and the reference filesystem MCP
# server, and curl.
NODE_DEPS := tests/node/node_modules/.installed

servers: $(NODE_DEPS)
	@command -v curl >/dev/null 2>&1 || { \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing curl for the server tests"; \
	  $$sudo apt-get update -q && $$sudo apt-get install -y -q curl; }

$(NODE_DEPS): tests/node/package.json tests/node/package-lock.json
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The Python `$(PY)` is, and the others the suite runs on.
HERE := $(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
OTHER_VENVS := $(foreach v,$(filter-out $(HERE),$(PYTHONS)),$(VENV)-$(v)/.installed)

# A venv for another Python, found on PATH or under pyenv. Missing one is an error in CI (CI
# is set) and a warning elsewhere, so that `make test` still runs on a machine with one
# Python (test-pythons then skips it).
$(VENV)-%/.installed: pyproject.toml
	@py=; for c in $$(ls -d $$HOME/.pyenv/versions/$*.*/bin/python$* 2>/dev/null | sort -V -r) \
	    $$(command -v python$*); do "$$c" -c '' 2>/dev/null && { py=$$c; break; }; done; \
	if [ -z "$$py" ]; then \
	  if [ -n "$$CI" ]; then echo "python$* not found on PATH or under pyenv: CI runs the suite on $(PYTHONS); install Python $*"; exit 1; fi; \
	  echo "warning: python$* not found on PATH or under pyenv; the suite will run on $(HERE) only (install Python $* to run it there too)"; exit 0; \
	fi; \
	$$py -m venv $(VENV)-$* && $(VENV)-$*/bin/python -m pip install --quiet --upgrade pip \
	  && $(VENV)-$*/bin/python -m pip install --quiet -e '.[dev]' \
	  && $(VENV)-$*/bin/python -m pip install --quiet --no-deps $(HTTPBIN) && touch $@

test-pythons: $(OTHER_VENVS)
	@for v in $(filter-out $(HERE),$(PYTHONS)); do \
	  venv=$(VENV)-$$v; \
	  [ -f $$venv/.installed ] || continue; \
	  echo "== the suite on $$($$venv/bin/python -V)"; \
	  $$venv/bin/pytest -n 2 -p no:cacheprovider || exit 1; \
	done

# The peers it measures against are in `.[bench]` (and in `.[dev]`, for the lint and the
# benchmark's smoke test), but for the pytest plugins the pytest-suite rows measure
# (pytest-recording, cassetter): each registers --record-mode, as agentcassette in .venv
# does, and two plugins registering one option stop pytest. They go into
# .venv-bench-peers/, which those rows put on their children's PYTHONPATH.
PEERS := .venv-bench-peers/.installed

peers: $(PEERS)

$(PEERS): benchmarks/pytest_suite.py | $(STAMP)
	$(BIN)/python -m benchmarks --install-peers
	touch $@

bench: $(STAMP) $(PEERS)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(VENV)-* .pytest_cache .mypy_cache .ruff_cache tests/node/node_modules
