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
  libssl-dev libhypre-dev libhwy-dev
PY_PACKAGES := numpy h5py matplotlib yt pytest sphinx myst-parser pynucastro==3.1.0

.PHONY: all deps deps-apt deps-py configure build run run-binaries test test-arm docs bench tier-study studies study-hugepages study-tiers study-v2d study-async study-scaling study-weak study-scale-model bench-units format clean helm-table nse-table

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

run-binaries: configure
	cmake --build build -j$(NPROC) --target tessera

# make run builds what the run needs: the tessera executable and the tables its problem
# names (not the unit tests and benchmarks, which make test builds).
# The project's Python environment is installed while the executable compiles (pip waits
# on the network and the disk, the compiler on the processor: 41 s of a fresh 5 min 19 s).
run: deps-apt configure
	@$(MAKE) --no-print-directory -j2 deps-py run-binaries
	@if grep -q '"helmholtz"' $(PROBLEM); then cmake --build build --target helm_table; fi
	@if grep -q '"three_stage"' $(PROBLEM); then cmake --build build --target nse_table; fi
	@mkdir -p $(RUNDIR)
	$(MPIRUN) -n $(RANKS) build/bin/tessera run $(PROBLEM) --dir $(RUNDIR)
	PYTHONPATH=python $(PY) -m tessera plot $(RUNDIR) --out $(RUNDIR)/density_slice.png --log
	@echo "outputs:       $(RUNDIR)/"
	@echo "summary:       $(RUNDIR)/summary.json"
	@echo "history:       $(RUNDIR)/history.csv (step, time, dt, leaves, zone-updates/s)"
	@echo "picture:       $(RUNDIR)/density_slice.png (density slice, block levels, leaves and rate over the run)"
	@echo "parameters:    $(RUNDIR)/parameters.log (every parameter in effect and where it came from)"

test: deps build
	cmake --build build --target helm_table nse_table
	cd build && ctest --output-on-failure -j$(NPROC)

# The Highway hydro and PIC kernels, the level set's WENO5 rows, the Helmholtz EOS kernels,
# and their unit tests cross-built for aarch64 and run under qemu-user with 512-bit SVE
# (SVE2, SVE, NEON, scalar): tools/arm/test_arm.sh (the Helmholtz tests read the table this machine's build
# generates). It installs g++-aarch64-linux-gnu and qemu-user and unpacks Debian's arm64
# libhwy, libgtest and libssl into build-arm/sysroot. Not part of make test (see
# docs/memory.md).
test-arm: helm-table
	tools/arm/test_arm.sh build-arm build/helm_table.dat

# The documentation site (docs/ + pages generated from the code) into build/docs/html,
# Sphinx warnings as errors (tools/gen_docs.py); make test builds it too (ctest -R docs).
docs: deps build
	$(PY) tools/gen_docs.py --exe build/bin/tessera --out build/docs --write-map

# The studies as commands (tools/study.py): each writes a CSV, a PNG and report.md into
# runs/studies/<name>/, stating the machine and what was unavailable or emulated.
STUDY_REPEAT ?= 5
STUDY_STEPS ?= 40
studies: deps-py
	@$(PY) tools/study.py list

study-hugepages: deps build helm-table
	$(PY) tools/study.py hugepages --out runs/studies/hugepages --repeat $(STUDY_REPEAT) --steps $(STUDY_STEPS)

study-tiers:
	$(MAKE) tier-study TIER_OUT=runs/studies/tiers

study-v2d: deps build
	$(PY) tools/study.py v2d --out runs/studies/v2d --repeat 3

# The Ookami strong-scaling figure: snia_3d restarted from one checkpoint on 1, 2, 4, ...
# ranks up to the machine's cores (tools/study.py scaling).
study-scaling: deps build helm-table nse-table
	$(PY) tools/study.py scaling --out runs/studies/scaling --repeat $(STUDY_REPEAT)

# Weak scaling by census (issue 46): 1..64 oversubscribed ranks; counts, not times.
study-weak: deps build helm-table nse-table
	$(PY) tools/study.py weak --out runs/studies/weak --ranks 64

# A model of the step at 1..1e5 ranks from study-weak's census (issue 46).
study-scale-model: deps
	@test -d runs/studies/weak/runs || $(MAKE) study-weak
	$(PY) tools/study.py scale-model --out runs/studies/scale-model

study-async: deps build
	$(PY) tools/study.py async --out runs/studies/async --repeat 3

# The Helmholtz EOS table (build/helm_table.dat), generated from first principles.
helm-table: configure
	cmake --build build --target helm_table

# The NSE table of the three-stage Type Ia burn (build/nse_table.dat): NSE of 96 nuclides
# on a (rho, T, Ye) grid from pynucastro's nuclear data and weak rates
# (tools/nse_table/make_nse_table.py; about 30 s).
nse-table: deps-py configure
	cmake --build build --target nse_table

bench: deps build
	$(PY) bench/throughput.py

# Every unit's speed beside the hydro's one-stage rate, measured in the same repeats (issue 49).
bench-units: deps build helm-table nse-table
	$(PY) bench/units.py --out runs/studies/units --repeat 5

# The WarpX-PM placement study (issue 12; README "The WarpX-PM study"): pic_uniform_3d at
# 32^3 cells in 64 blocks of 8^3, 27 particles per cell (884,736 electrons: about 67 MB of
# particles against 14 MB of fields), a fast tier of TIER_FAST bytes, every placement,
# REPEAT runs trimmed by TRIM, ratios to slow_only, a per-phase table and phases.png. On
# a one-node machine the slow tier is EMULATED at one core's share of the study's Optane
# socket (39/24 GB/s read, 13/24 GB/s write, 304 ns). TIER_FAST=18M holds the fields and
# dynamic's three batches; TIER_FAST=8M holds neither (the fields then stay slow).
TIER_FAST ?= 18M
TIER_BACKEND ?= emulated
TIER_RANKS ?= 1
TIER_OUT ?= runs/tier_study
REPEAT ?= 7
TRIM ?= 1
tier-study: deps build
	$(PY) -m tessera bench problems/pic_uniform_3d.toml --out $(TIER_OUT) \
	  --vary memory.tier.placement=slow_only,first_touch,static,static_prefetch,dynamic,fast_only \
	  --baseline memory.tier.placement=slow_only --repeat $(REPEAT) --trim $(TRIM) --ranks $(TIER_RANKS) \
	  --phases pic/gather,pic/push,pic/deposit,pic/field_solve,pic/redistribute,pic/stream \
	  --set memory.tier.backend=$(TIER_BACKEND) --set memory.tier.fast_bytes=$(TIER_FAST) \
	  --set memory.tier.slow_read_bw=1.625e9 --set memory.tier.slow_write_bw=0.54e9 \
	  --set mesh.nblockx=4 --set mesh.nblocky=4 --set mesh.nblockz=4 --set pic.particles_per_cell=27 \
	  --set mesh.xmax=1.088e-5 --set mesh.ymax=1.088e-5 --set mesh.zmax=1.088e-5 \
	  --set mesh.maxblocks=64 --set driver.nend=10 --set io.write_initial=false \
	  --set io.write_final=false --set io.plotfile_interval_steps=0 --set io.checkpoint_interval_steps=0

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf build
