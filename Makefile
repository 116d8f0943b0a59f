# qlm - build, fetch the default model, test.
#   make        build ./qlm (installs missing Debian packages when root)
#   make run    build, fetch the default model, answer a sample prompt
#   make test   unit and integration tests; ends with "N passed, N failed"
#   make conformance   slow checks against llama.cpp fixtures on real models
#   make test-asan     the test suite built with AddressSanitizer + UBSan
#   make test-tsan     the test suite built with ThreadSanitizer (clang, libomp)
#   make test-neon     quant/'s tests cross-built for aarch64, run under qemu
#   make fuzz-smoke    each libFuzzer target for FUZZ_SECONDS (clang)

CC      ?= gcc
OPT     ?= -O2
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -D_GNU_SOURCE -fopenmp -MMD -MP -I. $(SAN)
LDLIBS  += -fopenmp -lhwloc -lxxhash -lm $(SAN)
BUILD   ?= build
DEB_PKGS = libopenblas-dev libhwloc-dev libxxhash-dev libgomp1

# Every .c under the layers is part of the library except the CLI entry.
LIB_SRC  = $(wildcard quant/*.c ggml-lite/*.c src/*.c tools/*.c)
LIB_SRC := $(filter-out tools/qlm.c,$(LIB_SRC))
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB      = $(BUILD)/libqlm.a
TEST_SRC = $(wildcard tests/test_*.c)
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

DEFAULT_MODEL = models/SmolLM2-135M-Instruct.Q4_1.gguf

.PHONY: all setup run model test test-asan test-tsan test-neon conformance fuzz-build fuzz-smoke fuzz-afl check-layers clean
all: qlm

# Only quant's ISA files get -m flags; each is compiled for its own ISA and
# chosen at run time, so one build runs on any x86-64 CPU.  Elsewhere those
# files compile to nothing and get no x86 flags.  No -mavx512vnni/-mavxvnni:
# the VNNI kernels issue vpdpbusd themselves, so the compiler can never put
# it in the plain sets.
ifneq ($(filter x86_64-%,$(shell $(CC) -dumpmachine)),)
$(BUILD)/quant/x86_avx2.o:   ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx512.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx2_k.o:   ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx512_k.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_f32.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
$(BUILD)/quant/x86_avx2_repack.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_repack_k.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_wide.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_x16_dot.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_f32.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_fgemm.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx512_repack.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_x16_dot.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_x16_k.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_repack_k.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx2_tiled.o: ISAFLAGS = -mavx2 -mfma
$(BUILD)/quant/x86_avx2_tile_q8.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_tiles_i16.o: ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx2_kv.o:   ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx512_kv.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_tinyblas.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_fgemm.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_avx512_tiled.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/quant/x86_amx_k.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -mamx-tile -mamx-int8 -mprfchw
endif
# Baseline aarch64 has NEON; only the sdot set needs (and gets) Armv8.2.
ifneq ($(filter aarch64-%,$(shell $(CC) -dumpmachine)),)
$(BUILD)/quant/arm_neon_dotprod.o: ISAFLAGS = -march=armv8.2-a+dotprod
endif

$(BUILD)/%.o: %.c | setup
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ISAFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

qlm: $(BUILD)/tools/qlm.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIB) | setup
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MF $@.d -o $@ $< $(LIB) $(LDLIBS)

# Installs what the build needs when run as root; otherwise says what to run.
setup:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "qlm needs Debian packages:$$missing"; \
	    echo "run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

model: $(DEFAULT_MODEL)
$(DEFAULT_MODEL):
	sh tools/fetch_model.sh smollm2 models

# The default model is an instruct model: --chat renders the prompt with
# the chat template stored in the GGUF.
run: qlm $(DEFAULT_MODEL)
	./qlm run -m $(DEFAULT_MODEL) --chat -n 128 --temp 0 -p "Write one sentence about the sea."
	@echo

test: qlm $(TEST_BIN)
	@sh tests/run.sh $(BUILD)

Q4_0_MODEL = models/SmolLM2-135M-Instruct.Q4_0.gguf
$(Q4_0_MODEL): $(DEFAULT_MODEL) qlm
	./qlm quantize $(DEFAULT_MODEL) $@ q4_0

# Requants: llama.cpp's repacked, tiled and vec_dot orders (quant/repack.h, tiled.h).
K_MODELS = $(foreach t,Q4_K_M Q5_K_M Q6_K Q2_K Q8_0,models/SmolLM2-135M-Instruct.$(t).gguf)
$(K_MODELS): models/SmolLM2-135M-Instruct.%.gguf: $(DEFAULT_MODEL) qlm
	./qlm quantize $(DEFAULT_MODEL) $@ $*

# Models of other families live in a cache outside the repository.
MODEL_CACHE ?= $(HOME)/.cache/qlm/models
GEMMA3_MODEL = $(MODEL_CACHE)/gemma-3-270m-q4_k_m.gguf
DEEPSEEK_VOCAB = $(MODEL_CACHE)/deepseek-r1-distill-qwen-7b.vocab.gguf
$(GEMMA3_MODEL):
	sh tools/fetch_model.sh gemma3 $(MODEL_CACHE)
$(DEEPSEEK_VOCAB):
	sh tools/fetch_model.sh deepseek-vocab $(MODEL_CACHE)
# Families without real weights here: random-weight models, same bytes on
# every machine (the fixtures' headers give their SHA-256).
SYNTH_MODELS = $(MODEL_CACHE)/synth-qwen2.gguf $(MODEL_CACHE)/synth-mistral.gguf $(MODEL_CACHE)/synth-phi3.gguf
$(MODEL_CACHE)/synth-qwen2.gguf: qlm
	@mkdir -p $(MODEL_CACHE)
	./qlm synth qwen2 tests/data/vocab/ggml-vocab-synth-qwen2.gguf $@
$(MODEL_CACHE)/synth-mistral.gguf: qlm
	@mkdir -p $(MODEL_CACHE)
	./qlm synth mistral tests/data/vocab/ggml-vocab-llama-spm.gguf $@
$(MODEL_CACHE)/synth-phi3.gguf: qlm
	@mkdir -p $(MODEL_CACHE)
	./qlm synth phi3 tests/data/vocab/ggml-vocab-phi-3.gguf $@

conformance: qlm $(TEST_BIN) $(DEFAULT_MODEL) $(Q4_0_MODEL) $(K_MODELS) $(GEMMA3_MODEL) $(DEEPSEEK_VOCAB) $(SYNTH_MODELS)
	@QLM_CONFORMANCE=1 QLM_MODEL_CACHE=$(MODEL_CACHE) sh tests/run.sh $(BUILD)

# The same suite under AddressSanitizer and UBSan, in its own build tree;
# the shell tests run the sanitized ./qlm through $QLM.
ASAN_FLAGS = -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="$(ASAN_FLAGS)" build-asan/qlm-asan \
	    $(TEST_SRC:tests/%.c=build-asan/tests/%)
	@ASAN_OPTIONS=detect_leaks=1 QLM=build-asan/qlm-asan sh tests/run.sh build-asan

$(BUILD)/qlm-asan: $(BUILD)/tools/qlm.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The suite again under ThreadSanitizer, for the OpenMP paths (matmul,
# attention, activation quantization).  Built with clang, whose OpenMP
# runtime (libomp) reports its own synchronisation to TSan through the
# archer tool, so only real races in qlm are reported.
TSAN_FLAGS = -fsanitize=thread -fno-omit-frame-pointer
ARCHER ?= $(firstword $(wildcard /usr/lib/llvm-*/lib/libarcher.so))
test-tsan:
	@test -n "$(ARCHER)" || { echo "test-tsan needs libomp-dev (libarcher.so)"; exit 1; }
	$(MAKE) BUILD=build-tsan CC=clang OPT=-O1 SAN="$(TSAN_FLAGS)" build-tsan/qlm-tsan \
	    $(TEST_SRC:tests/%.c=build-tsan/tests/%)
	@OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 exitcode=66 ignore_noninstrumented_modules=1" \
	    QLM=build-tsan/qlm-tsan sh tests/run.sh build-tsan

