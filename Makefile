# train_gpt — build. `make` builds ./train_gpt and ./tokenize (CPU backend
# always; the CUDA backend too when nvcc is found). `make test` runs the
# Criterion suite. `make data` prepares the default dataset; `make hellaswag`
# the HellaSwag eval file; `make llmc-compat LLMC_DIR=...` compares with llm.c's
# own CPU trainer. `make test-asan`
# runs the suite under ASan+UBSan; `make fuzz` builds the libFuzzer targets.
CC      ?= gcc
# NVCC: see the build folder's nvcc.stamp below (found when never given).
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CFLAGS  ?= -O3 -g
CFLAGS  += -std=gnu11 -fopenmp -Wall -Wextra -Wno-unused-parameter -I. -MMD -MP
# OpenBLAS's OpenMP build shares our OpenMP thread pool; the default pthread
# build runs a second pool that spins against ours (3x slower on 2 cores).
OPENBLAS_OMP := /usr/lib/$(shell gcc -print-multiarch)/openblas-openmp
ifneq ($(wildcard $(OPENBLAS_OMP)/libopenblas.so),)
  LDLIBS += -L$(OPENBLAS_OMP) -Wl,-rpath,$(OPENBLAS_OMP)
endif
LDLIBS  += -lopenblas -lpcre2-8 -lutf8proc -lcjson -lcrypto -lz -lm
# MPI (distributed/): OpenMPI's compile and link flags, from its compiler
# wrapper. `make NO_MPI=1` builds without MPI, as llm.c allows: one process
# only (a launcher is refused, no NCCL ranks either); --version says so.
MPICC   ?= mpicc
NO_MPI  ?=
ifeq ($(NO_MPI),)
  MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
  MPI_LIBS   := $(shell $(MPICC) --showme:link 2>/dev/null)
  ifeq ($(MPI_LIBS),)
    $(error MPI not found: `$(MPICC) --showme:link` failed; install libopenmpi-dev and openmpi-bin (Debian), or set MPICC=/path/to/mpicc, or build a single-process trainer without MPI: make NO_MPI=1)
  endif
  CFLAGS  += $(MPI_CFLAGS)
  LDLIBS  += $(MPI_LIBS)
else
  CFLAGS  += -DNO_MPI
endif
# sm_90a, not sm_90: the arch-specific target adds wgmma (the Hopper attention
# variants of the checker's sweep, dev/cuda/attention_mma_*_wg.cu) and compiles every other
# kernel exactly as sm_90 does. It runs only on compute capability 9.0, which is
# the only 9.x there is (H100, H200, GH200), and the old code=sm_90 (no PTX) ran
# nowhere else either; keeping both cubins would double the sm_90 build for one
# kernel and leave which of the two the driver loads unstated.
NVFLAGS ?= -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a \
           -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -Werror all-warnings -I.
WERROR  ?=
SANITIZE ?=
CFLAGS  += $(WERROR) $(SANITIZE)

BUILD   := build
# The CUDA choice is kept per build folder: NVCC given (`make NVCC=` for
# CPU-only, or NVCC=/path/to/nvcc) is written to $(BUILD)/nvcc.stamp, and a
# later make without NVCC (`make data`, `make test`) takes it from there, so
# it neither rebuilds the objects the other way nor links one program of
# each kind. Never given: nvcc is searched for. `make clean` forgets it.
NVCC_STAMP := $(BUILD)/nvcc.stamp
ifeq ($(origin NVCC),undefined)
  ifneq ($(wildcard $(NVCC_STAMP)),)
    NVCC := $(shell cat $(NVCC_STAMP))
    NVCC_FROM := stamp
  else
    NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
    NVCC_FROM := search
  endif
else
  NVCC_FROM := given
  $(shell mkdir -p $(BUILD); [ -f $(NVCC_STAMP) ] && [ "$$(cat $(NVCC_STAMP))" = '$(NVCC)' ] || echo '$(NVCC)' > $(NVCC_STAMP))
endif
ifeq ($(NVCC_FROM),search)
  NO_CUDA_WHY := nvcc not found (set NVCC=/path/to/nvcc for the CUDA backend)
else ifeq ($(NVCC_FROM),given)
  NO_CUDA_WHY := NVCC= was given (kept in $(NVCC_STAMP); NVCC=/path/to/nvcc turns CUDA back on)
else
  NO_CUDA_WHY := NVCC= was given earlier, kept in $(NVCC_STAMP) (NVCC=/path/to/nvcc turns CUDA back on)
