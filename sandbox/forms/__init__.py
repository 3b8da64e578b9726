"""The sandbox forms service: surveys, questions, answers, filling, the export operation and
stored files (routes in app.py; state in model.py, seeded by seed.py)."""
