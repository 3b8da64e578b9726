"""Tests of haul's connectors."""
