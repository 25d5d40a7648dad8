# p4reduce: in-network gradient aggregation on P4 switches.
# Targets follow the P4 tutorials' names (build, run, stop, clean) plus setup, demo, shell, test, bench.
# The real toolchain (p4c-bm2-ss, simple_switch_grpc) is used when it is on PATH, p4sim otherwise.
# Options: make run TOPO=two-tier WORKERS=6 PCAP=1 ARGS="--bw 100 --loss 1"; make shell SWITCH=leaf1
# Topologies (run, demo): TOPO=star|two-tier|tree; WORKERS=N (default 4; tree: FANOUT**DEPTH);
#   make run TOPO=two-tier LEAVES=4 WORKERS=16;  make run TOPO=tree DEPTH=3 FANOUT=2
# Switch-to-switch links, apart from the worker links (ARGS="--bw ... --loss ..."):
#   make run TOPO=tree UPLINK_BW=100 UPLINK_LOSS=1 [UPLINK_DELAY=1ms]
# P4 build settings (p4src/config.p4 has the defaults and the supported range):
#   make build LANES=256 SUBBLOCK=16 [SLOTS=4096] [MAX_WORKERS=32]
# Jumbo frames: MTU is both the program's IPV4_MTU and the links' MTU (make run/demo pass --mtu):
#   make run MTU=9000 LANES=1024 SUBBLOCK=64

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BUILD := build
P4SRC := p4reduce/p4src
PROG  := p4reduce
TOPO  ?= star
ARGS  ?=

P4C := $(shell command -v p4c-bm2-ss 2>/dev/null)
ifeq ($(P4C),)
P4C := $(PY) -m p4sim.compile
endif

P4_SOURCES := $(wildcard $(P4SRC)/*.p4)

# Build settings of the P4 program, passed to the compiler as -D flags. Each one given must be a
# positive decimal number (checked here: the value reaches a shell command line).
P4_SETTINGS := LANES SUBBLOCK SLOTS MAX_WORKERS MTU
_nodigits = $(subst 0,,$(subst 1,,$(subst 2,,$(subst 3,,$(subst 4,,$(subst 5,,$(subst 6,,$(subst \
	7,,$(subst 8,,$(subst 9,,$(subst $(subst ,, ),_,$(1))))))))))))
$(foreach s,$(P4_SETTINGS),$(if $(filter-out undefined,$(origin $(s))),$(if $(or $(call \
	_nodigits,$($(s))),$(filter 0%,$($(s))),$(if $($(s)),,empty)),$(error $(s)=$($(s)): \
	must be a positive decimal number))))
P4_DEFINES := $(strip $(foreach s,$(filter-out MTU,$(P4_SETTINGS)),$(if $($(s)),-D$(s)=$($(s)))) \
	$(if $(MTU),-DIPV4_MTU=$(MTU)))
LINK_ARGS := $(if $(MTU),--mtu $(MTU))
# The topology's shape and uplink options, each passed only when set (the program checks the values).
TOPO_ARGS := $(strip --topo '$(TOPO)' $(if $(WORKERS),--workers '$(WORKERS)') $(if $(LEAVES),--leaves '$(LEAVES)') \
	$(if $(DEPTH),--depth '$(DEPTH)') $(if $(FANOUT),--fanout '$(FANOUT)') \
	$(if $(UPLINK_BW),--uplink-bw '$(UPLINK_BW)') $(if $(UPLINK_LOSS),--uplink-loss '$(UPLINK_LOSS)') \
	$(if $(UPLINK_DELAY),--uplink-delay '$(UPLINK_DELAY)'))
# Captures of every switch port (pcaps/), off unless asked: make run PCAP=1
PCAP_ARGS := $(if $(filter-out 0,$(PCAP)),--pcap)

.PHONY: all setup build run demo shell wireshark test lint bench bench-quick stop clean FORCE

all: build

setup:
	@bash tools/setup.sh

# The settings of the last build, rewritten only when they change: a changed setting rebuilds.
$(BUILD)/p4-settings: FORCE
	@mkdir -p $(BUILD)
	@echo '$(P4_DEFINES)' | cmp -s - $@ || echo '$(P4_DEFINES)' > $@

# The layout line comes from the same preprocessor pass the compiler makes over config.p4.
$(BUILD)/$(PROG).json: $(P4_SOURCES) $(BUILD)/p4-settings | setup
	@mkdir -p $(BUILD)
	$(P4C) --p4v 16 $(P4_DEFINES) --p4runtime-files $(BUILD)/$(PROG).p4info.txtpb -o $@ $(P4SRC)/$(PROG).p4
	@set -- $$(printf '#include "config.p4"\nLANES SUBBLOCK SLOTS MAX_WORKERS IPV4_MTU\n' \
		| cpp -P -undef -nostdinc -I $(P4SRC) $(P4_DEFINES) -) && \
	echo "$@: $$1 lanes per packet ($$(($$1 / $$2)) sub-blocks of $$2), $$3 slots, up to $$4 workers," \
		"built for links of MTU $$5" > $(BUILD)/$(PROG).layout

build: setup $(BUILD)/$(PROG).json
	@cat $(BUILD)/$(PROG).layout

run: build
	$(PY) -m p4reduce.mininet_topos run $(TOPO_ARGS) --program $(BUILD)/$(PROG).json $(LINK_ARGS) $(PCAP_ARGS) $(ARGS)

demo: build
	$(PY) -m lab.demo $(TOPO_ARGS) --program $(BUILD)/$(PROG).json \
		$(LINK_ARGS) $(ARGS)

# make shell [SWITCH=leaf1]: a switch of the running topology (default: the aggregating one).
shell: setup
	$(PY) -m p4reduce.controller shell $(if $(SWITCH),--switch '$(SWITCH)') $(ARGS)

# The p4reduce dissector for Wireshark/tshark, for this user (ARGS="--out FILE.lua" elsewhere).
wireshark: setup
	$(PY) tools/wireshark/dissector.py $(ARGS)

# One test process by default; TEST_PROCESSES=2 runs two (pytest-xdist), the root tests all in one of
# them, one network at a time (tests/conftest.py). Two took as long as one in a CI rehearsal, with
# Mininet tests timing out while the other process loaded both cores, so one stays the default.
TEST_PROCESSES ?= 0
test: setup
	$(PY) -m pytest -q -ra --durations=15 $(if $(filter-out 0,$(TEST_PROCESSES)),-n $(TEST_PROCESSES) --dist loadgroup) tests $(ARGS)

# ruff and mypy with the rule sets of pyproject.toml (which packages may import which is
# tests/test_architecture.py's, from docs/architecture.md's table).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: build
	$(PY) -m lab.bench $(ARGS)

bench-quick: build
	$(PY) -m lab.bench --quick $(ARGS)

stop:
	-@[ -x $(PY) ] && $(PY) -m p4reduce.mininet_topos stop

clean: stop
	rm -rf $(BUILD) logs pcaps run .pytest_cache
