# Real job systems as test apps (tests/apps/<app>/). Included by the top Makefile.
APPS_DIR := $(ROOT)/tests/apps
PROCRASTINATE_DIR := $(APPS_DIR)/procrastinate
PROCRASTINATE_VENV := $(PROCRASTINATE_DIR)/.venv
# the host upgrade test's old and new procrastinate (requirements-<minor>.txt -> .venv-<minor>)
PROCRASTINATE_UPGRADE := 3.1 3.2
CHANCY_DIR := $(APPS_DIR)/chancy
CHANCY_VENV := $(CHANCY_DIR)/.venv
HUEY_DIR := $(APPS_DIR)/huey
HUEY_VENV := $(HUEY_DIR)/.venv
CELERY_DIR := $(APPS_DIR)/celery
CELERY_VENV := $(CELERY_DIR)/.venv
GALAXY_DIR := $(APPS_DIR)/galaxy
GALAXY_VENV := $(GALAXY_DIR)/.venv
# pip 23.2 backtracks without end on Galaxy's pins; the Galaxy venv gets this pip first
GALAXY_PIP := pip==26.3

.PHONY: app-images procrastinate-image chancy-image huey-image pgbouncer-image noshell-image app-venv test-apps galaxy-image galaxy25-image galaxy-venv test-galaxy celery-image rabbitmq-image

app-images: procrastinate-image chancy-image huey-image pgbouncer-image noshell-image galaxy-image galaxy25-image celery-image rabbitmq-image ## build the test app images (procrastinate, chancy :1 and :2, huey:1, pgbouncer, noshell, galaxy:26.1 and :25.1, celery:1, rabbitmq:1); ~1 s when up to date

procrastinate-image: venv docker-up
	@t0=$$SECONDS; PY=$(PY) $(PROCRASTINATE_DIR)/build-image.sh; echo "procrastinate-image: $$((SECONDS - t0)) s"

chancy-image: venv docker-up
	@t0=$$SECONDS; PY=$(PY) $(CHANCY_DIR)/build-image.sh; echo "chancy-image: $$((SECONDS - t0)) s"

huey-image: venv docker-up ## jobhandlers/huey:1: Django + huey (SqlHuey on PostgreSQL), drains on SIGINT
	@t0=$$SECONDS; PY=$(PY) $(HUEY_DIR)/build-image.sh; echo "huey-image: $$((SECONDS - t0)) s"

celery-image: venv docker-up ## jobhandlers/celery:1: Django + Celery 5.7 (RabbitMQ transport), warm shutdown on SIGTERM
	@t0=$$SECONDS; PY=$(PY) $(APPS_DIR)/celery/build-image.sh; echo "celery-image: $$((SECONDS - t0)) s"

rabbitmq-image: docker-up ## jobhandlers/rabbitmq:1 (Debian's rabbitmq-server 3.10): the broker of the Celery scenarios
	@t0=$$SECONDS; $(APPS_DIR)/rabbitmq/build-image.sh; echo "rabbitmq-image: $$((SECONDS - t0)) s"

pgbouncer-image: docker-up ## jobhandlers/pgbouncer:1 (Debian's pgbouncer): the database proxy sidecar of the pod-shape scenarios
	@t0=$$SECONDS; $(APPS_DIR)/pgbouncer/build-image.sh; echo "pgbouncer-image: $$((SECONDS - t0)) s"

noshell-image: venv docker-up ## jobhandlers/workload-noshell:1: the reference workload with no shell and no sleep binary
	@t0=$$SECONDS; PY=$(PY) $(APPS_DIR)/noshell/build-image.sh; echo "noshell-image: $$((SECONDS - t0)) s"

# ~1.2 GB image, cold build ~6 min (tests/apps/galaxy/README.md); warm ~1 s.
galaxy-image: venv docker-up ## jobhandlers/galaxy:26.1: Galaxy 26.1.2 unmodified + our config and jhgalaxy wrappers
	@t0=$$SECONDS; PY=$(PY) $(GALAXY_DIR)/build-image.sh 26.1; echo "galaxy-image: $$((SECONDS - t0)) s"

