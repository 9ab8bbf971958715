# RLDS Studio - two commands: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PG_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test

.PHONY: run test lint typecheck suites pytest test-postgres chromium haproxy egl consumer-venv runtimes bench vendor vendor-one clean

PIP_VERSION := 26.3
LOCK_ARGS   := --universal --python-version 3.11 -q --custom-compile-command "make lock"
RUNTIMES    ?= robosuite dm_control nethack robotics
ALL_RUNTIMES := robosuite dm_control nethack robotics
LOCKS       := requirements/run.txt requirements/test.txt \
               tests/export/consumer-requirements.txt \
               tests/export/minari-requirements.txt tests/export/lerobot-requirements.txt \
               $(foreach r,$(ALL_RUNTIMES),requirements/runtimes/$(r).txt)

.PHONY: lock lock-check compile-locks

# Installs come only from the lock files in requirements/ (made by `make lock`); the
# project itself is installed without dependencies. A stamp per lock: a new lock reinstalls.
$(VENV)/.run-stamp: requirements/run.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q pip==$(PIP_VERSION)
	$(BIN)/pip install -q -r requirements/run.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

$(VENV)/.test-stamp: requirements/test.txt $(VENV)/.run-stamp
	$(BIN)/pip install -q -r requirements/test.txt
	touch $@

## lock: re-resolve every dependency to its newest allowed version and rewrite the lock files
## (requirements/run.txt, test.txt, requirements/runtimes/*.txt
## (the environment runtimes'), tests/export/*-requirements.txt)
lock: $(VENV)/.test-stamp
	$(MAKE) compile-locks UV_ARGS=--upgrade OUT=

## lock-check: the lock files still satisfy pyproject.toml (fails when a dependency changed
## without `make lock`; resolves nothing newer)
lock-check: $(VENV)/.test-stamp
	rm -rf .lock-check && mkdir -p .lock-check/requirements/runtimes .lock-check/tests/export
	for f in $(LOCKS); do cp $$f .lock-check/$$f; done
	$(MAKE) compile-locks OUT=.lock-check/
	for f in $(LOCKS); do diff -u $$f .lock-check/$$f || { \
		echo "$$f is out of date with pyproject.toml: run make lock"; exit 1; }; done
	rm -rf .lock-check

compile-locks:
	$(BIN)/uv pip compile pyproject.toml $(LOCK_ARGS) $(UV_ARGS) -o $(OUT)requirements/run.txt
	$(BIN)/uv pip compile pyproject.toml --extra test $(LOCK_ARGS) $(UV_ARGS) \
		-o $(OUT)requirements/test.txt
	$(BIN)/uv pip compile tests/export/consumer-requirements.in $(LOCK_ARGS) $(UV_ARGS) \
		-o $(OUT)tests/export/consumer-requirements.txt
	$(BIN)/uv pip compile tests/export/minari-requirements.in $(LOCK_ARGS) $(UV_ARGS) \
		-o $(OUT)tests/export/minari-requirements.txt
	$(BIN)/uv pip compile tests/export/lerobot-requirements.in $(LOCK_ARGS) $(UV_ARGS) \
		--override tests/export/lerobot-overrides.txt -o $(OUT)tests/export/lerobot-requirements.txt
	for r in $(ALL_RUNTIMES); do (cd requirements/runtimes && $(CURDIR)/$(BIN)/uv pip compile \
		$$r.in $(LOCK_ARGS) $(UV_ARGS) -o $(CURDIR)/$(OUT)requirements/runtimes/$$r.txt) || exit 1; done

## run: install, migrate, load the sample studies and serve on http://127.0.0.1:8000
run: $(VENV)/.run-stamp
	$(BIN)/rlds-studio serve

## test: install test tools (and Debian's chromium, HAProxy and EGL), lint, type-check, then the
## suite on SQLite and, when a PostgreSQL answers at 127.0.0.1:5432, on PostgreSQL, one after the other
test: $(VENV)/.test-stamp chromium haproxy egl consumer-venv runtimes lock-check lint typecheck suites

## runtimes: install the environment runtimes (RUNTIMES=..., default all: robosuite dm_control
## nethack robotics) from requirements/runtimes/, each into its own venv under STUDIO_RUNTIMES_DIR
## (default ~/.cache/rlds-studio/runtimes, shared by checkouts: a runtime installed from the
## same lock is kept); `make run` installs none (docs/runtime.md, "Runtimes")
runtimes: $(VENV)/.run-stamp egl
	$(BIN)/rlds-studio runtimes install $(RUNTIMES)

lint: $(VENV)/.test-stamp
	$(BIN)/ruff check server tests benchmarks alembic
	$(BIN)/ruff format --check server tests benchmarks alembic

