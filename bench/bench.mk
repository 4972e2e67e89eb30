# The benchmarks (bench/README.md). Included by the root Makefile, which defines BENCH_MODULE.

.PHONY: bench bench-tools

bench: setup bench-tools ## benchmarks side by side with DuckDB and GoAccess; writes bench/results/latest.json
	$(BIN)/python -m $(BENCH_MODULE)

bench-tools: ## GoAccess, the bench's file -> report baseline (Debian's package, with apt-get as root or sudo)
	@tests/tools/apt-install.sh goaccess goaccess \
	  "goaccess could not be installed: the bench reports its figure as not measured"
