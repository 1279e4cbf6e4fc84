# trnemu: the two set-up commands of the README, and a few conveniences.
#   make run    install what is missing, build, run the main demo
#   make test   install what is missing, build, run the whole test suite
BUILD      ?= build
BUILD_SAN  ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
# The project's own builds treat warnings as errors; a user's plain
# `meson setup` does not (a newer compiler's new warning must not break an
# install).
MESON_OPTS ?=
MESON_DEV  := -Dwerror=true $(MESON_OPTS)

.PHONY: all setup build run test test-fast test-asan test-tsan test-fuzz bench clean

all: build

setup:
	@sh scripts/setup.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_DEV)

build: setup $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	$(BUILD)/tools/trnemu ls
	$(BUILD)/tools/trnemu exec -- $(BUILD)/examples/tensor_demo
	$(BUILD)/tools/trnemu exec -- $(BUILD)/examples/kernel_demo $(BUILD)/examples/softmax.neff
	$(BUILD)/tools/trnemu launch -n 4 -- $(BUILD)/examples/dp_train

# The whole suite: the normal build, then ASan+UBSan, then TSan on the
# threaded tests, then a clang build that fuzzes each parser for 30 s.
test: build test-fast test-asan test-tsan test-fuzz

test-fast: build
	meson test -C $(BUILD) --print-errorlogs --no-suite bench

$(BUILD_SAN)/build.ninja:
	meson setup $(BUILD_SAN) -Dsanitize=address,undefined $(MESON_DEV)

test-asan: setup $(BUILD_SAN)/build.ninja
	ninja -C $(BUILD_SAN)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  meson test -C $(BUILD_SAN) --print-errorlogs --no-suite bench

$(BUILD_TSAN)/build.ninja:
	meson setup $(BUILD_TSAN) -Dsanitize=thread $(MESON_DEV)

test-tsan: setup $(BUILD_TSAN)/build.ninja
	ninja -C $(BUILD_TSAN)
	TSAN_OPTIONS=halt_on_error=1 meson test -C $(BUILD_TSAN) --print-errorlogs --suite threads

$(BUILD_FUZZ)/build.ninja:
	CC=clang meson setup $(BUILD_FUZZ) -Dfuzz=true $(MESON_DEV)

test-fuzz: setup $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD_FUZZ)
	meson test -C $(BUILD_FUZZ) --print-errorlogs --suite fuzz

bench: build
	meson test -C $(BUILD) --suite bench --verbose --timeout-multiplier 4

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_TSAN) $(BUILD_FUZZ)
