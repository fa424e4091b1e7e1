# wirematch — one Makefile, driven by conventions so that adding a file never
# means editing this one:
#
#   codec/*.c, matcher/*.c, control/*.c, dataplane/*.c
#                         -> one static library per folder, build/lib<folder>.a
#   <folder>/*_main.c     -> a program named after the file: control/wmctl_main.c
#                            -> build/wmctl (linked with its folder's library and
#                            every library below it: dataplane -> control ->
#                            matcher -> codec)
#   tests/unit/test_*.c   -> one Criterion binary each, build/tests/test_*
#   tests/fuzz/fuzz_*.c   -> a libFuzzer target (make fuzz: clang, build/fuzz) and, in every
#                            build, a corpus-replay binary run by make test
#   tests/integration/*.sh-> run by make test against the built tools and real peers
#   perf/bench_*.c        -> a Google Benchmark binary through perf/bench_shim.cc
#   perf/tools/NAME.c     -> a standalone perf program build/perf/NAME (load generators)
#
# Variants: SANITIZE=1 (ASan+UBSan, build/asan), TSAN=1 (ThreadSanitizer,
# build/tsan). The first target of everything is the dependency stamp, so
# `make test` on a fresh machine installs, builds and tests.

SHELL      := /bin/bash
.DEFAULT_GOAL := all

ifeq ($(FUZZ),1)
  # libFuzzer build: every object instrumented for coverage, linked with -fsanitize=fuzzer.
  BUILD    ?= build/fuzz
  CC       := clang
  SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  OPT      := -O1 -g
else ifeq ($(SANITIZE),1)
  BUILD    ?= build/asan
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
  OPT      := -O1 -g
else ifeq ($(TSAN),1)
  BUILD    ?= build/tsan
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
  OPT      := -O1 -g
else ifeq ($(PORTABLE),1)
  # The plain build for a baseline x86-64-v2 CPU: the scalar fallbacks of the
  # AVX-512/BMI2 paths (matcher/posting.h, nbf.h, peid_set.c, codec/exi_stream.h)
  # are compiled and tested here, since this machine would otherwise never run them.
  BUILD    ?= build/portable
  SANFLAGS :=
  OPT      := -O2 -g
else
  BUILD    ?= build
  SANFLAGS :=
  OPT      := -O2 -g
endif
# Every variant is built for this CPU (DPDK's headers need at least SSSE3, and
# the sanitizers should see the same code paths as the plain build).
ARCH     := $(if $(filter 1,$(PORTABLE)),-march=x86-64-v2,-march=native)

# The dependency stamp is an included makefile: on a fresh machine make builds
# it first (installing the packages) and then restarts itself, so every
# pkg-config query below is evaluated again with the libraries present.
STAMP      := build/deps.mk
ifeq ($(filter clean deps,$(MAKECMDGOALS)),)
include $(STAMP)
endif
CC         ?= gcc
CXX        ?= g++

# Every external library through pkg-config. jemalloc is the allocator of the
# tools outside the data plane; sanitizers bring their own allocator, so it is
# left out of sanitized builds.
PKG_CODEC     := libxml-2.0 zlib
PKG_MATCHER   := libhs liburcu-qsbr
PKG_CONTROL   := geos proj jansson libxml-2.0 liburing
PKG_DATAPLANE := libdpdk
PKG_TEST      := criterion
PKG_BENCH     := benchmark
ifeq ($(SANITIZE)$(TSAN),)
  PKG_MALLOC  := jemalloc
endif

# libdpdk's .pc adds -march=corei7, which would override our -march=native for
# every file that includes a DPDK header: the CPU choice is ours.
pc_cflags = $(if $(strip $(1)),$(filter-out -march=%,$(shell pkg-config --cflags $(1) 2>/dev/null)))
pc_libs   = $(if $(strip $(1)),$(shell pkg-config --libs $(1) 2>/dev/null))

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-unused-parameter
CSTD     := -std=gnu11 -D_GNU_SOURCE
INCLUDES := -I.
CFLAGS_COMMON := $(CSTD) $(OPT) $(ARCH) $(WARN) $(SANFLAGS) $(INCLUDES) -MMD -MP
LDFLAGS_COMMON := $(SANFLAGS)

