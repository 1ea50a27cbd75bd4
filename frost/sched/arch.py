"""Target architectures the scheduler plans for: the few numbers it needs from each.

Arch variants are plain records; the docstring of each entry says what differs.
"""

from __future__ import annotations

import dataclasses

# bytes of dynamic shared memory per CTA on SM120 / SM121 (CuTe's get_smem_capacity_in_bytes)
SM120_SMEM_BUDGET = 101_376


@dataclasses.dataclass(frozen=True)
class Arch:
    """Resource limits of one target. Plans assume one CTA per SM unless they ask for more
    (plan key ``ctas_per_sm``); then each CTA gets its share of the SM (:meth:`smem_per_cta`,
    and ``regs_per_sm`` split in :func:`frost.sched.warps.roles`)."""

    name: str
    smem_budget: int = SM120_SMEM_BUDGET  # bytes of dynamic shared memory per CTA
    smem_per_sm: int = 102_400       # bytes of shared memory an SM can give its CTAs
    smem_reserved_per_cta: int = 1_024  # what the hardware keeps per resident CTA
    regs_per_sm: int = 65_536        # 32-bit registers per SM
    max_regs_per_thread: int = 255
    max_threads: int = 1024
    named_barriers: int = 16         # bar.sync ids 0..15; 0 is __syncthreads
    mma: str = "mma.sync.m16n8k16"
    mma_dtypes: tuple[str, ...] = ("fp16", "bf16")  # operand dtypes ``mma`` takes (fp32 acc)
    note: str = ""
    plan_as: str = ""  # the arch whose plans (measured picks included) this one runs; "" = own
    sms: int = 0      # SMs of the arch's reference card, for grid models (frost.sched.waves)

    def smem_per_cta(self, ctas_per_sm: int = 1) -> int:
        """Dynamic shared memory one CTA may use when ``ctas_per_sm`` CTAs share an SM
        (SM120: 101,376 B alone, 50,176 B each for two)."""
        if ctas_per_sm < 1:
            raise ValueError(f"ctas_per_sm must be >= 1, got {ctas_per_sm}")
        if ctas_per_sm == 1:
            return self.smem_budget
        return min(self.smem_budget,
                   self.smem_per_sm // ctas_per_sm - self.smem_reserved_per_cta)


ARCHS: dict[str, Arch] = {
    "sm_120a": Arch("sm_120a", note="GeForce/RTX Blackwell: mma.sync + TMA, 99 KB smem",
                    sms=170),  # RTX 5090 (the RTX PRO 6000 has 188)
    "sm_121a": Arch("sm_121a", note="DGX Spark (GB10): same limits as sm_120a", sms=48),
    # The H200 runs SM120-class code; keep the SM120 budget so that a plan tested there is the
    # plan that ships on SM120 (its own 227 KB would hide overflows).
    "sm_90a": Arch("sm_90a", note="H100/H200 running SM120-class code; SM120 smem budget kept",
                   plan_as="sm_120a", sms=132),
}


def get_arch(name: str | Arch) -> Arch:
    """The :class:`Arch` record of ``name`` (e.g. "sm_120a"); ValueError for an unknown one."""
    if isinstance(name, Arch):
        return name
    try:
        return ARCHS[name]
    except KeyError:
        raise ValueError(f"unknown arch {name!r}; supported: {', '.join(ARCHS)}") from None


def plan_arch(name: str | Arch) -> str:
    """The arch whose plans ``name`` runs: itself, or for sm_90a (the H200 standing in for an
    SM120 card) "sm_120a", so that what is tested and timed there is the plan that ships."""
    a = get_arch(name)
    return a.plan_as or a.name


@dataclasses.dataclass(frozen=True)
class Card:
    """One GPU's rates for the trip floors (:func:`frost.sched.tiles.trip_floors`): its
    ``mma.sync`` m16n8k16 bf16 -> fp32 rate in TFLOP/s, SM count and boost clock, and the
    shared-memory bytes an SM reads per clock (one ldmatrix wavefront). ``source`` says where
    the rate comes from."""

    name: str
    arch: str
    mma_tflops: float
    sms: int
    clock_ghz: float
    source: str
    smem_bytes_per_clk: float = 128.0

    @property
    def mma_flops_per_clk(self) -> float:
        """``mma.sync`` FLOPs one SM completes per clock."""
        return self.mma_tflops * 1e12 / (self.sms * self.clock_ghz * 1e9)


CARDS: tuple[Card, ...] = (
    Card("H200", "sm_90a", 610.0, 132, 1.98, "measured: a register-only mma.sync loop"),
    Card("RTX PRO 6000", "sm_120a", 504.0, 188, 2.62, "vendor sheet, dense bf16"),
    Card("RTX 5090", "sm_120a", 255.0, 170, 2.41, "mma.sync bf16 -> f32 (KERNEL_NOTES)"),
)


def get_card(name: str) -> Card:
    """The :data:`CARDS` entry called ``name`` (case-insensitive); ValueError listing them."""
    for c in CARDS:
        if c.name.lower() == name.lower():
            return c
    raise ValueError(f"unknown card {name!r}; known: {', '.join(c.name for c in CARDS)}")


def card_for_device(name: str, arch: str, sms: int) -> Card:
    """The :class:`Card` for a GPU found at run time (its name, arch such as "sm_90a" and SM
    count, from ``torch.cuda.get_device_properties``): the :data:`CARDS` entry its name
    contains, else the first entry of its arch, else of its family (sm_121a: an sm_120a card),
    priced with that card's per-SM rates (an H100 as the H200's GH100 SM), with the device's
    name and SM count where they differ. ValueError for a family no card has."""
    family = arch.rstrip("a")[:-1]  # "sm_12" for sm_120a and sm_121a
    named = [c for c in CARDS if c.name.lower() in name.lower()]
    c = next(iter(named + [c for c in CARDS if c.arch == arch]
                  + [c for c in CARDS if c.arch.rstrip("a")[:-1] == family]), None)
    if c is None:
        raise ValueError(f"no card of {arch} ({name}) to price plans with; known: "
                         f"{', '.join(f'{c.name} ({c.arch})' for c in CARDS)}")
    if named and c.sms == sms:
        return c
    return dataclasses.replace(c, name=name, sms=sms, mma_tflops=c.mma_tflops * sms / c.sms,
                               source=f"{c.name}'s per-SM rates ({c.source})")
