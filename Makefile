# Lagom's front door. `make run` builds and runs the main job on an embedded default;
# `make test` builds and runs the test suite. Both install missing Debian packages first.
.PHONY: all deps deps-notebooks deps-fuzz configure build run test test-slurm test-sanitize fuzz fuzz-smoke figures bench format clean

# Debian 12 packages the build needs (see README "Dependencies").
APT_PACKAGES := cmake ninja-build g++ git make \
  libboost-graph-dev libboost-program-options-dev libeigen3-dev libfmt-dev \
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libprotobuf-dev protobuf-compiler zlib1g-dev

# What the notebooks (notebooks/, run by `make test` and `make figures`) need from Debian.
NOTEBOOK_PACKAGES := jupyter-nbconvert python3-nbclient python3-ipykernel python3-pandas \
  python3-matplotlib

# The fuzz build (clang's libFuzzer runtime).
FUZZ_PACKAGES := clang libclang-rt-14-dev

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LAGOM := build/bin/lagom

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

# $(call install_missing,PACKAGES,FOR): installs those of PACKAGES that are missing (apt-get update
# only when the first try fails, since `make deps` has just updated).
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing Debian packages for $(2):$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing || \
	  { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; }; \
	fi
endef

deps-notebooks:
	$(call install_missing,$(NOTEBOOK_PACKAGES),the notebooks)

deps-fuzz: deps
	$(call install_missing,$(FUZZ_PACKAGES),the fuzzers)

configure: deps
	cmake --preset default

build: configure
	cmake --build --preset default

# The main job: the Lagom paper's default what-if, Llama-3-8B trained with FSDP on the paper's
# cluster A (2 nodes of 8 A40 with NVLink bridges), timed by the collective and compute models
# with contention.
run: build
	$(LAGOM) simulate --model llama3-8b --parallel fsdp=16 --cluster a40-nvlink --nodes 2 \
	  --mbs 1 --gbs 32 --seq 4096

test: build deps-notebooks
	ctest --preset default

# The sweep on a real one-node Slurm cluster (tests/slurm/): installs Slurm from Debian when
# missing (as root), starts and stops its own daemons.
test-slurm: build
	ctest --preset slurm

test-sanitize: deps
	cmake --preset sanitize
	cmake --build --preset sanitize
	ctest --preset sanitize

# The libFuzzer harnesses (fuzz/, docs/RELIABILITY.md), each run FUZZ_SECONDS (default 60);
# FUZZ_TARGETS picks some. `make fuzz-smoke` runs 15 s each (CI runs 10).
FUZZ_SECONDS ?= 60
fuzz: deps-fuzz
	cmake --preset fuzz
	cmake --build --preset fuzz
	fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=15

# The notebooks' figures in docs/figures/ (README and docs show them).
figures: build deps-notebooks
	bash tests/notebooks/run_notebooks.sh $(LAGOM) . docs/figures

bench: build
	build/bin/lagom_bench --benchmark_filter='$(or $(FILTER),.)'

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf build build-sanitize build-fuzz
