# Thin wrapper over CMake/CTest so that a fresh Debian machine needs two commands:
#   make demo   install what is missing, build, run the agent on the bundled demo
#   make test   install what is missing, build with -Werror, run the whole suite
BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test install clean bench fuzz

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DMEMSIGHT_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	@for b in bench/*.sh; do echo "== $$b"; BUILD=$(BUILD) $$b || exit 1; done

clean:
	rm -rf $(BUILD)
