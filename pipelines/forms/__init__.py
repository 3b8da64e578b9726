"""Forms as a service (`service.py`, a source only): surveys, answers and files extracted;
other services' back-fills read them through `staged`."""
