"""Limits shared by the parent (:mod:`papers.cirbench.equiv`) and the sandboxed worker (:mod:`papers.cirbench._worker`).

The formal layer's deciding budget is a z3 resource limit, ``RLIMIT_PER_MS`` units per millisecond of the
nominal time-out: measured on the project's machines (a 64-bit factoring query spends about 3e6 units per
second of z3 time), so that the budget of a ``timeout_ms`` check stops a query after roughly that long on an
idle machine, and at the same point however busy the machine is. The wall clock, ``FORMAL_WALL_FACTOR`` times
the nominal time-out, only guards against a stuck solver.
"""
RLIMIT_PER_MS = 3000
FORMAL_WALL_FACTOR = 30
