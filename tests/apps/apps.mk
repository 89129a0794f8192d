# Real job systems as test apps (tests/apps/<app>/). Included by the top Makefile.
APPS_DIR := $(ROOT)/tests/apps
PROCRASTINATE_DIR := $(APPS_DIR)/procrastinate
PROCRASTINATE_VENV := $(PROCRASTINATE_DIR)/.venv
CHANCY_DIR := $(APPS_DIR)/chancy
CHANCY_VENV := $(CHANCY_DIR)/.venv
HUEY_DIR := $(APPS_DIR)/huey
HUEY_VENV := $(HUEY_DIR)/.venv

.PHONY: app-images procrastinate-image chancy-image huey-image pgbouncer-image noshell-image app-venv test-apps

app-images: procrastinate-image chancy-image huey-image pgbouncer-image noshell-image ## build the test app images (procrastinate, chancy :1 and :2, huey:1, pgbouncer, noshell); ~1 s when up to date

procrastinate-image: venv docker-up
	@t0=$$SECONDS; PY=$(PY) $(PROCRASTINATE_DIR)/build-image.sh; echo "procrastinate-image: $$((SECONDS - t0)) s"

chancy-image: venv docker-up
	@t0=$$SECONDS; PY=$(PY) $(CHANCY_DIR)/build-image.sh; echo "chancy-image: $$((SECONDS - t0)) s"

huey-image: venv docker-up ## jobhandlers/huey:1: Django + huey (SqlHuey on PostgreSQL), drains on SIGINT
	@t0=$$SECONDS; PY=$(PY) $(HUEY_DIR)/build-image.sh; echo "huey-image: $$((SECONDS - t0)) s"

pgbouncer-image: docker-up ## jobhandlers/pgbouncer:1 (Debian's pgbouncer): the database proxy sidecar of the pod-shape scenarios
	@t0=$$SECONDS; $(APPS_DIR)/pgbouncer/build-image.sh; echo "pgbouncer-image: $$((SECONDS - t0)) s"

noshell-image: venv docker-up ## jobhandlers/workload-noshell:1: the reference workload with no shell and no sleep binary
	@t0=$$SECONDS; PY=$(PY) $(APPS_DIR)/noshell/build-image.sh; echo "noshell-image: $$((SECONDS - t0)) s"

# `make image` also builds the app images: a warm run only compares an inputs label.
image: app-images

app-venv: $(PROCRASTINATE_VENV)/.installed $(CHANCY_VENV)/.installed $(HUEY_VENV)/.installed ## host venvs of the test apps (pinned requirements.txt)

$(PROCRASTINATE_VENV)/.installed: $(PROCRASTINATE_DIR)/requirements.txt
	test -x $(PROCRASTINATE_VENV)/bin/python || python3 -m venv $(PROCRASTINATE_VENV)
	$(PROCRASTINATE_VENV)/bin/pip install -q --no-deps -r $<
	$(PROCRASTINATE_VENV)/bin/pip check
	@touch $@

$(CHANCY_VENV)/.installed: $(CHANCY_DIR)/requirements.txt
	test -x $(CHANCY_VENV)/bin/python || python3 -m venv $(CHANCY_VENV)
	$(CHANCY_VENV)/bin/pip install -q --no-deps -r $<
	$(CHANCY_VENV)/bin/pip check
	@touch $@

$(HUEY_VENV)/.installed: $(HUEY_DIR)/requirements.txt
	test -x $(HUEY_VENV)/bin/python || python3 -m venv $(HUEY_VENV)
	$(HUEY_VENV)/bin/pip install -q --no-deps -r $<
	$(HUEY_VENV)/bin/pip check
	@touch $@

# `make test` collects tests/apps too, so it needs the app venv (a missing one fails the tests).
test: app-venv

test-apps: venv deps app-venv ## the test apps against a real PostgreSQL server
	$(PY) -m pytest tests/apps -q
