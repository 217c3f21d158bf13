"""Operator tools: not components, run by hand or by the Makefile."""
