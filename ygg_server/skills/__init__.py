"""Skills in the open Agent Skills format (seed 003 §43-45): parsed and checked here (`format.py`), the
platform's own bundled in `platform/`, stored and resolved in layers by `ops/skills.py`."""
