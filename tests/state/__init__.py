"""Tests of haul's state."""
