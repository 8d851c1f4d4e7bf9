"""Helpers the test modules share (fixtures live in tests/conftest.py): import them from here
instead of copying them into a test file, or importing them from another test module."""
