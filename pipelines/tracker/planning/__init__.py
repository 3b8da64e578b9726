"""The planning layer: saved filters, dashboards, remote links, autoactions, the queries they
hold (`layer.PLANNING`)."""
