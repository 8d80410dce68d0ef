# kimi_k3.serving: set-up, the main job and the tests.
#   make site    set up the controller and run site.yml on $(INVENTORY)
#   make test    set up everything the tests need and run them all (lint included)
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PY312 ?= $(firstword $(wildcard /root/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
VENV := .venv/ansible
BIN := $(VENV)/bin
STAMP := $(VENV)/.k3-ready
INVENTORY ?= inventories/examples/mi355x-pd-1p1d-c48/hosts.yml
PLAN_DIR ?= plan
PYTEST_ARGS ?=
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help venv venv-vllm venv-services site plan lint test test-fast clean

help:
	@echo "make site     run site.yml on INVENTORY (default $(INVENTORY))"
	@echo "make plan     write the plan of INVENTORY to PLAN_DIR (default $(PLAN_DIR))"
	@echo "make test     lint + every test (installs the venvs it needs)"

# The controller: Ansible, the bundled collections, the linters and pytest.
venv: $(STAMP)
$(STAMP): requirements.txt
	@test -n "$(PY312)" || { echo "Python 3.12 not found: set PY312=/path/to/python3.12"; exit 1; }
	rm -rf $(VENV)
	$(PY312) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	sha256sum requirements.txt > $(STAMP)

# The real vLLM (CPU build) for the argument-parser contract, plus vllm-router and memcache.
venv-vllm:
	tools/venvs.sh vllm

venv-services:
	tools/venvs.sh services

site: venv
	$(BIN)/ansible-playbook site.yml -i $(INVENTORY) -e k3_plan_dir=$(PLAN_DIR)

plan: venv
	$(BIN)/ansible-playbook playbooks/plan.yml -i $(INVENTORY) -e k3_plan_dir=$(PLAN_DIR)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --nocolor

test: venv venv-vllm lint
	$(BIN)/pytest tests $(PYTEST_ARGS)

# Without the vLLM venv: the contract tests that need it are skipped, loudly.
test-fast: venv
	$(BIN)/pytest tests/unit tests/golden $(PYTEST_ARGS)

clean:
	rm -rf $(PLAN_DIR) .cache tests/output
