# kimi_k3.serving: set-up, the main job and the tests.
#   make sandbox       build the local test cluster and run site.yml on it (the embedded default)
#   make sandbox-down  remove the local test cluster, leaving nothing behind
#   make site          run site.yml on $(INVENTORY) (e.g. make site INVENTORY=prod)
#   make test          set up everything the tests need and run them all (lint included)
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PY312 ?= $(firstword $(wildcard /root/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
VENV := .venv/ansible
BIN := $(VENV)/bin
STAMP := $(VENV)/.k3-ready
INVENTORY ?= inventories/sandbox
SANDBOX_MODEL := .cache/sandbox/models/tiny-llama
SANDBOX_NODE_EXPORTER := .cache/sandbox/node-exporter
SANDBOX_IPERF3 := .cache/sandbox/iperf3
SANDBOX_OPENTRACKER := .cache/sandbox/opentracker
# The sandbox's model hub: a Hugging Face repository of the stand-in checkpoint, served by olah.
SANDBOX_HUB := .cache/sandbox/hub
# Debian packages the test hosts install "from the distribution": they have no route out, and
# tools/sandbox.sh makes this local repository their distribution's mirror (docker.io for the
# prerequisites tests, Prometheus and Alertmanager for the sandbox's monitoring host, nginx for the
# front door; the front door's tests also run this nginx on the controller, unpacked; aria2 and
# mktorrent for the checkpoint's fan-out, opentracker unpacked for its tracker; docker-registry unpacked
# for the site's image mirror's test).
TEST_DEBS := .cache/debian-debs
TEST_DEB_PACKAGES := docker.io python3-requests prometheus prometheus-alertmanager nginx prometheus-node-exporter iperf3 aria2 mktorrent opentracker docker-registry
PLAN_DIR ?= plan
# Independent set-up steps (venvs, packages, test data, lint) run side by side, this many at once.
SETUP_JOBS ?= 6
# The slowest tests of each suite are listed at its end (where the time of make test goes).
PYTEST_ARGS ?= --durations=15
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: sandbox-setup sandbox-packages sandbox-base test-setup test-packages test-data test-lane-sandboxes test-lane-tables test-tables test-galaxy test-hosts test-prereqs test-ha-suite ee help venv venv-vllm venv-services venv-bench venv-eval venv-galaxy venv-scan sandbox sandbox-hosts sandbox-down sandbox-ha sandbox-ha-down bench-deploy site plan lint test test-ha test-fast molecule clean

help:
	@echo "make sandbox  build the local test cluster and run site.yml on it"
	@echo "make sandbox-down  remove it"
	@echo "make sandbox-ha    the HA variant (every serving role twice) for the day-two operations; make sandbox-ha-down"
	@echo "make site     run site.yml on INVENTORY (default $(INVENTORY))"
	@echo "make plan     write the plan of INVENTORY to PLAN_DIR (default $(PLAN_DIR))"
	@echo "make test     lint + every test (installs the venvs it needs)"
	@echo "make test-fast  the quick loop: unit, golden and playbook tests, no root, no test host"
	@echo "make test-ha  the day-two operations under load on the HA sandbox (tests/ha)"

# The controller: Ansible, the bundled collections, the linters and pytest. Installed with uv
# (tools/venvs.sh), compiled as pip would (a machine with PYTHONDONTWRITEBYTECODE set caches
# nothing later): 19 s here, against 57 s with pip.
venv: $(STAMP)
$(STAMP): requirements.txt
	@test -n "$(PY312)" || { echo "Python 3.12 not found: set PY312=/path/to/python3.12"; exit 1; }
	rm -rf $(VENV)
	$(PY312) -m venv --without-pip $(VENV)
	$$(tools/venvs.sh uv) pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.txt
	sha256sum requirements.txt > $(STAMP)

# The real vLLM (CPU build) for the argument-parser contract, plus vllm-router and memcache.
venv-vllm:
	tools/venvs.sh vllm

venv-services:
	tools/venvs.sh services

# AISBench, the load generator of playbooks/benchmark.yml (tests/integration/test_benchmark_playbook.py).
venv-bench:
	tools/venvs.sh bench

# inspect-ai for the accuracy evaluation (playbooks/evaluate.yml and its tests).
venv-eval:
	tools/venvs.sh eval

# galaxy-importer, what Galaxy runs on an upload (tests/collection/test_galaxy_import.py).
venv-galaxy:
	tools/venvs.sh galaxy

# sslyze, the TLS scanner the sandbox's tests run against every TLS port (tests/cluster).
venv-scan:
	tools/venvs.sh scan

# The local sandbox: test hosts (network namespaces + systemd-nspawn + sshd), the tiny model,
# then the main job over SSH. A second run is an idempotent re-run.
sandbox-hosts: sandbox-setup
	tools/sandbox.sh up

# The sandbox's set-up steps side by side: the venvs (each built once), Graphviz, the tiny model,
# the hosts' Debian packages and their base system.
sandbox-setup:
	$(MAKE) --no-print-directory -j$(SETUP_JOBS) -O venv venv-vllm venv-bench venv-eval sandbox-packages test-data \
	  sandbox-base

# The test hosts' cached Debian base system (debootstrap, about a minute once), built beside the
# venvs instead of by the first suite that makes hosts.
sandbox-base:
	tools/sandbox.sh base >/dev/null

# dot draws the picture in the plan's report.html.
sandbox-packages:
	command -v dot >/dev/null || tools/apt_install.sh graphviz

# With an API key, as production keeps one: tools/sandbox_secrets.sh makes a random key in an
# Ansible Vault file (.cache/sandbox/secrets.yml, its password in .cache/sandbox/vault-password);
# site.yml reads it with -e @file --vault-password-file. `make sandbox SANDBOX_SECRETS=` deploys
# without a key; -e k3_api_key=... works too (but puts the key in argv).
SANDBOX_SECRETS ?= $(shell tools/sandbox_secrets.sh)
sandbox: sandbox-hosts
	$(BIN)/ansible-playbook site.yml -i inventories/sandbox $(SANDBOX_SECRETS)
	# The deployment as day two sees it: every planned service, its health, its argv and files against the plan.
	$(BIN)/ansible-playbook playbooks/status.yml -i inventories/sandbox $(SANDBOX_SECRETS)
	# Fabric acceptance: the TCP bandwidth of every pair of hosts the plan connects (fabric-runs/<UTC time>/).
	$(BIN)/ansible-playbook playbooks/fabric.yml -i inventories/sandbox $(SANDBOX_SECRETS)
	# The specification's performance procedure (AISBench, vllm bench serve) from the front-door host:
	# benchmarks/<UTC time>/ holds summary.md and the plots.
	$(BIN)/ansible-playbook playbooks/benchmark.yml -i inventories/sandbox $(SANDBOX_SECRETS)
	# Its accuracy procedure: the service check, then ToolCall on local samples (the tiny model reads no image).
	.venv/eval/bin/python tools/eval_datasets.py .cache/eval-datasets >/dev/null
	$(BIN)/ansible-playbook playbooks/evaluate.yml -i inventories/sandbox $(SANDBOX_SECRETS)
	@echo "The sandbox needs its API key: ansible-vault view --vault-password-file .cache/sandbox/vault-password .cache/sandbox/secrets.yml"

sandbox-down:
	tools/sandbox.sh down

# The HA sandbox: every serving role twice (vllm-router in front of two prefill and two decode
# engines), for the day-two operations under traffic. Its hosts are on a network of their own
# (10.77.1.0/24, bridge k3sb1), beside the default sandbox's. `make sandbox-ha-down` removes them.
SANDBOX_HA_ENV := K3SB_HOSTS_FILE=$(CURDIR)/tools/sandbox-ha-hosts.txt K3SB_INVENTORY=$(CURDIR)/inventories/sandbox-ha/hosts.yml
sandbox-ha: venv venv-vllm
	.venv/vllm/bin/python tools/tiny_model.py $(SANDBOX_MODEL)
	$(SANDBOX_HA_ENV) tools/sandbox.sh up
	$(BIN)/ansible-playbook site.yml -i inventories/sandbox-ha $(SANDBOX_SECRETS)
	$(BIN)/ansible-playbook playbooks/status.yml -i inventories/sandbox-ha $(SANDBOX_SECRETS)

sandbox-ha-down:
	$(SANDBOX_HA_ENV) tools/sandbox.sh down

# The execution environment AWX runs the playbooks in, built with ansible-builder and podman
# (a Debian trixie base image made here first): localhost/kimi-k3-ee:<version>.
ee: venv
	tools/ee.sh build

# Deploy time with 1, 2 and 4 engines and the idempotent re-run (figures, not a test).
bench-deploy: venv venv-vllm
	tools/bench_deploy.sh

site: venv
	$(BIN)/ansible-playbook site.yml -i $(INVENTORY) -e k3_plan_dir=$(PLAN_DIR)

plan: venv
	$(BIN)/ansible-playbook playbooks/plan.yml -i $(INVENTORY) -e k3_plan_dir=$(PLAN_DIR)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --nocolor
	$(BIN)/antsibull-changelog lint

# ansible-test sanity on the working tree's artifact, installed (its exceptions, each with its
# reason: tests/sanity/ignore-2.21.txt); about 45 seconds. The development scripts are not in the
# artifact: shellcheck checks them here.
sanity: venv
	# ansible-test's shellcheck test skips itself, with a warning only, when shellcheck is missing.
	command -v shellcheck >/dev/null || tools/apt_install.sh shellcheck
	shellcheck tools/*.sh .ci/run
	tools/ansible_test.sh

# Everything, in two steps, each as wide as the machine allows (make -O prints a step's output
# whole, when it ends, with the time it started):
#   1. set-up and static checks side by side: the venvs, the controller's packages (one apt at a
#      time), the tiny model and the test hosts' packages; lint and sanity;
#   2. two lanes side by side, each suite with test hosts on a network of its own (tools/sandbox.sh:
#      bridge k3sbN, 10.77.N.0/24), so that no suite waits for another's hosts:
#      - test-lane-sandboxes, the suites whose deployments serve under test, one after the other:
#        test-hosts (network 0: the test hosts themselves, then one deployment (with API keys)
#        shared by the fault and --limit tests, host preflight (a wrong NIC, a taken port, a blocked
#        connection, a proxy variable), security (401 without a key, 200 with one, no key in any
#        argv, log, plan or file but the 0600 ones; closed admin endpoints), monitoring with the
#        real Prometheus and the AWX job templates through ansible-runner), then test-ha-suite
#        (network 1): the day-two operations (restart, upgrades with their canary, rollback, remove
#        and scale) on the HA sandbox under load, with no failed request;
#      - test-lane-tables: test-galaxy (galaxy-importer, below), then at a small weight
#        (LOW_WEIGHT) test-prereqs (network 2): the prerequisites (Molecule's nvidia scenario, the
#        refusal and --check tests) on test hosts with packaged test doubles, the plan's Molecule
#        scenario (no host), and test-tables, the table-driven suites (no test host): planner,
#        golden, contract, playbook and artifact tests.
#   The weight (tools/suite_cpu.py --cpu-shares) gives the sandboxes' suites the cores whenever they
#   want them: their health waits, heal times and canary gates are timed, their services cost
#   processor time for every second they run, and two deployments under test at once, or one beside
#   suites of the same weight, slowed each other by a quarter to a half (docs/performance.md). The
#   table-driven suites and the prerequisites take what the sandboxes leave (6 % of a core they
#   both want, so that their own waits still move).
# Each suite of make test runs under tools/suite_cpu.py: a control group of its own, whose processor
# time (its test hosts' included) is printed when it ends and kept in .cache/suite-cpu.log.
SUITE := python3 tools/suite_cpu.py
LOW_WEIGHT := --cpu-shares 64

test:
	@echo "make test: started at $$(date -u +%T)"
	mkdir -p .cache && : >.cache/suite-cpu.log
	$(SUITE) set-up $(MAKE) --no-print-directory -j$(SETUP_JOBS) -O test-setup lint sanity
	@echo "make test: set-up and static checks ended at $$(date -u +%T)"
	$(MAKE) --no-print-directory -j2 --output-sync=recurse test-lane-sandboxes test-lane-tables
	@echo "make test: ended at $$(date -u +%T); processor time by suite:"
	@cat .cache/suite-cpu.log

# Each lane runs each suite even when one before it failed, so that one run shows every failure.
test-lane-sandboxes:
	status=0; $(MAKE) --no-print-directory test-hosts || status=$$?; \
	  $(MAKE) --no-print-directory test-ha-suite || status=$$?; exit $$status

# The prerequisites before the table-driven suites: whatever of the lane is left when the sandboxes'
# lane ends then runs on both cores (the table-driven suites' two workers), not on one.
test-lane-tables:
	status=0; $(MAKE) --no-print-directory test-galaxy || status=$$?; \
	  $(MAKE) --no-print-directory test-prereqs SUITE_WEIGHT="$(LOW_WEIGHT)" || status=$$?; \
	  $(SUITE) $(LOW_WEIGHT) molecule-default $(BIN)/molecule test -s default || status=$$?; \
	  $(MAKE) --no-print-directory test-tables SUITE_WEIGHT="$(LOW_WEIGHT)" || status=$$?; exit $$status

test-setup: venv venv-vllm venv-bench venv-eval venv-galaxy venv-scan test-packages test-data sandbox-base

# The controller's Debian packages for the tests (tools/apt_install.sh runs one apt at a time).
test-packages:
	# nft checks the firewall tables (unit tests); the preflight tests block a connection with it.
	command -v nft >/dev/null || tools/apt_install.sh nftables
	# dot draws report.html's picture of the cluster; headless Chromium renders the page (tests/integration).
	# Chromium moves fast in the security archive: with package lists older than its current version,
	# the install fails on a removed .deb, and apt-get update (then the install again) repairs it.
	command -v dot >/dev/null || tools/apt_install.sh graphviz
	command -v chromium >/dev/null || tools/apt_install.sh chromium
	# The file stores' clients of the fetch (tests/integration/test_model_fetch_stores.py): aria2c for
	# HTTP(S) and Debian's rclone for S3, the packages the role installs on a seed.
	command -v aria2c >/dev/null || tools/apt_install.sh aria2
	command -v rclone >/dev/null || tools/apt_install.sh rclone
	# podman, runc and debootstrap build the execution environment (tests/integration/test_execution_environment.py).
	tools/ee.sh setup

# The tiny model (the sandbox's, and the one the benchmark and evaluation playbooks run against),
# and the test hosts' Debian packages (the front door's tests run its nginx on the controller too).
test-data: venv-vllm
	.venv/vllm/bin/python tools/tiny_model.py $(SANDBOX_MODEL)
	tools/fetch_debs.sh $(TEST_DEBS) $(TEST_DEB_PACKAGES)
	# The node exporter's program, unpacked from the distribution's package once and shared into the
	# sandbox's hosts read-only (as the venvs are): installed on each host, its package would add a
	# system user that the teardown test finds left behind. Unpacked in place, and only when the
	# package changed: the running hosts mount the folder itself (a second make sandbox).
	tools/unpack_debs.sh $(SANDBOX_NODE_EXPORTER) $(TEST_DEBS)/pool prometheus-node-exporter
	# iperf3 for the fabric check (playbooks/fabric.yml), unpacked the same way with its two libraries:
	# its package would add a system user.
	tools/unpack_debs.sh $(SANDBOX_IPERF3) $(TEST_DEBS)/pool iperf3 libiperf0 libsctp1
	# opentracker for the checkpoint's fan-out tracker, unpacked the same way: its package adds a system user.
	tools/unpack_debs.sh $(SANDBOX_OPENTRACKER) $(TEST_DEBS)/pool opentracker libowfat0
	# The stand-in checkpoint as a Hugging Face repository (Git with LFS) for the sandbox's hub.
	.venv/vllm/bin/python tools/sandbox_hub.py $(SANDBOX_MODEL) $(SANDBOX_HUB)/mirrors k3-sandbox/tiny-llama

# The table-driven suites are independent: one worker per core, a test file per worker at a time
# (a module that starts one vLLM server for its tests keeps them on one worker), in the order
# tests/conftest.py gives them (the slow files first; pytest-xdist would otherwise hand out the
# files with the most tests first, and the slow ones, with few, last). tests/collection
# builds the artifact and runs galaxy-importer and ansible-lint on it as Galaxy and a site would.
# Its output also goes to .cache/test-tables.log.
test-tables:
	@echo "$@: started at $$(date -u +%T)"
	mkdir -p .cache
	status=0; $(SUITE) $(SUITE_WEIGHT) tables $(BIN)/pytest -n auto --dist loadfile --no-loadscope-reorder tests/unit tests/golden \
	  tests/contract tests/integration tests/collection --ignore tests/collection/test_galaxy_import.py $(PYTEST_ARGS) \
	  >.cache/test-tables.log 2>&1 || status=$$?; cat .cache/test-tables.log; exit $$status

# galaxy-importer on the built artifact, at full weight: it gives its ansible-lint a fixed 180 s,
# which the collection's lint (about a minute here when idle) overran while two lanes at its weight
# shared the cores beside it (measured 2026-12-05); beside test-hosts' first tests alone it has a
# core. Galaxy runs it on a machine of its own.
test-galaxy:
	@echo "$@: started at $$(date -u +%T)"
	$(SUITE) galaxy $(BIN)/pytest tests/collection/test_galaxy_import.py $(PYTEST_ARGS)

# The suites on the default sandbox's network, one host set at a time. (Molecule's scenarios are in
# extensions/molecule, their shared settings in its config.yml, found from the collection root; its
# default scenario plans the sandbox with playbooks/plan.yml, on no host: test-lane-tables runs it.)
test-hosts:
	@echo "test-hosts: started at $$(date -u +%T)"
	$(SUITE) sandbox $(BIN)/pytest tests/sandbox $(PYTEST_ARGS)
	# One host set and one deployment (with API keys) for both: tests/helpers/cluster_sandbox.py.
	$(SUITE) cluster+security $(BIN)/pytest tests/cluster tests/security $(PYTEST_ARGS)

# The prerequisites roles on test hosts with packaged test doubles (network 10.77.2.0/24).
test-prereqs:
	@echo "$@: started at $$(date -u +%T)"
	$(SUITE) $(SUITE_WEIGHT) molecule-nvidia $(BIN)/molecule test -s nvidia
	$(SUITE) $(SUITE_WEIGHT) prerequisites $(BIN)/pytest tests/prerequisites $(PYTEST_ARGS)

# The day-two operations under load on the HA sandbox (its own host set, on network 10.77.1.0/24).
test-ha-suite:
	@echo "$@: started at $$(date -u +%T)"
	$(SUITE) ha $(BIN)/pytest tests/ha $(PYTEST_ARGS)

# The day-two operations under load on the HA sandbox alone (715 s with its 4 tests then on an idle
# machine, 2026-12-03; it has 6 now, docs/performance.md).
test-ha: venv venv-vllm venv-eval
	.venv/vllm/bin/python tools/tiny_model.py $(SANDBOX_MODEL)
	$(BIN)/pytest tests/ha $(PYTEST_ARGS)

# The quick loop: no venv but the controller's, no root, no cluster, no real server (the tests
# marked slow, which start vLLM or build an image, are make test's). One worker per core.
test-fast: venv
	$(BIN)/pytest -n auto --dist loadfile -m "not slow" tests/unit tests/golden tests/integration $(PYTEST_ARGS)

# Every Molecule scenario (extensions/molecule): the plan (default), the nvidia prerequisites, the whole cluster.
molecule: venv venv-vllm
	$(BIN)/molecule test -s default
	$(BIN)/molecule test -s nvidia
	$(BIN)/molecule test -s cluster

clean:
	rm -rf $(PLAN_DIR) .cache tests/output