LAYERS := codec matcher control dataplane
# Which pkg-config packages a layer's objects need (its own and those below).
PKGS_codec     := $(PKG_CODEC)
PKGS_matcher   := $(PKGS_codec) $(PKG_MATCHER)
PKGS_control   := $(PKGS_matcher) $(PKG_CONTROL)
PKGS_dataplane := $(PKGS_control) $(PKG_DATAPLANE)
# Link order for a program of each layer: its library and everything below.
LIBS_codec     := $(BUILD)/libcodec.a
LIBS_matcher   := $(BUILD)/libmatcher.a $(LIBS_codec)
LIBS_control   := $(BUILD)/libcontrol.a $(LIBS_matcher)
LIBS_dataplane := $(BUILD)/libdataplane.a $(LIBS_control)

# CRoaring ships no pkg-config file in Debian 12.
SYSLIBS := -lm -lpthread

# ---------------------------------------------------------------- sources
define layer_vars
$(1)_SRC  := $$(filter-out %_main.c,$$(wildcard $(1)/*.c))
$(1)_MAIN := $$(wildcard $(1)/*_main.c)
$(1)_OBJ  := $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRC))
$(1)_PROG := $$(patsubst $(1)/%_main.c,$(BUILD)/%,$$($(1)_MAIN))
endef
$(foreach L,$(LAYERS),$(eval $(call layer_vars,$(L))))

PROGS      := $(foreach L,$(LAYERS),$($(L)_PROG))
TEST_SRC   := $(wildcard tests/unit/test_*.c)
TEST_BIN   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TESTLIB_SRC:= $(wildcard tests/lib/*.c)
TESTLIB_OBJ:= $(patsubst %.c,$(BUILD)/obj/%.o,$(TESTLIB_SRC))
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY:= $(patsubst tests/fuzz/%.c,$(BUILD)/tests/replay_%,$(FUZZ_SRC))
FUZZ_BIN   := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
BENCH_SRC  := $(wildcard perf/bench_*.c)
BENCH_BIN  := $(patsubst perf/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
PERFLIB_SRC:= $(filter-out $(BENCH_SRC),$(wildcard perf/*.c))
# perf/tools/NAME.c -> build/perf/NAME: standalone perf programs (load generators).
PERFTOOL_SRC:= $(wildcard perf/tools/*.c)
PERFTOOL_BIN:= $(patsubst perf/tools/%.c,$(BUILD)/perf/%,$(PERFTOOL_SRC))
PERFLIB_OBJ:= $(patsubst %.c,$(BUILD)/obj/%.o,$(PERFLIB_SRC))
# MQTT clients on outside libraries that the proxy's integration tests drive.
TESTCLIENT_BIN := $(BUILD)/tests/proxy_paho

ALL_PKGS := $(PKGS_dataplane) $(PKG_MALLOC)
# Everything in tests/ and perf/ may use every layer.
ALL_CFLAGS := $(CFLAGS_COMMON) $(call pc_cflags,$(PKGS_dataplane))
ALL_LIBS   := $(LIBS_dataplane) $(call pc_libs,$(ALL_PKGS)) $(SYSLIBS)

.SECONDARY:
.PHONY: all deps test test-unit test-integration fuzz fuzz-bins fuzz-run bench bench-dataplane bench-proxy demo clean check-layers check-header-docs test-portable

all: $(STAMP) $(PROGS) $(TEST_BIN) $(FUZZ_REPLAY) $(BENCH_BIN) $(PERFTOOL_BIN) $(TESTCLIENT_BIN)

deps: $(STAMP)
$(STAMP): scripts/install-deps.sh
	@mkdir -p $(dir $@)
	bash scripts/install-deps.sh
	@echo "# written by make after scripts/install-deps.sh succeeded" > $@

# ---------------------------------------------------------------- objects
# A layer's objects see only the packages of that layer and below, so an arrow
# pointing the wrong way (codec including DPDK, say) fails to compile.
define layer_rules
$(BUILD)/obj/$(1)/%.o: $(1)/%.c | $(STAMP)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS_COMMON) $$(call pc_cflags,$$(PKGS_$(1))) -c $$< -o $$@

# An empty layer still yields an (empty) archive so link lines stay uniform.
$(BUILD)/lib$(1).a: $$($(1)_OBJ) | $(STAMP)
	@mkdir -p $$(dir $$@)
	rm -f $$@ && ar rcs $$@ $$^

# The same file's copy with its test hooks compiled in (see "test hooks").
$(BUILD)/obj/testhooks/$(1)/%.o: $(1)/%.c | $(STAMP)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS_COMMON) -DWM_TEST_HOOKS $$(call pc_cflags,$$(PKGS_$(1))) -c $$< -o $$@
endef
$(foreach L,$(LAYERS),$(eval $(call layer_rules,$(L))))

define prog_rule
$(BUILD)/$(2): $(BUILD)/obj/$(1)/$(2)_main.o $$(LIBS_$(1))
	$$(CC) $$(LDFLAGS_COMMON) -o $$@ $$< $$(LIBS_$(1)) $$(call pc_libs,$$(PKGS_$(1)) $$(PKG_MALLOC)) $$(SYSLIBS)
endef
$(foreach L,$(LAYERS),$(foreach M,$($(L)_MAIN),$(eval $(call prog_rule,$(L),$(patsubst $(L)/%_main.c,%,$(M))))))

$(BUILD)/obj/tests/%.o: tests/%.c | $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DWM_TEST_HOOKS $(call pc_cflags,$(PKG_TEST)) -c $< -o $@

$(BUILD)/obj/perf/%.o: perf/%.c | $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/perf/bench_shim.o: perf/bench_shim.cc perf/bench.h | $(STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(OPT) $(ARCH) $(SANFLAGS) -Wall -Wextra -Werror $(INCLUDES) $(call pc_cflags,$(PKG_BENCH)) -c $< -o $@

# ---------------------------------------------------------------- test hooks
# Pause points for race tests (code under #ifdef WM_TEST_HOOKS, such as
# match_sink.h's lookup hook) would cost the data plane a branch per packet,
# so the layer libraries and every program are built without them. A layer
# file that mentions WM_TEST_HOOKS gets a second object built with it, in
# libtesthooks.a, which the unit tests link ahead of the layer libraries: a
# test that calls into such a file gets the hooked copy, whose symbols then
# keep the library's own copy out of the link. Test sources are compiled
# with the define too, so they see the hooks' declarations.
TESTHOOK_SRC := $(shell grep -l WM_TEST_HOOKS $(foreach L,$(LAYERS),$($(L)_SRC)) /dev/null)
TESTHOOK_OBJ := $(patsubst %.c,$(BUILD)/obj/testhooks/%.o,$(TESTHOOK_SRC))

$(BUILD)/libtesthooks.a: $(TESTHOOK_OBJ) | $(STAMP)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# ---------------------------------------------------------------- tests
$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(TESTLIB_OBJ) $(BUILD)/libtesthooks.a $(LIBS_dataplane)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_COMMON) -o $@ $< $(TESTLIB_OBJ) $(BUILD)/libtesthooks.a $(ALL_LIBS) $(call pc_libs,$(PKG_TEST))

# The Eclipse Paho C client (libpaho-mqtt-dev, scripts/install-deps.sh).
$(BUILD)/tests/proxy_paho: tests/integration/proxy_paho.c | $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LDFLAGS_COMMON) -lpaho-mqtt3c

# Fuzz targets double as regression tests: replay their committed corpus.
$(BUILD)/tests/replay_%: $(BUILD)/obj/tests/fuzz/%.o $(BUILD)/obj/tests/fuzz/replay_driver.o $(TESTLIB_OBJ) $(LIBS_dataplane)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_COMMON) -o $@ $< $(BUILD)/obj/tests/fuzz/replay_driver.o $(TESTLIB_OBJ) $(ALL_LIBS)

$(BUILD)/obj/tests/fuzz/replay_driver.o: tests/fuzz/replay_driver.c | $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

test: all check-layers check-header-docs
	bash scripts/run-tests.sh $(BUILD) $(TEST_FILTER)

# The tests of the code that has CPU-specific paths, built for a baseline CPU.
PORTABLE_TESTS := matcher_api matcher_diff peid_set dataplane_peid_cache exi_stream exi_strict exi_codec \
                  exi_typed exi_reuse xpath_filter xpath_diff xpath_text \
                  exi_datetime_values xpath_xsi_undeclared exi_prefixes exi_comments xpath_comments
test-portable:
	$(MAKE) PORTABLE=1 $(PORTABLE_TESTS:%=build/portable/tests/test_%)
	bash scripts/run-tests.sh build/portable test_

check-layers:
	@bash scripts/check-layers.sh

# Public headers document every function (a comment above each wm_* prototype).
check-header-docs:
	@bash scripts/check-header-docs.sh

# ---------------------------------------------------------------- fuzz (clang)
# `make fuzz` re-enters make with FUZZ=1: the same rules, built by clang with
# coverage instrumentation into build/fuzz, and each target linked with libFuzzer.
ifeq ($(FUZZ),1)
build/fuzz/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(TESTLIB_OBJ) $(LIBS_dataplane)
	$(CC) -fsanitize=fuzzer,address,undefined -o $@ $< $(TESTLIB_OBJ) $(ALL_LIBS)
fuzz-bins: $(FUZZ_BIN)
else
fuzz: $(STAMP)
	$(MAKE) FUZZ=1 fuzz-bins
endif

# make fuzz-run FUZZ_SECONDS=600 : each target over its corpus, new inputs kept.
FUZZ_SECONDS ?= 60
fuzz-run: fuzz
	bash scripts/fuzz-run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

# ---------------------------------------------------------------- bench
$(BUILD)/bench/bench_%: $(BUILD)/obj/perf/bench_%.o $(BUILD)/obj/perf/bench_shim.o $(PERFLIB_OBJ) $(LIBS_dataplane)
	@mkdir -p $(dir $@)
	$(CXX) $(LDFLAGS_COMMON) -o $@ $< $(BUILD)/obj/perf/bench_shim.o $(PERFLIB_OBJ) $(ALL_LIBS) $(call pc_libs,$(PKG_BENCH))

bench: $(BENCH_BIN)
	bash scripts/run-bench.sh $(BUILD) $(BENCH_BIN)

$(BUILD)/perf/%: $(BUILD)/obj/perf/tools/%.o $(LIBS_dataplane)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_COMMON) -o $@ $< $(ALL_LIBS)

# our EXI decoder vs exificient.js (node) on the same documents, same run: perf/exi_vs_exificient.sh
.PHONY: bench-exi
bench-exi: $(BUILD)/bench/bench_exi_decode $(BUILD)/wmctl
	bash perf/exi_vs_exificient.sh $(BUILD)

# mosquitto alone vs behind wirematch-proxy (pass-through), same run: perf/proxy_bench.sh
bench-proxy: $(BUILD)/wirematch-proxy $(BUILD)/perf/mqtt_loadgen $(BUILD)/perf/tcp_relay $(BUILD)/wmctl
	bash perf/proxy_bench.sh $(BUILD)

# The main job on real input: resolve Monaco, replay the demo capture through
# build/wirematch with matching, print a summary (scripts/demo.sh).
demo: $(STAMP) $(BUILD)/wirematch $(BUILD)/wmctl
	WM_BUILD=$(BUILD) bash scripts/demo.sh

# The data plane against dpdk-testpmd io-forward on the same synthetic spaPS
# capture (perf/bench-dataplane.sh; SECONDS_PER_RUN, ROUNDS, PUBLISHES).
bench-dataplane: $(STAMP) $(BUILD)/wirematch $(BUILD)/wmctl
	bash perf/bench-dataplane.sh $(BUILD)

clean:
	rm -rf build/asan build/tsan build/obj build/tests build/bench build/perf build/fuzz $(PROGS) build/lib*.a

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
