"""Rendering with the real helm (the full path; check's fast path never imports it):

- helm.py: the single helm helper (argv, run, parse); generated suites import it as
  `from jobhandlers import helm`;
- matrix.py: `jobhandlers render`: every example × kube version into rendered/.
"""
