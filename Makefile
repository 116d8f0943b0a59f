# qlm - build, fetch the default model, test.
#   make        build ./qlm (installs missing Debian packages when root)
#   make run    build, fetch the default model, answer a sample prompt
#   make test   unit and integration tests; ends with "N passed, N failed"
#   make conformance   slow checks against llama.cpp fixtures on real models

CC      ?= gcc
OPT     ?= -O2
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -D_GNU_SOURCE -fopenmp -MMD -MP -I.
LDLIBS  += -fopenmp -lhwloc -lxxhash -lm
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

.PHONY: all setup run model test conformance check-layers clean
all: qlm

# Only quant's ISA files get -m flags; each is compiled for its own ISA and
# chosen at run time, so one build runs on any x86-64 CPU.  Elsewhere those
# files compile to nothing and get no x86 flags.  No -mavx512vnni/-mavxvnni:
# the VNNI kernels issue vpdpbusd themselves, so the compiler can never put
# it in the plain sets.
ifneq ($(filter x86_64-%,$(shell $(CC) -dumpmachine)),)
$(BUILD)/quant/x86_avx2.o:   ISAFLAGS = -mavx2 -mfma -mf16c
$(BUILD)/quant/x86_avx512.o: ISAFLAGS = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
endif

$(BUILD)/%.o: %.c | setup
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ISAFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

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

run: qlm $(DEFAULT_MODEL)
	./qlm run -m $(DEFAULT_MODEL) -n 64 --temp 0 -p "Write one sentence about the sea."

test: qlm $(TEST_BIN)
	@sh tests/run.sh $(BUILD)

conformance: qlm $(TEST_BIN) $(DEFAULT_MODEL)
	@QLM_CONFORMANCE=1 sh tests/run.sh $(BUILD)

# Includes point down only: tools -> src -> ggml-lite -> quant.
check-layers:
	@sh tools/check_layers.sh

clean:
	rm -rf $(BUILD) qlm

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
