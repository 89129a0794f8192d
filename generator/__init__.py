"""jobhandlers: render, check and test the jobhandlers Helm chart."""

__version__ = "0.1.0"