typecheck: $(VENV)/.test-stamp
	$(BIN)/mypy

# The passes run one after the other, each on two pytest-xdist workers (--dist loadgroup: a
# module's tests stay on one worker unless it sets SPREAD = True; the slowest modules start
# first, tests/slow_modules.txt), then the tests marked alone by themselves. On these two
# cores one process per pass left a third of the CPU idle (tests waiting on workers, servers
# and pages: 2,358 s for the three passes on 2026-12-02); both passes at once
# (SUITES_AT_ONCE=1) loaded the machine past what load-sensitive tests bear.
# Each pass has its own temporary folder and ends with its wall time and ten slowest tests.
TEST_WORKERS ?= 2
PG_WORKERS   ?= 2
SUITES_AT_ONCE ?= 0
PYTEST_ARGS  ?=
suites: $(VENV)/.test-stamp
	PG_WORKERS=$(PG_WORKERS) SUITES_AT_ONCE=$(SUITES_AT_ONCE) bash tests/run_suites.sh $(BIN)/pytest "$(PG_URL)" -n $(TEST_WORKERS) \
		--dist loadgroup --no-loadscope-reorder --durations=10 $(PYTEST_ARGS)

## pytest: the suite on SQLite only; test-postgres: on PostgreSQL only
pytest: $(VENV)/.test-stamp
	STUDIO_TEST_DATABASE_URL= $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=10 $(PYTEST_ARGS)

test-postgres: $(VENV)/.test-stamp
	STUDIO_TEST_DATABASE_URL="$(PG_URL)" $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
		--durations=10 $(PYTEST_ARGS)

## chromium: Debian's chromium for the browser tests (Playwright's own download is not used)
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	else echo "Browser tests need Debian's chromium: sudo apt-get install chromium"; fi

## haproxy: Debian's HAProxy for the native deployment test (tests/deploy/, docker/haproxy.cfg)
haproxy:
	@if [ -x /usr/sbin/haproxy ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq haproxy; \
	else echo "The deployment test needs Debian's HAProxy: sudo apt-get install haproxy"; fi

## egl: Debian's EGL and Mesa, for MuJoCo's headless rendering (the runtimes; MUJOCO_GL=egl,
## Mesa's llvmpipe on the CPU where there is no GPU)
EGL_PACKAGES := libegl1 libegl-mesa0 libgl1-mesa-dri
egl:
	@if dpkg -s $(EGL_PACKAGES) >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $(EGL_PACKAGES); \
	else echo "MuJoCo's headless rendering needs EGL: sudo apt-get install $(EGL_PACKAGES)"; fi

## consumer-venv: TensorFlow + tensorflow-datasets + rlds (.consumer-venv), minari
## (.consumer-venv-minari) and lerobot + torch (.consumer-venv-lerobot), to load exports
## as researchers would
consumer-venv:
	PYTHON=$(PYTHON) tests/export/make_consumer_venv.sh
	CONSUMER=minari PYTHON=$(PYTHON) tests/export/make_consumer_venv.sh
	CONSUMER=lerobot PYTHON=$(PYTHON) tests/export/make_consumer_venv.sh

## vendor: refresh web/vendor/ (built files from the npm registry, pinned; see web/vendor/README.md)
SWAGGER_UI_VERSION := 5.35.0
SWAGGER_UI_FILES   := swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE
UPLOT_VERSION      := 1.6.32
UPLOT_FILES        := dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE
JSON_EDITOR_VERSION := 2.17.2
JSON_EDITOR_FILES   := dist/jsoneditor.js dist/jsoneditor.js.LICENSE.txt LICENSE
vendor:
	$(MAKE) vendor-one PKG=swagger-ui-dist VERSION=$(SWAGGER_UI_VERSION) DIR=swagger-ui FILES="$(SWAGGER_UI_FILES)"
	$(MAKE) vendor-one PKG=uplot VERSION=$(UPLOT_VERSION) DIR=uplot FILES="$(UPLOT_FILES)"
	$(MAKE) vendor-one PKG=@json-editor/json-editor VERSION=$(JSON_EDITOR_VERSION) DIR=json-editor FILES="$(JSON_EDITOR_FILES)"

# vendor-one: PKG@VERSION from the npm registry; FILES (paths in the package) into web/vendor/DIR
vendor-one:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	(cd "$$tmp" && npm pack --silent $(PKG)@$(VERSION) >/dev/null && tar -xzf *.tgz) && \
	rm -rf web/vendor/$(DIR) && mkdir -p web/vendor/$(DIR) && \
	for f in $(FILES); do cp "$$tmp/package/$$f" web/vendor/$(DIR)/; done && \
	echo "web/vendor/$(DIR): $(PKG) $(VERSION)"

bench: $(VENV)/.test-stamp
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
