"""Tests of haul's export."""
