"""Values files, read and merged (nothing is imported here, so the fast path stays light):

- file.py: ValuesFile (data + positions) and the size limits every reader enforces;
- fast.py: the fast reader (libyaml, no positions; `Unsure` for anything it will not decide);
- full.py: the full reader (ruamel round-trip, YAML 1.1 like helm, input errors as findings);
- positions.py: where a key path is in a round-trip document;
- merge.py: helm's coalescing over the chart defaults.

Imports go one way: full → positions, file; file → positions (lazily); merge → full (lazily).
"""
