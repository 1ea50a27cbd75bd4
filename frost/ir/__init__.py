"""frost.ir"""
