# memstream — the two commands: `make up` (run it) and `make test` (check it).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
KAFKA_LIB := ops/kafka/lib
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: up down status test lint deps venv redis kafka-jars clean-data help

help:
	@echo "make up      start Kafka, Redis and the node (API on 127.0.0.1:8000)"
	@echo "make down    stop them (data is kept in ./.memstream)"
	@echo "make status  which processes run and whether /readyz is 200"
	@echo "make test    install test deps, start test servers on free ports, run pytest"
	@echo "make lint    ruff check + format check"

up: deps venv
	@$(VENV)/bin/memstream up

down:
	@if [ -x $(VENV)/bin/memstream ]; then $(VENV)/bin/memstream down; else echo "memstream was not installed"; fi

status:
	@$(VENV)/bin/memstream status

test: deps venv
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

deps: redis kafka-jars

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "installing Python dependencies into $(VENV) (torch is large the first time) ..."
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

redis:
	@command -v redis-server >/dev/null 2>&1 || test -x /usr/bin/redis-server || { \
	  echo "installing redis-server (apt) ..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	  $$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || $$SUDO service redis-server stop >/dev/null 2>&1 || true; }

kafka-jars: $(KAFKA_LIB)/.complete

$(KAFKA_LIB)/.complete: ops/kafka/pom.xml
	@echo "fetching Apache Kafka jars from Maven Central ..."
	@cd ops/kafka && rm -rf lib && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib
	@touch $@

clean-data: down
	rm -rf .memstream