$(BUILD)/qlm-tsan: $(BUILD)/tools/qlm.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# quant/ and the tests that need only it, cross-built for aarch64 (static;
# no OpenMP, hwloc or xxhash, which quant/ does not use) and run under
# qemu-aarch64 on a CPU with dotprod and on one without, so both NEON sets
# are checked against the reference.  Needs gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross and qemu-user.  No loop vectorizer: Debian's
# aarch64 GCC 12 crashes on tests/test_quant.c with it (the NEON kernels
# are intrinsics and do not need it).
NEON_TESTS = test_kernels test_quant test_f32ops
NEON_CFLAGS = -std=c11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -MMD -MP -I. -fno-tree-loop-vectorize
test-neon:
	$(MAKE) BUILD=build-aarch64 CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar DEB_PKGS= \
	    CFLAGS="$(NEON_CFLAGS)" LDLIBS="-static -pthread -lm" LIB_SRC="$(wildcard quant/*.c)" \
	    $(NEON_TESTS:%=build-aarch64/tests/%)
	@sh tests/run_qemu.sh build-aarch64 "max:neon-dotprod cortex-a53:neon" $(NEON_TESTS)

# The same fuzz targets built for AFL++ (Debian's afl++): afl-clang-fast
# links their libFuzzer-style entry point to its own driver.  Run one with
#   afl-fuzz -i tests/fuzz/corpus/gguf -o build-afl/out-gguf -- build-afl/fuzz_gguf
fuzz-afl:
	$(MAKE) BUILD=build-afl CC=afl-clang-fast OPT=-O1 SAN="$(FUZZ_SAN)" build-afl/libqlm.a
	for t in $(FUZZ_TARGETS); do \
	  afl-clang-fast -std=c11 -O1 -g -D_GNU_SOURCE -I. -fopenmp -fsanitize=fuzzer $(FUZZ_SAN) \
	    tests/fuzz/fuzz_$$t.c build-afl/libqlm.a -lhwloc -lxxhash -lm -o build-afl/fuzz_$$t || exit 1; \
	done

