"""`jobhandlers check`, by path (nothing is imported here, so the fast path stays light):

- fast.py: the fast path, no helm: clean files answered from the libyaml reader
  (values/fast.py) and the precomputed chart data (charts/_cache.py); None for anything else;
- full.py: the full path: values with positions (values/full.py), jsonschema, the rules;
- rendered.py: `--render`: helm template + kubernetes-validate, findings placed in the file;
- server.py: `--server`: the rendered objects as a server-side dry run on the user's cluster.
"""
