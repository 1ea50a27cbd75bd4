"""Row-wise kernel configuration shared by the chain's light kernels (``rowdot``, ``dq_convert``).

Both kernels walk ``block_m`` padded query rows per CTA, give each row a power-of-two group of
lanes (``threads_per_row`` <= 32) and move 16-byte vectors of fp16/bf16. This module holds that
lane/vector arithmetic once, with the checks that go with it, and reads the CTA size and row tiling
from the scheduler's plan.
"""

from __future__ import annotations

import dataclasses

from frost.sched.plan import KernelPlan, Plan
from frost.tile_dsl.gmem import check_block

VEC_BYTES = 16


@dataclasses.dataclass(frozen=True)
class RowwiseConfig:
    """Static knobs of one compiled row-wise variant. Subclasses set ``error`` and ``kernel``."""

    io_bits: int        # 16 for fp16 / bf16
    head_dim: int       # unpadded head dim of the io tensors
    d_pad: int          # padded head dim of the dQ workspace rows
    block_m: int        # rows per CTA (divides S_q_pad)
    threads: int        # CTA size
    use_pdl: bool = True
    reduce_block: int = 0  # dq_accum layout (frost.tile_dsl.gmem): 0 rows, -1 ATOM, b: b x b tiles

    error = ValueError  # the template's typed error (a ValueError subclass)
    kernel = ""         # the KernelPlan name this config is read from

    @property
    def elems_per_vec(self) -> int:
        return VEC_BYTES * 8 // self.io_bits

    @property
    def vecs_per_row(self) -> int:
        return self.head_dim // self.elems_per_vec

    @property
    def threads_per_row(self) -> int:
        """Largest power of two <= min(32, vectors per row)."""
        return 1 << (min(32, self.vecs_per_row).bit_length() - 1)

    @property
    def vecs_per_thread(self) -> int:
        return -(-self.vecs_per_row // self.threads_per_row)

    @property
    def rows_per_pass(self) -> int:
        return self.threads // self.threads_per_row

    @property
    def passes(self) -> int:
        return -(-self.block_m // self.rows_per_pass)

    def can_implement(self) -> None:
        """Raise ``self.error`` naming the first violated constraint."""
        err = self.error
        if self.io_bits != 16:
            raise err(f"io dtype must be 16-bit (fp16/bf16), got {self.io_bits} bits")
        if self.head_dim <= 0 or self.head_dim % self.elems_per_vec:
            raise err(f"head_dim must be a positive multiple of {self.elems_per_vec}, got {self.head_dim}")
        if self.d_pad < self.head_dim or self.d_pad % 4:
            raise err(f"d_pad must be >= head_dim and a multiple of 4, got {self.d_pad}")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise err(f"threads must be a multiple of 32 in [32, 1024], got {self.threads}")
        if self.block_m <= 0:
            raise err(f"block_m must be positive, got {self.block_m}")
        try:  # a CTA's band of block_m rows must be whole block rows of the workspace
            check_block(self.reduce_block, self.block_m, self.d_pad)
        except ValueError as e:
            raise err(f"reduce_block: {e}") from None

    @classmethod
    def from_plan(cls, plan: Plan, io_bits: int, head_dim: int, use_pdl: bool = True):
        """CTA size from this template's kernel plan, row tiling and d_pad from ``bwd_main``."""
        kp: KernelPlan = plan.kernel(cls.kernel)
        main = plan.kernel("bwd_main")
        tile_m = int(main.tile["tile_m"])
        block_m = int(kp.tile["rows_per_cta"])
        if tile_m % block_m:
            raise cls.error(f"{cls.kernel} block_m={block_m} must divide bwd_main tile_m={tile_m}")
        cfg = cls(io_bits=io_bits, head_dim=head_dim, d_pad=int(main.tile["d"]), block_m=block_m,
                  threads=int(kp.threads), use_pdl=use_pdl,
                  reduce_block=int(main.tile.get("reduce_block", 0)))
        cfg.can_implement()
        return cfg