# ~1.1 GB, cold ~4 min (pip download ~100 s, docker build ~130 s); same base layer as 26.1.
galaxy25-image: venv docker-up ## jobhandlers/galaxy:25.1: Galaxy 25.1.3 (requirements-25.1.txt), the old side of the upgrade scenario (16e)
	@t0=$$SECONDS; PY=$(PY) $(GALAXY_DIR)/build-image.sh 25.1; echo "galaxy25-image: $$((SECONDS - t0)) s"

# `make image` also builds the app images: a warm run only compares an inputs label.
image: app-images

# $(call app_venv,VENV,REQUIREMENT FILES): create VENV (uv, no pip), install the pinned set without
# resolving (--no-deps), then check it is consistent
app_venv = test -x $(1)/bin/python || $(UV_MKVENV) $(1); \
	$(UV_PIP) $(1)/bin/python --no-deps $(foreach r,$(2),-r $(r)) && \
	$(UV) pip check -q --python $(1)/bin/python

app-venv: $(PROCRASTINATE_VENV)/.installed $(PROCRASTINATE_UPGRADE:%=$(PROCRASTINATE_VENV)-%/.installed) $(CHANCY_VENV)/.installed $(HUEY_VENV)/.installed $(CELERY_VENV)/.installed ## host venvs of the test apps (pinned requirements.txt; procrastinate 3.1 and 3.2 too; celery also requirements-redis.txt)

$(PROCRASTINATE_VENV)/.installed: $(PROCRASTINATE_DIR)/requirements.txt $(UV_STAMP)
	$(call app_venv,$(PROCRASTINATE_VENV),$<)
	@touch $@

$(PROCRASTINATE_VENV)-%/.installed: $(PROCRASTINATE_DIR)/requirements-%.txt $(UV_STAMP)
	$(call app_venv,$(PROCRASTINATE_VENV)-$*,$<)
	@touch $@

$(CHANCY_VENV)/.installed: $(CHANCY_DIR)/requirements.txt $(UV_STAMP)
	$(call app_venv,$(CHANCY_VENV),$<)
	@touch $@

$(HUEY_VENV)/.installed: $(HUEY_DIR)/requirements.txt $(UV_STAMP)
	$(call app_venv,$(HUEY_VENV),$<)
	@touch $@

# Celery: the image's set plus kombu's Redis transport (redis-py), for the host tests on Debian's
# redis-server (tests/apps/celery/test_celery_redis.py).
$(CELERY_VENV)/.installed: $(CELERY_DIR)/requirements.txt $(CELERY_DIR)/requirements-redis.txt $(UV_STAMP)
	$(call app_venv,$(CELERY_VENV),$(CELERY_DIR)/requirements.txt $(CELERY_DIR)/requirements-redis.txt)
	@touch $@

galaxy-venv: $(GALAXY_VENV)/.installed ## host venv of the Galaxy test app (~0.9 GB; only `make test-galaxy` uses it)

$(GALAXY_VENV)/.installed: $(GALAXY_DIR)/requirements.txt $(GALAXY_DIR)/pip-check-allowed.txt
	test -x $(GALAXY_VENV)/bin/python || python3 -m venv $(GALAXY_VENV)
	$(GALAXY_VENV)/bin/pip install -q $(GALAXY_PIP)
	$(GALAXY_VENV)/bin/pip install -q --no-deps -r $<
	@out=$$($(GALAXY_VENV)/bin/pip check 2>&1); left=$$(printf '%s\n' "$$out" | grep -v -x -F -f $(GALAXY_DIR)/pip-check-allowed.txt | grep -v '^No broken requirements found' || true); \
	  if [ -n "$$left" ]; then printf 'pip check:\n%s\n' "$$left" >&2; exit 1; fi
	@touch $@

# Galaxy's host tests are not collected by `make test` / `make test-apps` (tests/apps/galaxy/conftest.py:
# collect_ignore unless JH_GALAXY_TESTS=1): each Galaxy start costs 15-140 s of imports.
test-galaxy: venv deps galaxy-venv ## Galaxy 26.1.2 host tests against a real PostgreSQL (minutes)
	JH_GALAXY_TESTS=1 $(PY) -m pytest -n 0 -p no:cacheprovider tests/apps/galaxy -v

# `make test` collects tests/apps too, so it needs the app venv (a missing one fails the tests).
test: app-venv

test-apps: venv deps app-venv ## the test apps against a real PostgreSQL server
	$(PY) -m pytest tests/apps -q
