"""Tests of haul's sandbox."""
