"""frost.sched"""
