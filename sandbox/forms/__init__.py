"""The sandbox forms service: surveys, questions, answers, the export operation (app.py)."""
