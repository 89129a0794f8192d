"""Helpers for the kind scenario tests and `bench/kind_bench.py`: cluster access, helm,
pod timelines, the external PostgreSQL, the reference workload's API and failure dumps."""
