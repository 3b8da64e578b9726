"""The sandbox wiki: pages, attachments and upload sessions, grids, comments (see app.py)."""
