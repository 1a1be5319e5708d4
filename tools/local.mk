# tools/local.mk: gpar-info and gpar-bench.
