# age2048 — the targets mirror CI (.ci/run runs `make lint test`).
#
#   make solve report   solve the default boards and render every figure into reports/
#   make test           the test suite (solves 2x2 … 3x3 and checks them), then the browser tests
#   make serve          the web app over data/ at http://127.0.0.1:8048/
#   make bench          time the solver against the reference solver; results in reports/bench/

BOARDS   ?= 2x2 2x3 2x4 3x3
VARIANTS ?= expectation,optimistic,pessimistic
# Goal and guaranteed-reachability variants (small solves: boards holding T are absorbing).
GOALS    ?= goal-16,goal-32,guaranteed-8,guaranteed-16
# The papers' goal tables: 3x3 as Galebach (2014), and 2x4 (what each step of `make solve`
# takes: reports/bench/fresh.md).
GOALS_3x3 ?= goal-256,goal-512,goal-1024
GOALS_2x4 ?= goal-128,goal-256,goal-512
DATA     ?= data
OUT      ?= reports
CARGO    ?= cargo
# One build cache outside the clone, shared by every checkout and by CI.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/age2048/target
# DuckDB arrives as its official prebuilt library (fetched once, pinned by SHA-256; see
# scripts/duckdb.sh); where none fits this OS/CPU the build compiles it (feature `bundled`).
DUCKDB_ROOT ?= $(HOME)/.cache/age2048/duckdb
# Evaluated once (`:=`): the script fetches, or says once why it cannot.
ifeq ($(origin DUCKDB_LIB_DIR),undefined)
DUCKDB_LIB_DIR := $(shell scripts/duckdb.sh $(DUCKDB_ROOT))
endif
export DUCKDB_LIB_DIR
ifeq ($(strip $(DUCKDB_LIB_DIR)),)
FEATURES ?= --features bundled
endif
BIN      := $(CARGO_TARGET_DIR)/debug/age2048
# The tests and the lints also build the solve over several processes (feature `mpi`), whose
# Open MPI and libclang scripts/mpi.sh installs where missing; `make build` and `make solve`
# need no MPI.
MPI_FEATURES ?= --features mpi

.PHONY: all build solve report test browser-test serve lint fmt bench clean

all: build

build:
	$(CARGO) build $(FEATURES) --bin age2048

solve: build
	@for b in $(BOARDS); do \
	  echo "== solve $$b ($(VARIANTS))"; \
	  $(BIN) solve --board $$b --data $(DATA) --variant $(VARIANTS) || exit $$?; \
	  $(BIN) solve --board $$b --data $(DATA) --variant $(GOALS) --quiet || exit $$?; \
	  case $$b in 3x3) g="$(GOALS_3x3)";; 2x4) g="$(GOALS_2x4)";; *) g="";; esac; \
	  if [ -n "$$g" ]; then $(BIN) solve --board $$b --data $(DATA) --variant $$g --quiet || exit $$?; fi; \
	done
	$(BIN) guaranteed --board 1x2,1x3,1x4,2x2,2x3,2x4,3x3
	@mkdir -p $(OUT)
	OUT=$(OUT)/slizkov-a1.tsv BOARDS='^(2x4|3x3)$$' bash benches/slizkov_a1.sh $(BIN) >/dev/null

report: build
	$(BIN) report --data $(DATA) --out $(OUT)
	DEST=$(OUT)/slizkov.md FRESH=$(OUT)/slizkov-a1.tsv bash benches/slizkov_tables.sh

# The tests write their solves and scratch files on a tmpfs where one has room
# (scripts/test-tmpdir.sh; else under the build cache), removed once every test passed.
ifeq ($(origin TEST_TMPDIR),undefined)
TEST_TMPDIR := $(shell scripts/test-tmpdir.sh)
endif
TEST_ENV := $(if $(TEST_TMPDIR),AGE2048_TEST_TMPDIR=$(TEST_TMPDIR) TMPDIR=$(TEST_TMPDIR))

# Chromium and the browser tests' npm packages install (where missing) while cargo builds and
# runs the tests; their log is shown if the install fails.
test:
	scripts/mpi.sh
	@mkdir -p $(CARGO_TARGET_DIR) $(TEST_TMPDIR)
	scripts/browser-test.sh --install > $(CARGO_TARGET_DIR)/browser-install.log 2>&1 & inst=$$!; \
	$(TEST_ENV) $(CARGO) test $(FEATURES) $(MPI_FEATURES); st=$$?; \
	wait $$inst || { cat $(CARGO_TARGET_DIR)/browser-install.log; exit 1; }; \
	exit $$st
	$(TEST_ENV) scripts/browser-test.sh $(BIN)
	$(if $(TEST_TMPDIR),rm -rf $(TEST_TMPDIR))

# The web app in headless Chromium (installs Debian's chromium and the npm lockfile's
# packages where missing); screenshots of Play and Analyse land in $(CARGO_TARGET_DIR)/browser/screenshots.
browser-test: build
	scripts/browser-test.sh $(BIN)

serve: build
	$(BIN) serve --data $(DATA) --reports $(OUT)

# Open MPI and libclang install (where missing) while the lint without `mpi` runs.
lint:
	@mkdir -p $(CARGO_TARGET_DIR)
	scripts/mpi.sh > $(CARGO_TARGET_DIR)/mpi-install.log 2>&1 & inst=$$!; \
	$(CARGO) fmt --all -- --check && $(CARGO) clippy $(FEATURES) --all-targets -- -D warnings; st=$$?; \
	wait $$inst || { cat $(CARGO_TARGET_DIR)/mpi-install.log; exit 1; }; \
	exit $$st
	$(CARGO) clippy $(FEATURES) $(MPI_FEATURES) --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Benchmarks run the release build without the reporting layer (no DuckDB to link): whole
# solves side by side with ../shared/reference (reports/bench/solve.md), then micro-benchmarks.
bench:
	bash benches/solve.sh
	bash benches/layouts.sh 3 "3x3 goal-1024"
	$(CARGO) bench --no-default-features --bench index --bench solver

clean:
	rm -rf $(DATA)

# Slizkov's appendices A.1 (guaranteed reachability under caps), A.2 and A.3 (the chance of the
# goal under caps, in floats and proved in integers) row by row and his Figure 3 (the largest
# tile guaranteed on each board), his results beside ours: reports/slizkov/a1.tsv, a2.tsv and
# fig3.tsv, rendered as the tables of reports/slizkov/README.md. Long: every row is a solve of
# up to ROW_CPU CPU seconds.
.PHONY: slizkov
slizkov: build
	bash benches/slizkov_a1.sh $(BIN)
	bash benches/slizkov_fig3.sh $(BIN)
	bash benches/slizkov_a2.sh $(BIN)
	bash benches/slizkov_tables.sh
