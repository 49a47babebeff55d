"""Sandboxed execution of untrusted, model-written code."""
