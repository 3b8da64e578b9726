"""Deterministic organisations from ``(seed, size)``: the source, the target and a fresh
"empty" one (:mod:`generate`); each generated issue's sub-records (:mod:`records`) and
structure values (:mod:`seed_values`), drawn on first access from the issue's own RNG, in
realistic text (:mod:`text`); the organisation's structure (:mod:`seed_structure`) and
planning layer (:mod:`seed_planning`)."""
