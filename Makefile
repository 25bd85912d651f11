# Tessera: the two commands a new user needs are `make run` and `make test`.
# Each installs what is missing (Debian packages, the project-local .venv), configures,
# builds and then runs or tests. `make build` only builds.

SHELL := /bin/bash
NPROC ?= $(shell nproc)
RANKS ?= 2
PROBLEM ?= problems/sedov_3d.toml
RUNDIR ?= runs/$(basename $(notdir $(PROBLEM)))
PRESET := $(if $(CI),ci,release)
MPIRUN := mpirun --oversubscribe --allow-run-as-root
PY := .venv/bin/python

DEB_PACKAGES := build-essential cmake pkg-config openmpi-bin libopenmpi-dev \
  libhdf5-openmpi-dev hdf5-tools libfmt-dev libcli11-dev libtomlplusplus-dev \
  nlohmann-json3-dev libgtest-dev clang-format libpapi-dev papi-tools libnuma-dev zlib1g-dev \
  libssl-dev
PY_PACKAGES := numpy h5py matplotlib yt pytest

.PHONY: all deps deps-apt deps-py configure build run test bench format clean helm-table

all: build

deps: deps-apt deps-py

deps-apt:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

.venv/.installed: Makefile python/pyproject.toml
	@test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PY_PACKAGES)
	$(PY) -m pip install -q -e python
	@touch $@

deps-py: .venv/.installed

configure: deps-apt
	@test -f build/CMakeCache.txt || cmake --preset $(PRESET) >/dev/null

build: configure
	cmake --build build -j$(NPROC)

run: deps build
	@mkdir -p $(RUNDIR)
	@if grep -q '"helmholtz"' $(PROBLEM); then cmake --build build --target helm_table; fi
	$(MPIRUN) -n $(RANKS) build/bin/tessera run $(PROBLEM) --dir $(RUNDIR)
	PYTHONPATH=python $(PY) -m tessera plot $(RUNDIR) --out $(RUNDIR)/density_slice.png --log
	@echo "outputs:       $(RUNDIR)/"
	@echo "summary:       $(RUNDIR)/summary.json"
	@echo "history:       $(RUNDIR)/history.csv (step, time, dt, leaves, zone-updates/s)"
	@echo "picture:       $(RUNDIR)/density_slice.png (density slice, block levels, leaves and rate over the run)"

test: deps build
	cmake --build build --target helm_table
	cd build && ctest --output-on-failure -j1

# The Helmholtz EOS table (build/helm_table.dat), generated from first principles.
helm-table: configure
	cmake --build build --target helm_table

bench: deps build
	$(PY) bench/throughput.py

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf build