# libFuzzer targets (tests/fuzz/fuzz_*.c) over a clang-built library; the
# smoke run starts from the committed seeds and keeps its corpus in
# build-fuzz/, so repeated runs accumulate.  CI's run is reproducible
# (fixed seed, fixed number of runs, from the seeds alone); for real fuzzing
# pass FUZZ_SEED=0 (random) and a large FUZZ_SECONDS and FUZZ_RUNS.
FUZZ_SECONDS ?= 20
FUZZ_RUNS ?= 150000
FUZZ_SEED ?= 1
# clang's ASan+UBSan+coverage instrumentation of the big unrolled SIMD
# kernels takes tens of minutes per file (x86_avx512_repack_k.c: over 15);
# the fuzz builds leave quant's x86 kernel files uninstrumented (they are
# what test-asan and the kernel tests check; fuzzing aims at the parsers).
ifneq ($(filter build-fuzz build-afl,$(BUILD)),)
$(BUILD)/quant/x86_%.o: override SAN :=
endif
FUZZ_TARGETS = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz-build:
	$(MAKE) BUILD=build-fuzz CC=clang OPT=-O1 SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" build-fuzz/libqlm.a
	for t in $(FUZZ_TARGETS); do \
	  clang -std=c11 -O1 -g -D_GNU_SOURCE -I. -fopenmp -fsanitize=fuzzer $(FUZZ_SAN) \
	    tests/fuzz/fuzz_$$t.c build-fuzz/libqlm.a -lhwloc -lxxhash -lm -o build-fuzz/fuzz_$$t || exit 1; \
	done

fuzz-smoke: fuzz-build
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus-$$t; \
	  build-fuzz/fuzz_$$t -seed=$(FUZZ_SEED) -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build-fuzz/corpus-$$t tests/fuzz/corpus/$$t 2>build-fuzz/fuzz_$$t.log || \
	    { tail -40 build-fuzz/fuzz_$$t.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units|cov:' build-fuzz/fuzz_$$t.log | tail -2; \
	done

# Includes point down only: tools -> src -> ggml-lite -> quant.
check-layers:
	@sh tools/check_layers.sh

clean:
	rm -rf $(BUILD) qlm

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
