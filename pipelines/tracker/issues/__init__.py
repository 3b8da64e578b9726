"""The issues layer: issues, comments, worklogs, attachments, checklists, links; their scroll,
drain, specs, fingerprints, verify, plan, export (`layer.ISSUES`)."""
