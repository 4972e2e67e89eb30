"""logberg's benchmark harness: `make bench` (`python -m bench`). See bench/README.md."""
