# pfi: power-flexible AI training.  `make` builds build/pfi; `make check` runs the architecture
# check, then every test (normal build, then ASan+UBSan); `make demo` runs the study on the
# embedded simulator; `make bench` prints benchmark figures.  Sources are found by directory, so adding a file
# under src/<layer>/ or tests/test_*.c needs no edit here.

CC      ?= cc
BUILD   ?= build
SAN     ?=
PKGS    := sqlite3 gsl jansson libmicrohttpd libcurl
DATA_DIR ?= $(if $(PFI_DATA_DIR),$(PFI_DATA_DIR),$(abspath ../shared/data))
export PFI_DATA_DIR := $(DATA_DIR)

WARN    := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter -Wno-format-truncation
OPT     := -O2 -g
SANFLAGS:=
ifeq ($(SAN),1)
SANFLAGS:= -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
OPT     := -O1 -g -fno-omit-frame-pointer $(SANFLAGS)
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  += -std=c11 -D_GNU_SOURCE -fPIC $(OPT) $(WARN) -Isrc $(PKG_CFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
LDLIBS  += $(PKG_LIBS) -ldl -lpthread -lm

LAYERS  := core util sim hw hw/nvml measure store study report serve cluster
LIB_SRC := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
FAKE_SRC:= $(wildcard src/fakenvml/*.c)
TEST_SRC:= $(wildcard tests/test_*.c)
TEST_SUPPORT := $(wildcard tests/support/*.c)
BENCH_SRC := $(wildcard bench/bench_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB     := $(BUILD)/libpfi.a
PFI     := $(BUILD)/pfi
FAKENVML:= $(BUILD)/lib/libnvidia-ml.so.1
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCHES := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
DEPS_OK := build/.deps-ok

NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
SLURM_OK:= $(shell test -f /usr/include/slurm/spank.h && echo 1)

.PHONY: all check test demo bench deps clean burn spank asan-tests check-arch
all: $(PFI) $(FAKENVML) $(if $(SLURM_OK),$(BUILD)/lib/pfi_spank.so)

deps: $(DEPS_OK)
$(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh all
	@mkdir -p $(@D) && touch $@

$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(call obj,$(LIB_SRC))
	@mkdir -p $(@D)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(PFI): $(call obj,$(CLI_SRC)) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The project's own libnvidia-ml.so.1 over the simulator, so the real NVML code path runs in CI.
$(FAKENVML): $(call obj,$(FAKE_SRC)) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,--exclude-libs,ALL -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(call obj,$(TEST_SUPPORT)) $(LIB) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS) -lcmocka

# Benchmarks link the tests' support code too (the cluster's stand-in node daemons).
$(BUILD)/bench/%: bench/%.c $(call obj,$(TEST_SUPPORT)) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS)

# Optional pieces, built only where their toolchains exist.
burn: $(BUILD)/pfi-burn
$(BUILD)/pfi-burn: $(wildcard src/burn/*.cu)
	@if [ -n "$(NVCC)" ]; then mkdir -p $(@D) && $(NVCC) -O2 -arch=sm_90 -o $@ $^ -lcublasLt -lcublas; \
	else echo "pfi-burn: nvcc not found, skipped"; fi
spank: $(BUILD)/lib/pfi_spank.so
# slurmd loads the plugin: it links libcurl only, never libpfi (small, and no clash with Slurm's).
$(BUILD)/lib/pfi_spank.so: $(wildcard src/slurm/*.c) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $(filter %.c,$^) -lcurl

ABUILD  := $(BUILD)/asan
asan-tests:
	$(MAKE) BUILD=$(ABUILD) SAN=1 $(patsubst $(BUILD)/%,$(ABUILD)/%,$(TESTS)) $(ABUILD)/pfi $(ABUILD)/lib/libnvidia-ml.so.1

# The layering rules of HACKING.md (circles, upward includes, cli/ that computes, ...), on the
# sources alone: first, so a violation fails the check before anything is built.
check-arch: | $(DEPS_OK)
	@python3 scripts/check-arch.py

# Both suites always run (a failure in the first must not hide the sanitizers' findings).
check: check-arch all $(TESTS) asan-tests burn
	@st=0; PFI_BIN=$(abspath $(PFI)) PFI_FAKENVML=$(abspath $(FAKENVML)) sh tests/run.sh $(BUILD) normal || st=1; \
	  PFI_BIN=$(abspath $(ABUILD)/pfi) PFI_FAKENVML=$(abspath $(ABUILD)/lib/libnvidia-ml.so.1) \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  sh tests/run.sh $(ABUILD) asan || st=1; exit $$st
test: check

# The main job on the embedded simulator: a live 8xH200 node under a stepping cap, then the
# paper end to end (fleet -> sweeps -> PFI -> predictor -> allocation -> report in study-out/).
demo: all
	$(PFI) demo
	$(PFI) study --fleet paper --out study-out
	@echo "open study-out/report.html (or read study-out/report.md)"


bench: all $(BENCHES)
	@for b in $(BENCHES); do echo "== $$b"; $$b || exit 1; done
	@sh bench/run.sh $(PFI)

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
