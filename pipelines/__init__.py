"""The stages and the services: what haul does with the connectors and the staging store.

The shared engine (`streams` for extract, `engine` and `specs` for load, `runner` composing
them into commands, `check`, `plan`, `verify`, `status`, the reports and `export/`, with `cli`
on top) names no service. Each service is a package of its own (`tracker/`, `wiki/`, `forms/`)
whose `service.py` is its one plug-in point (`services.Service`); `registry` lists them.
"""
