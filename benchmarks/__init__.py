"""Benchmarks that live outside the memory-core package (run from the repository root)."""
