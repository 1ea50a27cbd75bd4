"""frost.sdpa"""
