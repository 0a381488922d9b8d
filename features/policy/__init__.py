"""Policies and the rules read from instructions, checked step by step."""
