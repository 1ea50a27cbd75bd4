"""Primitives: one concept per module, each with a pure-Python model and a CuTe DSL device form."""
