"""The attention backward as a frost stage program.

The page itself lives in :mod:`frost.ir.attention` so that the scheduler (a lower layer) can
plan it; this module is its home in the user-facing package::

    from frost.sdpa.program import sdpa_bwd_program
    prog = sdpa_bwd_program("bf16")
    print(prog)                      # the stages, level by level
    from frost.sched import plan_sdpa_bwd
    plan = plan_sdpa_bwd("sm_120a", head_dim=128)
"""

from frost.ir.attention import sdpa_bwd_program, sdpa_fwd_program

__all__ = ["sdpa_bwd_program", "sdpa_fwd_program"]
