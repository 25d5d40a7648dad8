# p4reduce: in-network gradient aggregation on P4 switches.
# Targets follow the P4 tutorials' names (build, run, stop, clean) plus setup, demo, shell, test, bench.
# The real toolchain (p4c-bm2-ss, simple_switch_grpc) is used when it is on PATH, p4sim otherwise.
# Options: make run TOPO=two-tier WORKERS=6 ARGS="--bw 100 --loss 1"

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BUILD := build
P4SRC := p4src
PROG  := p4reduce
WORKERS ?= 4
TOPO  ?= star
ARGS  ?=

P4C := $(shell command -v p4c-bm2-ss 2>/dev/null)
ifeq ($(P4C),)
P4C := $(PY) -m p4reduce.p4sim.compile
endif

P4_SOURCES := $(wildcard $(P4SRC)/*.p4)

.PHONY: all setup build run demo shell test lint bench bench-quick stop clean

all: build

setup:
	@bash tools/setup.sh

$(BUILD)/$(PROG).json: $(P4_SOURCES) | setup
	@mkdir -p $(BUILD)
	$(P4C) --p4v 16 --p4runtime-files $(BUILD)/$(PROG).p4info.txtpb -o $@ $(P4SRC)/$(PROG).p4

build: setup $(BUILD)/$(PROG).json

run: build
	$(PY) -m p4reduce.mininet_topos run --topo $(TOPO) --workers $(WORKERS) --program $(BUILD)/$(PROG).json $(ARGS)

demo: build
	$(PY) -m p4reduce.mininet_topos demo --topo $(TOPO) --workers $(WORKERS) --program $(BUILD)/$(PROG).json $(ARGS)

shell: setup
	$(PY) -m p4reduce.controller shell $(ARGS)

test: setup
	$(PY) -m pytest -q -ra --durations=15 tests $(ARGS)

# ruff and mypy with the rule sets of pyproject.toml, no module imported under a bare top-level
# name (the packages exist only as p4reduce.<name>), and no product package importing the test
# stand-ins of testbed/ (which is not installed).
PRODUCT_DIRS := p4reduce p4sim controller worker protocol mininet_topos bench
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	@! git grep -nE '^\s*(from|import) (p4sim|controller|worker|protocol|mininet_topos|bench)(\.|\s|$$)' -- '*.py' \
		|| { echo "lint: import these as p4reduce.<name>"; exit 1; }
	@! git grep -nE '^\s*(from|import) testbed(\.|\s|$$)' -- $(foreach d,$(PRODUCT_DIRS),'$(d)/*.py') \
		|| { echo "lint: product packages must not import testbed (test stand-ins)"; exit 1; }

bench: build
	$(PY) -m p4reduce.bench $(ARGS)

bench-quick: build
	$(PY) -m p4reduce.bench --quick $(ARGS)

stop:
	-@[ -x $(PY) ] && $(PY) -m p4reduce.mininet_topos stop

clean: stop
	rm -rf $(BUILD) logs pcaps run .pytest_cache
