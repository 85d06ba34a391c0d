# memstream — the two commands: `make up` (run it) and `make test` (check it).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# One install stamp per set of extras (docs/operations.md#installing): `make up` installs
# the service ([server]); `make test` and `make lint` add the HF adapters, the benches, the
# LangGraph store and the test tools ([dev]). Whichever runs first decides nothing for the other.
PYPROJECTS := pyproject.toml server/pyproject.toml
PYHASH := $(shell cat $(PYPROJECTS) | sha1sum | cut -c1-12)
SERVER_STAMP := $(VENV)/.installed-server-$(PYHASH)
DEV_STAMP := $(VENV)/.installed-dev-$(PYHASH)
KAFKA_LIB := ops/kafka/lib
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: up down status test lint deps venv venv-server redis chromium node kafka-jars clean-data help chart-check

help:
	@echo "make up      start Kafka, Redis and the node (API on 127.0.0.1:8000)"
	@echo "make down    stop them (data is kept in ./.memstream)"
	@echo "make status  which processes run and whether /readyz is 200"
	@echo "make test    install test deps, start test servers on free ports, run pytest"
	@echo "make lint    ruff check + format check + mypy"
	@echo "make chart-check  helm lint + template (default, production) + strict offline validation"

up: deps venv-server
	@$(VENV)/bin/memstream up

down:
	@if [ -x $(VENV)/bin/memstream ]; then $(VENV)/bin/memstream down; else echo "memstream was not installed"; fi

status:
	@$(VENV)/bin/memstream status

test: deps chromium node venv
	$(PY) -m pytest -q --durations=25 $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

deps: redis kafka-jars

venv: $(DEV_STAMP)

venv-server: $(SERVER_STAMP)

# The service's packages are the distribution in server/ (the [server] extra names it):
# pip takes it from the checkout when both are on one command line.
$(VENV)/.installed-%-$(PYHASH): $(PYPROJECTS)
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "installing memstream[$*] into $(VENV) ..."
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e ./server -e '.[$*]'
	@rm -f $(VENV)/.installed-$*-* && touch $@

redis:
	@command -v redis-server >/dev/null 2>&1 || test -x /usr/bin/redis-server || { \
	  echo "installing redis-server (apt) ..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	  $$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || $$SUDO service redis-server stop >/dev/null 2>&1 || true; }

# headless Chromium and its WebDriver, for the console test (tests/integration/test_console.py)
chromium:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  echo "installing chromium and chromium-driver (apt) ..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

# node and npm, for the TypeScript client's tests (clients/typescript; node >= 20)
node:
	@{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || { \
	  echo "installing nodejs and npm (apt) ..."; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }

kafka-jars: $(KAFKA_LIB)/.complete

$(KAFKA_LIB)/.complete: ops/kafka/pom.xml
	@echo "fetching Apache Kafka jars from Maven Central ..."
	@cd ops/kafka && rm -rf lib && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib
	@touch $@

clean-data: down
	rm -rf .memstream

# --- the Helm chart (helm/): a helm built from Go modules, no helm needed beforehand ---
# Everything Go writes stays in .build/ (git-ignored): module cache, build cache, binaries.
BUILD := $(CURDIR)/.build
HELM_VERSION := v3.22.0
HELM := $(BUILD)/bin/helm-$(HELM_VERSION)
VALIDATE := $(BUILD)/bin/validate
CHART := helm/memstream
# Render for the oldest Kubernetes the chart supports (Chart.yaml kubeVersion; the
# StatefulSet's pod-index label); helm built without ldflags would assume v1.20.
KUBE_VERSION := 1.28.0
GO_ENV := GOPATH=$(BUILD)/go GOMODCACHE=$(BUILD)/go/mod GOCACHE=$(BUILD)/go/cache \
	GOFLAGS=-modcacherw GOTOOLCHAIN=local CGO_ENABLED=0

$(HELM):
	@command -v go >/dev/null || { echo "make chart-check needs Go >= 1.26 (helm $(HELM_VERSION) requires it)"; exit 1; }
	@mkdir -p $(BUILD)/bin
	@echo "building helm $(HELM_VERSION) from Go modules (first time: a few minutes) ..."
	@$(GO_ENV) GOBIN=$(BUILD)/go/bin go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@mv $(BUILD)/go/bin/helm $@

$(VALIDATE): helm/validate/go.mod helm/validate/go.sum $(wildcard helm/validate/*.go)
	@test -z "$$(gofmt -l helm/validate)" || { gofmt -l helm/validate; echo "gofmt: not formatted"; exit 1; }
	@mkdir -p $(BUILD)/bin
	@cd helm/validate && $(GO_ENV) go build -o $@ .

chart-check: $(HELM) $(VALIDATE)
	@mkdir -p $(BUILD)/chart
	$(HELM) lint --strict --kube-version $(KUBE_VERSION) $(CHART)
	$(HELM) lint --strict --kube-version $(KUBE_VERSION) $(CHART) -f $(CHART)/values-production.yaml
	$(HELM) template memstream $(CHART) --namespace memstream --kube-version $(KUBE_VERSION) \
	  > $(BUILD)/chart/default.yaml
	$(HELM) template memstream $(CHART) --namespace memstream --kube-version $(KUBE_VERSION) \
	  -f $(CHART)/values-production.yaml > $(BUILD)/chart/production.yaml
	$(VALIDATE) $(BUILD)/chart/default.yaml $(BUILD)/chart/production.yaml
	$(VALIDATE) -refused helm/validate/testdata/refused.yaml
