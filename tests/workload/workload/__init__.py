"""Reference workload for the jobhandlers chart (see tests/workload/README.md)."""

__version__ = "0.1.0"