endif
# The library: every layer below the CLI (dev/layers gives their order).
LIB_SRC := $(wildcard base/*.c kernels/*.c kernels/cpu/*.c model/*.c data/*.c distributed/*.c \
                     ckpt/*.c interop/*.c eval/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CU_SRC  := $(wildcard kernels/cuda/*.cu)
# The suite: tests/unit/<module>/, tests/e2e/<feature>/ and their helpers in tests/lib/.
TEST_SRC := $(wildcard tests/lib/*.c tests/unit/*/*.c tests/e2e/*/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
# The CLI: train_gpt.c's main and the rest of the command in cli/.
CLI_OBJ := $(patsubst %.c,$(BUILD)/%.o,train_gpt.c $(wildcard cli/*.c))
PROGRAMS := train_gpt tokenize
# The test build (base/test_hooks.h): the files that hold TRAIN_GPT_TEST_*
# hooks, compiled a second time with -DTRAIN_GPT_TEST_HOOKS into
# $(BUILD)/hooks/. The suite and the programs it drives,
# $(BUILD)/test/train_gpt and $(BUILD)/test/tokenize, link them ahead of the
# plain objects; ./train_gpt and ./tokenize have no hooks.
HOOK_LIB_SRC := base/fileio.c ckpt/session.c data/shard.c model/gpt.c model/gpt_optim.c
HOOK_CLI_SRC := cli/loop.c cli/progress.c cli/evaluate.c cli/recompute.c cli/costs.c cli/startup.c
HOOK_LIB_OBJ := $(HOOK_LIB_SRC:%.c=$(BUILD)/hooks/%.o)
HOOK_CLI_OBJ := $(HOOK_CLI_SRC:%.c=$(BUILD)/hooks/%.o)

ifneq ($(NVCC),)
ifneq ($(CU_SRC),)
  HAVE_CUDA := 1
  CFLAGS  += -DHAVE_CUDA -I$(CUDA_HOME)/include
  CU_OBJ  := $(CU_SRC:%.cu=$(BUILD)/%.o)
  LIB_OBJ += $(CU_OBJ)
  # cuBLASLt and NCCL are not linked: kernels/cuda_libs.c opens them when a
  # cuda backend or NCCL ranks are first made (linked, they cost every start
  # of every program 0.4 CPU-s before main, --help included). It opens the
  # sonames this toolkit's libraries carry, the names -l would have recorded.
  LDLIBS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
  CUDA_LIBS_SONAME = $(shell objdump -p $(CUDA_HOME)/lib64/lib$(1).so 2>/dev/null | awk '$$1 == "SONAME" {print $$2}')
  CUDA_LIBS_CUBLASLT := $(call CUDA_LIBS_SONAME,cublasLt)
  CUDA_LIBS_NCCL := $(call CUDA_LIBS_SONAME,nccl)
endif
endif

# The NCCL path (distributed/dist_nccl.c) compiled against the real nccl.h and CUDA
# runtime headers even when the CUDA backend is not built, so CI (no GPU)
# checks it whenever the CUDA toolkit is installed.
ifneq ($(HAVE_CUDA),1)
  NCCL_CHECK := $(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(BUILD)/distributed/nccl_check.o)
endif

.PHONY: all test data hellaswag llmc-compat clean cuda-check cuda-emu-check cuda-resources cuda-perf-model \
        gpu-check-rehearsal cuda-emu-train cuda-emu-nccl
all: $(PROGRAMS) $(NCCL_CHECK)
ifeq ($(HAVE_CUDA),1)
	@echo "built with the CUDA backend ($(NVCC); sm_80, sm_90a)"
else
	@echo "built CPU-only: $(NO_CUDA_WHY)"
endif

# Objects depend on the flags they were built with: when CFLAGS or NVFLAGS
# change (HAVE_CUDA appearing, WERROR, a sanitizer), everything rebuilds.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW := $(CC) $(CFLAGS) | $(NVCC) $(NVFLAGS)
$(shell mkdir -p $(BUILD); [ "$$(cat $(FLAGS_STAMP) 2>/dev/null)" = '$(FLAGS_NOW)' ] || echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))

# --version says why a build has no CUDA backend, as the line `make` ends
# with does; only kernels/device_info.o sees it, rebuilt when it changes.
ifeq ($(NVCC_FROM),search)
  NO_CUDA_BRIEF := nvcc was not found at build time
else
  NO_CUDA_BRIEF := a CPU-only build: NVCC= was given; make NVCC=/path/to/nvcc builds CUDA
endif
NO_CUDA_STAMP := $(BUILD)/nocuda.stamp
$(shell mkdir -p $(BUILD); [ "$$(cat $(NO_CUDA_STAMP) 2>/dev/null)" = '$(NO_CUDA_BRIEF)' ] || echo '$(NO_CUDA_BRIEF)' > $(NO_CUDA_STAMP))
$(BUILD)/kernels/device_info.o: CFLAGS += -DTRAIN_GPT_NO_CUDA_WHY='"$(NO_CUDA_BRIEF)"'
$(BUILD)/kernels/device_info.o: $(NO_CUDA_STAMP)

# The sonames kernels/cuda_libs.c opens; it rebuilds when a toolkit changes them.
ifeq ($(HAVE_CUDA),1)
  CUDA_LIBS_STAMP := $(BUILD)/cuda_libs.stamp
  $(shell [ "$$(cat $(CUDA_LIBS_STAMP) 2>/dev/null)" = '$(CUDA_LIBS_CUBLASLT) $(CUDA_LIBS_NCCL)' ] || echo '$(CUDA_LIBS_CUBLASLT) $(CUDA_LIBS_NCCL)' > $(CUDA_LIBS_STAMP))
  # a name not found is left undefined: cuda_libs.c's #error then says which
  # (not a make error: dry runs with a toolkit that is not there still parse)
  $(BUILD)/kernels/cuda_libs.o: CFLAGS += $(if $(CUDA_LIBS_CUBLASLT),-DCUDA_LIBS_CUBLASLT_SONAME='"$(CUDA_LIBS_CUBLASLT)"') \
                                          $(if $(CUDA_LIBS_NCCL),-DCUDA_LIBS_NCCL_SONAME='"$(CUDA_LIBS_NCCL)"')
  $(BUILD)/kernels/cuda_libs.o: $(CUDA_LIBS_STAMP)
endif

# --version's commit: `git describe` at build time ("unknown" outside a git
# tree). Only cli/version.o sees it, and it rebuilds only when it changes.
GIT_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
VERSION_STAMP := $(BUILD)/version.stamp
$(shell [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = '$(GIT_COMMIT)' ] || echo '$(GIT_COMMIT)' > $(VERSION_STAMP))
$(BUILD)/cli/version.o: CFLAGS += -DTRAIN_GPT_COMMIT='"$(GIT_COMMIT)"'
# the host's AdamW rounds every step as the cuda kernel does: no fused multiply-add
$(BUILD)/kernels/host_adamw.o: CFLAGS += -ffp-contract=off
$(BUILD)/cli/version.o: $(VERSION_STAMP)

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/hooks/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DTRAIN_GPT_TEST_HOOKS -c $< -o $@

$(BUILD)/%.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -DHAVE_CUDA -c $< -o $@

$(BUILD)/distributed/nccl_check.o: distributed/dist_nccl.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DHAVE_CUDA -I$(CUDA_HOME)/include -Werror -c $< -o $@

$(BUILD)/libtrain_gpt.a: $(LIB_OBJ)
	ar rcs $@ $^

# The programs and the suite, built in $(BUILD) and copied to the root
# (ASan builds stay in build/asan). The tests link the CLI objects they unit
# test: the text sampler (cli/generate), the step-time spread (cli/costs)
# and the start-up guard with the option parser it reads (tests/unit/cli/).
TEST_CLI_OBJ := $(patsubst %,$(BUILD)/cli/%.o,costs generate guard option_table options options_family run_record version)
$(BUILD)/train_gpt: $(CLI_OBJ) $(BUILD)/libtrain_gpt.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tokenize: $(BUILD)/tokenize.o $(BUILD)/libtrain_gpt.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The test build's programs: the hooked objects replace the CLI's own and
# come ahead of the library, whose plain copies are then never pulled in.
$(BUILD)/test/train_gpt: $(HOOK_CLI_OBJ) $(HOOK_LIB_OBJ) \
                         $(filter-out $(HOOK_CLI_SRC:%.c=$(BUILD)/%.o),$(CLI_OBJ)) $(BUILD)/libtrain_gpt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/test/tokenize: $(BUILD)/hooks/base/fileio.o $(BUILD)/tokenize.o $(BUILD)/libtrain_gpt.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The suite, with the hooked library objects; building it builds the test
# programs it drives (tests/lib/cli_harness.h: $TRAIN_GPT_BIN, else
# build/test/train_gpt when it exists, else ./train_gpt).
$(BUILD)/run_tests: $(HOOK_LIB_OBJ) $(TEST_OBJ) $(TEST_CLI_OBJ) $(BUILD)/libtrain_gpt.a \
                    | $(BUILD)/test/train_gpt $(BUILD)/test/tokenize
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS) -lcriterion

train_gpt tokenize: %: $(BUILD)/%
	cp $< $@

# The suite: unit and end-to-end tests. They drive the test build's
# programs; ./train_gpt and ./tokenize are built too, for the check that they
# hold no test hook (TRAIN_GPT_PRODUCT_DIR: the folder holding them).
# The independent tests run TEST_JOBS at a time (default: one per core);
# the tests that bound a time (TEST_SERIAL: a stop within a bound, time-paced
# saves, a collective timeout, an ETA) run after them, one at a time, with no
# other test beside them. TEST_ARGS with a --filter runs just those tests,
# one at a time.
# OMP_WAIT_POLICY=PASSIVE: two jobs of two OpenMP threads on two cores (and
# any other load) leave a thread spinning at each barrier while the one it
# waits for has no core; sleeping there instead made decode/* and
# schedule_exec/* 106 to 130 s -> 6 s on the shared 2-core build VM (load 5).
# The results do not depend on it (ops.h: the same bits at any thread count).
TEST_OMP := OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
TEST_ENV = TRAIN_GPT_BIN=$(BUILD)/test/train_gpt TRAIN_GPT_TOKENIZE_BIN=$(BUILD)/test/tokenize \
           TRAIN_GPT_PRODUCT_DIR=. $(TEST_OMP)
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# Only a test that bounds a time from above is here: a busy machine makes it
# slow, never fast. A memory measure runs beside the others: VmHWM and VmRSS
# are the process's own pages, which another process's load does not change,
# and every budget those tests give is explicit, never derived from the
# machine's free memory (memory_budget/*, matmul_prepare/*, long_context/*).
# Nor is a test here whose clock bound is from below (a 60 us pace every step
# outlasts, a billion steps over an hour) or that is staged by the pause hook
# with no bound (save_minutes/ and progress/'s others). ranks/: only the
# stalled rank's bound is a clock; its other tests check exit statuses and
# messages. startup_stops/each_long_loop_polls_and_gives_up has no clock
# (0.2 s) but rides with its suite.
TEST_SERIAL := startup_stops/* tokenize_stop/* save_minutes/the_pace_is_time_not_steps \
               save_minutes/two_ranks_save_together_by_rank_0s_clock \
               ranks/a_stalled_rank_ends_the_job_within_the_timeout \
               progress/eta_of_the_last_step_counts_the_final_val \
               progress/step_figures_follow_the_flop_count resume/second_signal_exits_at_once
TEST_EMPTY :=
TEST_SERIAL_GLOB := $(subst $(TEST_EMPTY) $(TEST_EMPTY),|,$(strip $(TEST_SERIAL)))
# the list for scripts (dev/asan_subset_check.sh)
.PHONY: print-test-serial
print-test-serial:
	@echo '$(TEST_SERIAL)'
# $(call run_suite,ENV,RUN_TESTS): the independent tests TEST_JOBS at a
# time, then TEST_SERIAL one at a time; a --filter in TEST_ARGS: just those.
ifneq ($(findstring --filter,$(TEST_ARGS)),)
run_suite = $(1) $(2) --jobs 1 $(TEST_ARGS)
else
run_suite = $(1) $(2) --jobs $(TEST_JOBS) --filter '!(@($(TEST_SERIAL_GLOB)))' $(TEST_ARGS); \
	p=$$?; $(1) $(2) --jobs 1 --filter '@($(TEST_SERIAL_GLOB))' $(TEST_ARGS); \
	s=$$?; [ $$p = 0 ] && [ $$s = 0 ]
endif
test: all $(BUILD)/run_tests $(BUILD)/test/train_gpt $(BUILD)/test/tokenize
	$(call run_suite,$(TEST_ENV),$(BUILD)/run_tests)

data: tokenize
	scripts/prepare_data.sh

# HellaSwag's validation set as an llm.c eval file, datasets/hellaswag_val.bin
# (scripts/get_hellaswag.sh: found or fetched along data/source.h's chain,
# sha256-checked).
hellaswag: tokenize
	scripts/get_hellaswag.sh

# llm.c's own CPU trainer (train_gpt2.c of an llm.c checkout) on shards and a
# model file made here, its losses against ./train_gpt's (dev/notes/llmc-compat.md):
# `make llmc-compat LLMC_DIR=path/to/llm.c`. Not part of test or CI (no llm.c).
llmc-compat: train_gpt tokenize
	dev/bench/check_llmc_compat.sh "$(LLMC_DIR)"

# CUDA kernel checker (dev/cuda/README.md): every op against the cpu
# backend. `make cuda-check` runs it on the GPU; `make cuda-emu-check` runs
# the same checker on the hand-written kernels under a CPU emulator (no GPU,
# no nvcc needed; cuBLASLt replaced by a plain product). Both link the
# attention kernels' variants (dev/cuda/attention*.cu), which ./train_gpt
# does not hold: it ships one configuration per kernel.
VARIANT_SRC := $(wildcard dev/cuda/attention*.cu)
CHECK_SRC := dev/cuda/check_kernels.c dev/cuda/check_attention.c dev/cuda/check_util.c \
             dev/cuda/check_timing.c dev/cuda/check_sweep.c dev/cuda/check_fused.c \
             dev/cuda/check_offload.c dev/cuda/check_llama.c dev/cuda/check_rank_sum.c
EMU_SRC := $(filter-out kernels/cuda/gemm.cu,$(CU_SRC)) $(VARIANT_SRC) dev/cuda/emu/emu.cpp dev/cuda/emu/emu_wgmma.cpp \
           dev/cuda/emu/emu_stream.cpp dev/cuda/emu/emu_gemm.cpp dev/cuda/check_hang.cu
EMU_OBJ := $(patsubst %,$(BUILD)/emu/%.o,$(EMU_SRC) $(CHECK_SRC)) $(filter-out $(CU_OBJ),$(LIB_OBJ))
ifeq ($(HAVE_CUDA),1)
build/check_kernels: $(CHECK_SRC:%.c=$(BUILD)/%.o) $(VARIANT_SRC:%.cu=$(BUILD)/%.o) $(BUILD)/libtrain_gpt.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
cuda-check: build/check_kernels
	./build/check_kernels $(CHECK_ARGS)
else
build/check_kernels cuda-check:
	@echo "$@ needs the CUDA backend, and this build is CPU-only: $(NO_CUDA_WHY)" >&2; false
endif
EMU_CXXFLAGS := -std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -I. -Idev/cuda/emu -MMD -MP
$(BUILD)/emu/%.o: %
	@mkdir -p $(dir $@)
	$(if $(filter %.c,$<),$(CC) $(CFLAGS),$(CXX) $(EMU_CXXFLAGS) $(EMU_MPI) -x c++) -DCUDA_EMU -c $< -o $@
build/check_kernels_emu: $(EMU_OBJ)
	$(CXX) -fopenmp $^ -o $@ $(LDLIBS)
# the emulated wgmma on its own (layouts, asynchrony rules): emu_wgmma_check.cpp
WGMMA_CHECK_OBJ := $(patsubst %,$(BUILD)/emu/dev/cuda/emu/%.o,emu.cpp emu_stream.cpp emu_wgmma.cpp emu_wgmma_check.cpp)
build/emu_wgmma_check: $(WGMMA_CHECK_OBJ)
	$(CXX) $^ -o $@
# cuda-emu-check's runs are independent (no file in common), each a target
# of its own so that `make -j2 cuda-emu-check` runs two at a time: the
# emulator runs a launch's blocks one after another on one core, and
# check_train_emu.py's runs are one thread each. The longest start first
# (CPU-s at load 9-14: 51 and 51 for the two orders, 35 NCCL, 24 the trainer,
# 12 the sweep, the others 1 to 8).
# Each run's output is printed together when it ends (-Otarget, set here for
# this goal), not interleaved with the other's.
EMU_CHECK_RUNS := kernels-fwd kernels-rev nccl train sweep cc80 fused grid-z enc-text enc-sort wgmma
cuda-emu-check: $(EMU_CHECK_RUNS:%=emu-check-%)
ifneq ($(filter cuda-emu-check,$(MAKECMDGOALS)),)
  MAKEFLAGS += -Otarget
endif
.PHONY: $(EMU_CHECK_RUNS:%=emu-check-%)
# a cpu reference thread that waits sleeps instead of spinning against the
# other run (as TEST_OMP): two concurrent --only attention --dtype fp32 runs
# took 9.8 CPU-s with it against 11.4 without (load 4); no result depends on it
$(EMU_CHECK_RUNS:%=emu-check-%): export OMP_WAIT_POLICY := PASSIVE
emu-check-wgmma: build/emu_wgmma_check
	./build/emu_wgmma_check
emu-check-kernels-fwd emu-check-kernels-rev: emu-check-kernels-%: build/check_kernels_emu
	EMU_ORDER=$* ./build/check_kernels_emu --quick $(CHECK_ARGS)
emu-check-fused: build/check_kernels_emu
	TRAIN_GPT_FUSE_GELU=1 ./build/check_kernels_emu --quick --only fused $(CHECK_ARGS)
emu-check-grid-z: build/check_kernels_emu
	EMU_MAX_GRID_Z=2 ./build/check_kernels_emu --quick --only attention --dtype fp32 $(CHECK_ARGS)
emu-check-cc80: build/check_kernels_emu
	EMU_CC=80 ./build/check_kernels_emu --quick --only attention --dtype bf16 $(CHECK_ARGS)
emu-check-sweep: build/check_kernels_emu
	./build/check_kernels_emu --sweep --quick --dtype bf16
emu-check-enc-sort: build/check_kernels_emu
	EMU_ENC_SORT_CHUNK=256 ./build/check_kernels_emu --quick --only encoder $(CHECK_ARGS)
emu-check-enc-text: build/check_kernels_emu
	if [ -f datasets/tinyshakespeare_train_000000.bin ]; then for o in fwd rev; do EMU_ORDER=$$o \
	    CHECK_KERNELS_TOKENS=datasets/tinyshakespeare_train_000000.bin ./build/check_kernels_emu --quick --only encoder || exit 1; done; \
	else echo "cuda-emu-check: no datasets/ (make data): the encoder on text ids not checked" >&2; fi
emu-check-train: build/train_gpt_emu
	python3 dev/cuda/check_train_emu.py build/train_gpt_emu
emu-check-nccl: build/train_gpt_emu
	$(EMU_NCCL_CHECK)
# The whole trainer on the emulated kernels (dev/cuda/README.md, "The trainer on
# the emulator"): ./train_gpt's objects with kernels/cuda/ compiled for the
# emulator (cuBLASLt replaced by emu_gemm.cpp), and the four files that ask
# HAVE_CUDA whether a cuda backend is linked compiled with it (a CPU-only build's
# copies say no). `--device cuda` then runs every op of a step on the emulator:
# tiny shapes only. `make cuda-emu-train` runs dev/cuda/check_train_emu.py on it
# (the Llama family against the cpu backend, recompute modes bitwise, offload,
# decode, op costs, the planner; about 50 s on one core); cuda-emu-check runs it too.
# The NCCL path too: distributed/dist.c with HAVE_CUDA, dist_nccl.c compiled as C++
# against the emulator's <cuda_runtime_api.h> and <nccl.h> (dev/cuda/emu), and
# emu_nccl.cpp, the emulated NCCL over MPI, which also stands in for
# kernels/cuda_libs.o's NCCL table (dev/cuda/README.md, "The NCCL path on the emulator").
EMU_TRAIN_HAVE_CUDA := kernels/backend.c cli/options.c cli/recompute.c distributed/dist.c
EMU_TRAIN_SRC := $(filter-out kernels/cuda/gemm.cu,$(CU_SRC)) dev/cuda/emu/emu.cpp \
                 dev/cuda/emu/emu_wgmma.cpp dev/cuda/emu/emu_stream.cpp dev/cuda/emu/emu_gemm.cpp \
                 dev/cuda/emu/emu_nccl.cpp
EMU_TRAIN_OBJ := $(patsubst %,$(BUILD)/emu/%.o,$(EMU_TRAIN_SRC)) \
                 $(EMU_TRAIN_HAVE_CUDA:%.c=$(BUILD)/emu/have_cuda/%.o) $(BUILD)/emu/nccl/dist_nccl.o \
                 $(filter-out $(CU_OBJ) $(EMU_TRAIN_HAVE_CUDA:%.c=$(BUILD)/%.o) \
                              $(BUILD)/distributed/dist_nccl.o $(BUILD)/kernels/cuda_libs.o,$(CLI_OBJ) $(LIB_OBJ))
EMU_MPI := $(if $(NO_MPI),-DNO_MPI,$(MPI_CFLAGS) -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX)
$(BUILD)/emu/have_cuda/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DHAVE_CUDA -c $< -o $@
$(BUILD)/emu/nccl/dist_nccl.o: distributed/dist_nccl.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_MPI) -DCUDA_EMU -DHAVE_CUDA -x c++ -c $< -o $@
build/train_gpt_emu: $(EMU_TRAIN_OBJ)
	$(CXX) -fopenmp $^ -o $@ $(LDLIBS)
cuda-emu-train: build/train_gpt_emu
	python3 dev/cuda/check_train_emu.py build/train_gpt_emu
# The NCCL path on the emulator (dev/cuda/README.md): build/train_gpt_emu under
# mpirun -np 2, --device cuda through the emulated NCCL against --device cpu, at
# --zero 0 to 3, and at 4 ranks every --zero bitwise --zero 0 (the sums' order;
# about 50 CPU-s); cuda-emu-check runs it too.
EMU_NCCL_CHECK = $(if $(NO_MPI),@echo "cuda-emu-nccl: a NO_MPI build has no ranks: the NCCL path is not checked" >&2,python3 dev/cuda/check_nccl_emu.py build/train_gpt_emu)
cuda-emu-nccl: build/train_gpt_emu
	$(EMU_NCCL_CHECK)
# dev/gpu_check/gpu_check.sh's CPU rehearsal (GPU_CHECK_REHEARSAL=1): every section's
# shell and parsing on the cpu backend at tiny shapes, the kernel checks and
# --sweep on the emulator; dev/gpu_check/gpu_check_rehearsal.py checks the rows the
# GPU run would print, then a hang injected on the emulator (85 to 230 s on
# 2 shared cores, by their load; CI runs it with GPU_CHECK_REHEARSAL_JOBS=2,
# two phases at a time: the script's header). First
# bash -n, and shellcheck's warnings when it is installed, on the GPU scripts.
GPU_SCRIPTS := dev/gpu_check/gpu_check.sh dev/gpu_check/gpu_check_lib.sh dev/gpu_check/gpu_check_offload.sh dev/gpu_check/gpu_check_llama.sh dev/gpu_check/gpu_check_dist.sh dev/bench/bench_auto.sh dev/gpu_check/gpu_bundle.sh
gpu-check-rehearsal: all build/check_kernels_emu
	for f in $(GPU_SCRIPTS); do bash -n $$f || exit 1; done
	if command -v shellcheck >/dev/null; then shellcheck -x -S warning $(GPU_SCRIPTS); \
	else echo "gpu-check-rehearsal: no shellcheck (apt-get install shellcheck): not run" >&2; fi
	python3 dev/gpu_check/gpu_check_rehearsal.py
# The kernels as ptxas sees them, without a GPU: every kernels/cuda/*.cu and
# dev/cuda/attention*.cu compiled for sm_80 and for sm_90a, device code only
# (-cubin, one nvcc per file and architecture: -j runs them in parallel) with
# the device flags of NVFLAGS and -Xptxas -v, into $(KRES_DIR) with ptxas's
# report beside each cubin (.log). cuda-resources reads the reports of both,
# cuda-perf-model the sm_90a cubins and reports: each kernel is compiled once
# for the two, and again only when its sources, nvcc or these flags change
# (the stamp; not CFLAGS'). The same cubins as a two-architecture build's:
# nvcc's kept sm_90a cubin of one was byte-identical to -cubin -arch=sm_90a's.
# nvcc: the build's, else the one on PATH or in /usr/local/cuda (a CPU-only
# build's tree still has kernels to report on); none: the two say so.
KRES_DIR := $(BUILD)/kres
KRES_FLAGS := -O3 -std=c++17 -I. -DHAVE_CUDA
KRES_STAMP := $(KRES_DIR)/flags.stamp
KRES_SRC := $(CU_SRC) $(VARIANT_SRC)
ifneq ($(filter cuda-resources cuda-perf-model,$(MAKECMDGOALS)),)
  KRES_NVCC := $(or $(NVCC),$(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null))
  KRES_LOG := $(if $(KRES_NVCC),$(foreach a,sm_80 sm_90a,$(KRES_SRC:%.cu=$(KRES_DIR)/%.$(a).log)))
  ifneq ($(KRES_LOG),)
    $(shell mkdir -p $(KRES_DIR); [ "$$(cat $(KRES_STAMP) 2>/dev/null)" = '$(KRES_NVCC) $(KRES_FLAGS)' ] || echo '$(KRES_NVCC) $(KRES_FLAGS)' > $(KRES_STAMP))
  endif
endif
# the report printed only when nvcc fails (with its errors): a table is made
# of them; the line echoed is short, the command is this one
KRES_NVCC_CMD = @echo "nvcc -arch=$(1) -cubin -Xptxas -v $< > $@"; \
                $(KRES_NVCC) $(KRES_FLAGS) -arch=$(1) -cubin -Xptxas -v -MMD -MP -MT $@ -MF $(@:.log=.d) \
                $< -o $(@:.log=.cubin) > $@.tmp 2>&1 && mv $@.tmp $@ || { cat $@.tmp >&2; rm -f $@.tmp; false; }
$(KRES_DIR)/%.sm_80.log: %.cu $(KRES_STAMP)
	@mkdir -p $(dir $@)
	$(call KRES_NVCC_CMD,sm_80)
$(KRES_DIR)/%.sm_90a.log: %.cu $(KRES_STAMP)
	@mkdir -p $(dir $@)
	$(call KRES_NVCC_CMD,sm_90a)
# Per-kernel registers, spills and static shared memory from ptxas, sm_80 and
# sm_90a (no GPU needed); fails on any spill or > 48 KiB static smem.
cuda-resources: $(KRES_LOG)
	NVCC="$(KRES_NVCC)" dev/gpu_check/cuda_resources.sh $(KRES_LOG)
# The static performance model (dev/notes/perf-model.md): its own tests, then the
# predicted time of every op, the step and MFU on an H200 from ptxas and the
# SASS of $(KRES_DIR)'s sm_90a cubins, and its calibration on the recorded old
# kernels (nvcc, no GPU; python3's standard library only). Without nvcc it
# says so and skips.
cuda-perf-model: $(filter %.sm_90a.log,$(KRES_LOG))
	NVCC="$(KRES_NVCC)" python3 dev/cuda_perf_model.py --self-test
	NVCC="$(KRES_NVCC)" python3 dev/cuda_perf_model.py $(if $(KRES_LOG),--prebuilt $(KRES_DIR))

clean:
	rm -rf build train_gpt tokenize

# ---- Sanitizers and fuzzing (ckpt/, data/, eval/, interop/: the file readers) ----
# `make test-asan`: the CPU code and the suite built with ASan+UBSan in
# build/asan, run once as `make test` runs it (TEST_JOBS at a time, then
# TEST_SERIAL one at a time); the end-to-end tests drive
# build/asan/test/train_gpt.
# Never -Werror (WERROR=: a caller's WERROR=-Werror keeps build/'s flags
# stamp, not this build's): GCC warns falsely under ASan (-Wformat-truncation).
# Sanitizer reports exit 99 so they cannot pass for an expected error exit.
# Leak checking is off: error exits return from main without freeing.
ASAN_DIR := build/asan
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0:exitcode=99 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99 \
  TRAIN_GPT_BIN=$(ASAN_DIR)/test/train_gpt TRAIN_GPT_TOKENIZE_BIN=$(ASAN_DIR)/test/tokenize \
  TRAIN_GPT_PRODUCT_DIR=$(ASAN_DIR) $(TEST_OMP)
# The tests it runs: the whole suite but those tests/asan_skip.txt names,
# each of which runs no product line that the tests left do not
# (dev/asan_subset_check.sh checks that with a coverage build). A test not
# named runs, so a new one runs under ASan until a check shows it need not.
# dev/asan_tests.sh runs them in chunks (Criterion 2.4.1 aborts on a --filter
# of many alternatives), TEST_JOBS at a time, then the TEST_SERIAL ones alone.
# ASAN_ALL=1, or a --filter in TEST_ARGS: as make test runs the suite (all of
# it, or the filter's tests).
ifeq ($(ASAN_ALL)$(findstring --filter,$(TEST_ARGS)),)
asan_suite = $(1) dev/asan_tests.sh $(2) $(TEST_JOBS) '$(TEST_SERIAL)' $(TEST_ARGS)
else
asan_suite = $(run_suite)
endif
.PHONY: test-asan fuzz
test-asan:
	$(MAKE) BUILD=$(ASAN_DIR) SANITIZE="$(SAN_FLAGS)" NVCC= WERROR= $(ASAN_DIR)/train_gpt $(ASAN_DIR)/tokenize \
	  $(ASAN_DIR)/test/train_gpt $(ASAN_DIR)/test/tokenize $(ASAN_DIR)/run_tests
	$(call asan_suite,$(ASAN_ENV),$(ASAN_DIR)/run_tests)

# `make test-tsan-ranks`: ThreadSanitizer over the ranks' runs (dev/notes/tsan-ranks.md):
# the test programs built with -fsanitize=thread in build/tsan, driven through
# mpirun by this build's suite (itself not instrumented), the ZeRO-2/3 and
# offload rank suites by default (TSAN_RANK_TESTS); the runs' --threads 1
# keeps OpenMP (libgomp, not instrumented) to one thread. A report ends the
# rank with status 66 and is written to build/tsan/reports/, printed here;
# dev/tsan-ranks.supp holds the uninstrumented libraries' suppressions. Built
# without WERROR (at -O1 GCC warns maybe-uninitialized where -O3 does not). Not
# part of `make test`.
TSAN_DIR := build/tsan
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -O1
TSAN_RANK_TESTS ?= @(zero2|zero3run|zero3eval|offload_ranks)/*
.PHONY: test-tsan-ranks
test-tsan-ranks: $(BUILD)/run_tests
	$(MAKE) BUILD=$(TSAN_DIR) SANITIZE="$(TSAN_FLAGS)" NVCC= WERROR= $(TSAN_DIR)/test/train_gpt \
	  $(TSAN_DIR)/test/tokenize
	rm -rf $(TSAN_DIR)/reports && mkdir -p $(TSAN_DIR)/reports
	TSAN_OPTIONS="log_path=$(abspath $(TSAN_DIR))/reports/tsan exitcode=66 \
	  suppressions=$(abspath dev/tsan-ranks.supp)" TRAIN_GPT_BIN=$(TSAN_DIR)/test/train_gpt \
	  TRAIN_GPT_TOKENIZE_BIN=$(TSAN_DIR)/test/tokenize TRAIN_GPT_PRODUCT_DIR=. $(TEST_OMP) \
	  $(BUILD)/run_tests --jobs 1 --filter '$(TSAN_RANK_TESTS)'; s=$$?; \
	if ls $(TSAN_DIR)/reports/tsan.* >/dev/null 2>&1; then cat $(TSAN_DIR)/reports/tsan.*; \
	  echo "test-tsan-ranks: ThreadSanitizer reports above" >&2; exit 1; fi; exit $$s

# `make fuzz`: libFuzzer targets (clang; Debian's clang + libclang-rt-dev)
# for every file reader, in build/fuzz/. dev/run_fuzzers.sh runs them.
FUZZ_CC   ?= clang
FUZZ_BASE := -g -O1 -std=gnu11 -D_GNU_SOURCE -I. -fno-sanitize-recover=undefined
FUZZ_FLAGS := $(FUZZ_BASE) -fsanitize=fuzzer,address,undefined
FUZZ_LIB  := data/shard.c data/loader.c data/loader_open.c data/dataset_manifest.c \
             interop/model_file.c model/config.c base/fileio.c base/json.c base/stop.c ckpt/run_state.c \
             ckpt/manifest.c interop/llmc_state.c data/tokenizer.c data/tokenizer_encode.c data/source.c \
             data/tokenizer_build.c data/tokenizer_hf.c data/tokenizer_tiktoken.c \
             data/tokenizer_pieces.c data/tokenizer_scan.c data/tokenizer_utf8.c \
             eval/eval_file.c base/safefile.c data/jsonl_text.c interop/hf_folder.c \
             interop/hf_tokenizer.c interop/hf_folder_read.c
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
# The readers compiled once (fuzzer-no-link: the same coverage instrumentation
# and sanitizers, libFuzzer's main left to the link) and linked into every
# target: the same code and flags as when each target compiled all of them
# itself, which took 8 x 19 clang runs one after another in CI.
FUZZ_OBJ  := $(FUZZ_LIB:%.c=build/fuzz/obj/%.o)
fuzz: $(FUZZ_BIN)
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_BASE) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FUZZ_OBJ) -o $@ -lcjson -lz -lpcre2-8 -lutf8proc -lcrypto -lm
-include $(FUZZ_OBJ:.o=.d)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# `make docs`: docs/flags.md from the binaries' --help (dev/gen_flags_md.sh;
# tests/e2e/tools/test_docs.c fails when the committed page is stale).
.PHONY: docs
docs: $(PROGRAMS)
	dev/gen_flags_md.sh ./train_gpt ./tokenize > docs/flags.md
