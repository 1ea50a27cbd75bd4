"""frost.templates"""
