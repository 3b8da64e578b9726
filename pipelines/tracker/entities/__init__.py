"""The entities layer: projects, portfolios, goals and what hangs off them
(`layer.ENTITIES`)."""
