# The README's two commands live here: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup system-deps demo test lint typecheck bench fixtures-check

# constraints.txt pins every package the venv holds (pip freeze of a working venv):
# installs are the same everywhere; pyproject.toml keeps ranges for people installing
# the package.
$(BIN)/sessiontree: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(BIN)/sessiontree

setup: $(BIN)/sessiontree

demo: setup
	$(BIN)/sessiontree demo --root /tmp/sessiontree-demo
	$(BIN)/sessiontree --root /tmp/sessiontree-demo sessions --all

# The interop tests drive the real client (from npm) and, for /rewind, tmux.
# The web viewer's browser tests drive Debian's Chromium (Playwright's own download
# does not work here).
system-deps:
	@command -v tmux >/dev/null || (apt-get update -qq && apt-get install -y -qq tmux) || \
		echo "tmux could not be installed: the /rewind interop test will skip, loudly"
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium) || \
		echo "chromium could not be installed: the browser tests (tests/web) will skip, loudly"
	@command -v pg_config >/dev/null && test -n "$$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null)" || \
		(apt-get update -qq && apt-get install -y -qq postgresql postgresql-contrib) || \
		echo "postgresql could not be installed: the store tests (tests/store) will fail, saying so"

test: setup system-deps
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m bench

fixtures-check: setup
	python3 ../shared/check_fixtures.py -v --sessiontree $(BIN)/sessiontree
