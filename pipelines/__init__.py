"""The stages and the services: what haul does with the connectors and the staging store.

The shared engine (`streams` for extract, `engine` and `specs` for load, `runner` composing
them into commands, `cli` on top) names no service; each service is a package of its own
(`tracker/`: its streams, entity specs, probes and transform) listed in `services`.
"""
