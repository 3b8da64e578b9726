"""Tests of what lets a user trust a migration: check, plan, progress, status, report, verify."""
