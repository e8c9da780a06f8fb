"""JSON Schemas for every kind of session file, shipped as package data."""
