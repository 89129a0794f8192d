"""jobhandlers: render, check and test the jobhandlers Helm chart."""

__version__ = "0.3.0"
