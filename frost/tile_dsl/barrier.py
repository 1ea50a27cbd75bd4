"""Barriers: mbarrier pipeline rings, named barriers, and PDL, each with a pure-Python model.

Three concepts live here because kernels always use them together to order work:

* **mbarrier rings.** A ring of ``stages`` mbarriers in shared memory. A position in the ring is a
  :class:`PipelineState` (``index``, ``phase``); ``advance()`` moves to the next stage and flips
  ``phase`` each time the index wraps. Producers start at phase 1 (a freshly initialised mbarrier
  reports the phase *before* phase 0 as complete, so the first wait on an "empty" barrier passes),
  consumers at phase 0. :class:`MbarrierModel` is a step-exact model of one hardware mbarrier
  (pending arrivals, transaction bytes, phase parity) so protocols can be simulated on the CPU.
  :func:`check_arrive_count` recomputes an mbarrier's arrive count at trace time from the number of
  agents that arrive on it; a wrong count raises :class:`ArriveCountError` instead of hanging the
  GPU.
* **named barriers.** ``bar.sync id, threads``. Ids are handed out by
  :class:`NamedBarrierAllocator` (id 0 is ``__syncthreads``; at most 16 ids exist in hardware), and
  kernels only ever see a :class:`~frost.sched.plan.NamedBarrierPlan`: :func:`sync` / :func:`arrive`
  take the plan, never a literal id.
* **PDL.** :func:`pdl_wait` (``griddepcontrol.wait``) and :func:`pdl_launch_dependents`
  (``griddepcontrol.launch_dependents``), gated on a compile-time flag so one kernel source compiles
  with PDL on or off. Contract: wait before the first read of any upstream output.

Device helpers are plain Python functions that emit CuTe DSL ops; call them from inside a
``@cute.kernel``.
"""

from __future__ import annotations

import dataclasses
import enum


@dataclasses.dataclass(frozen=True)
class NamedBarrierPlan:
    """A ``bar.sync id, threads`` barrier. Id 0 is reserved for __syncthreads."""

    name: str
    id: int
    threads: int


@dataclasses.dataclass(frozen=True)
class MbarrierPlan:
    """A ring of mbarriers (one per stage) in shared memory, 8 bytes each."""

    name: str
    offset: int
    stages: int
    arrive_count: int
    tx_bytes: int = 0  # expect-tx bytes per phase (TMA), 0 for plain arrive barriers


WARP_SIZE = 32
MAX_NAMED_BARRIERS = 16  # hardware barrier ids 0..15; id 0 is __syncthreads
RESERVED_BARRIER_ID = 0


# --------------------------------------------------------------------------------------------
# Pipeline state (model; the device form below runs the same arithmetic on Int32s)
# --------------------------------------------------------------------------------------------


class Role(enum.IntEnum):
    """Which side of a ring a state walks (0 is reserved)."""

    NONE = 0
    PRODUCER = 1  # waits on "empty" barriers; starts at phase 1
    CONSUMER = 2  # waits on "full" barriers; starts at phase 0


def _initial_phase(role: Role) -> int:
    if role == Role.PRODUCER:
        return 1
    if role == Role.CONSUMER:
        return 0
    raise ValueError(f"role must be PRODUCER or CONSUMER, got {role!r}")


@dataclasses.dataclass
class PipelineState:
    """Position in a ring of ``stages`` mbarriers: stage ``index`` and wait parity ``phase``.

    ``advance()`` is ``index, phase = (index + 1) % stages, phase ^ ((index + 1) // stages)``,
    exactly the arithmetic :class:`DevicePipelineState` emits.
    """

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    def __post_init__(self):
        if not isinstance(self.stages, int) or self.stages < 1:
            raise ValueError(f"stages must be a positive int, got {self.stages!r}")

    @classmethod
    def start(cls, stages: int, role: Role) -> "PipelineState":
        return cls(stages, 0, _initial_phase(role), 0)

    def advance(self) -> "PipelineState":
        nxt = self.index + 1
        self.index = nxt % self.stages
        self.phase ^= nxt // self.stages
        self.count += 1
        return self

    @classmethod
    def at(cls, count: int, stages: int, role: Role) -> "PipelineState":
        """The state ``count`` :meth:`advance` calls after :meth:`start`, computed directly
        (the model of :meth:`DevicePipelineState.at`)."""
        return cls(stages, count % stages, _initial_phase(role) ^ ((count // stages) % 2), count)


class DevicePipelineState:
    """:class:`PipelineState` on cutlass ``Int32`` values; loop-carried through ``scf`` loops.

    ``stages`` is a Python int (compile time), ``index`` / ``phase`` / ``count`` are runtime Int32.
    """

    def __init__(self, stages: int, index, phase, count):
        self.stages = stages
        self.index = index
        self.phase = phase
        self.count = count

    @classmethod
    def start(cls, stages: int, role: Role) -> "DevicePipelineState":
        from cutlass import Int32

        return cls(stages, Int32(0), Int32(_initial_phase(role)), Int32(0))

    def advance(self) -> None:
        nxt = self.index + 1
        self.index = nxt % self.stages
        self.phase = self.phase ^ (nxt // self.stages)
        self.count = self.count + 1

    @classmethod
    def at(cls, count, stages: int, role: Role) -> "DevicePipelineState":
        """The state after ``count`` advances (an Int32, e.g. a trip index counted from the
        ring's first use), computed instead of carried through the loop: a loop whose trips
        each take one stage needs no loop-carried state, and every wait and arrive still reads
        its stage and parity from the state object (:meth:`PipelineState.at` is the model)."""
        fills = count // stages
        if role == Role.CONSUMER:
            phase = fills % 2
        elif role == Role.PRODUCER:
            phase = (fills + 1) % 2
        else:
            raise ValueError(f"role must be PRODUCER or CONSUMER, got {role!r}")
        return cls(stages, count % stages, phase, count)

    # loop-carry protocol of the CuTe DSL AST rewriter
    def __extract_mlir_values__(self):
        return [self.index.ir_value(), self.phase.ir_value(), self.count.ir_value()]

    def __new_from_mlir_values__(self, values):
        from cutlass import Int32

        return DevicePipelineState(self.stages, Int32(values[0]), Int32(values[1]), Int32(values[2]))


# --------------------------------------------------------------------------------------------
# mbarrier model and arrive counts
# --------------------------------------------------------------------------------------------


class ArriveCountError(ValueError):
    """An mbarrier's arrive count does not match the agents that arrive on it."""


class Agent(enum.IntEnum):
    """How a group of warps arrives on an mbarrier (0 is reserved)."""

    NONE = 0
    THREAD = 1  # every thread arrives
    WARP = 2    # one elected lane per warp arrives
    ONE = 3     # a single elected thread arrives (e.g. the TMA issuer), once per arrive call


def arrive_count(agent: Agent, warps: int = 1, calls: int = 1) -> int:
    """Arrivals per phase when ``warps`` warps arrive as ``agent``, each ``calls`` times."""
    if warps < 1 or calls < 1:
        raise ValueError(f"warps and calls must be >= 1, got warps={warps}, calls={calls}")
    per_call = {Agent.THREAD: WARP_SIZE * warps, Agent.WARP: warps, Agent.ONE: 1}.get(agent)
    if per_call is None:
        raise ValueError(f"agent must be THREAD, WARP or ONE, got {agent!r}")
    return per_call * calls


def check_arrive_count(mb: MbarrierPlan, arrivals: int, tx_bytes: int | None = None) -> MbarrierPlan:
    """Raise :class:`ArriveCountError` unless ``mb`` expects exactly ``arrivals`` (and ``tx_bytes``).

    Call at trace time with the count recomputed from the kernel's roles, e.g.
    ``check_arrive_count(kp.mbarrier("empty"), arrive_count(Agent.WARP, mma.num_warps))``.
    """
    if mb.arrive_count != arrivals:
        raise ArriveCountError(f"mbarrier {mb.name!r} expects {mb.arrive_count} arrivals per phase, "
                               f"but the kernel arrives {arrivals} times")
    if tx_bytes is not None and mb.tx_bytes != tx_bytes:
        raise ArriveCountError(f"mbarrier {mb.name!r} expects {mb.tx_bytes} tx bytes per phase, "
                               f"but the loads deliver {tx_bytes}")
    return mb


class Access(enum.IntEnum):
    """How a role touches a buffer it hands to another role through an mbarrier (0 reserved)."""

    NONE = 0
    ASYNC = 1   # the async proxy (TMA, bulk copies): ordered by the full barrier's tx bytes
    LANES = 2   # per-lane plain loads / stores (ld.shared / st.shared): each lane its own words
    MATRIX = 3  # warp-collective matrix loads / stores (ldmatrix, stmatrix: .sync.aligned)


def handoff_agent(before: Access, after: Access) -> Agent:
    """How the role that accessed a buffer ``before`` a handoff must arrive on the mbarrier that
    hands it to a role that accesses it ``after``.

    * ASYNC before (a TMA load consumed): one arrive carrying the expected bytes
      (:attr:`Agent.ONE`); the transaction count orders the bytes.
    * LANES before, LANES or MATRIX after (e.g. row statistics stored by the producer's lanes
      and read by every MMA thread, then overwritten by the producer): every lane arrives
      (:attr:`Agent.THREAD`). Under PTX's memory model one lane's release after
      ``bar.warp.sync`` would do, but compute-sanitizer's racecheck only counts a thread's
      accesses as released by that thread's own arrive: with one lane a warp it reported 4,096
      hazards on bwd_main's sLSE/sDelta (H100, 8da91de) and 0 with every lane
      (lab/race/README.md). A rule the sanitizer can check is the one frost keeps.
    * Otherwise (MATRIX before, or LANES before an ASYNC refill): one elected lane a warp after
      ``bar.warp.sync`` (:attr:`Agent.WARP`). ldmatrix / stmatrix are warp-collective: the
      warp moves the tile as one instruction, so its release is one arrive; a TMA refill after
      reads is the TMA pipelines' usual release.
    """
    if before == Access.ASYNC:
        return Agent.ONE
    if before == Access.LANES:
        return Agent.THREAD if after in (Access.LANES, Access.MATRIX) else Agent.WARP
    if before == Access.MATRIX:
        return Agent.WARP
    raise ValueError(f"before must be ASYNC, LANES or MATRIX, got {before!r}")


def handoff_arrivals(before: "set[Access] | frozenset[Access]", after: "set[Access] | frozenset[Access]",
                     warps: int) -> int:
    """Arrivals per phase on the handoff mbarrier of a buffer set that ``warps`` warps accessed
    with ``before`` kinds and the other role accesses with ``after`` kinds: the strictest
    :func:`handoff_agent` over the pairs (a producer warp that writes lanes and issues TMA
    arrives from every lane; its TMA issuer's arrive carries the bytes)."""
    agents = {handoff_agent(b, a) for b in before for a in after}
    if Agent.THREAD in agents:
        return arrive_count(Agent.THREAD, warps)
    if Agent.WARP in agents:
        return arrive_count(Agent.WARP, warps)
    return arrive_count(Agent.ONE)


def check_handoff(mb: "MbarrierPlan", before, after, warps: int,
                  tx_bytes: int | None = None) -> "MbarrierPlan":
    """Raise :class:`ArriveCountError` unless ``mb`` counts :func:`handoff_arrivals`: a plan whose
    writes can overtake reads is rejected at trace time, before any GPU runs it."""
    try:
        return check_arrive_count(mb, handoff_arrivals(before, after, warps), tx_bytes)
    except ArriveCountError as e:
        raise ArriveCountError(f"{e}; see frost.tile_dsl.barrier.handoff_agent") from None


class MbarrierModel:
    """One hardware mbarrier: pending arrivals, pending tx bytes and the current phase parity.

    A phase completes when the pending arrival count reaches 0 *and* the tx count is 0; the
    barrier then re-arms with ``arrive_count`` and the phase parity flips.
    ``try_wait(parity)`` is true once the phase with that parity has completed, i.e. when the
    current phase's parity differs from ``parity`` (so ``try_wait(1)`` on a fresh barrier is true).
    """

    def __init__(self, arrive_count: int):
        if arrive_count < 1:
            raise ValueError(f"arrive_count must be >= 1, got {arrive_count}")
        self.arrive_count = arrive_count
        self.pending = arrive_count
        self.tx = 0
        self.phase = 0
        self.completed_phases = 0

    def expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes

    def arrive(self, tx_bytes: int = 0) -> None:
        """``mbarrier.arrive`` (with ``tx_bytes`` > 0: ``arrive.expect_tx``)."""
        if self.pending == 0:
            raise ArriveCountError("arrive on a phase that already has all its arrivals")
        self.tx += tx_bytes
        self.pending -= 1
        self._maybe_complete()

    def complete_tx(self, nbytes: int) -> None:
        """Bytes landed by the async proxy (TMA)."""
        self.tx -= nbytes
        if self.tx < 0:
            raise ArriveCountError(f"more bytes completed than expected (tx={self.tx})")
        self._maybe_complete()

    def try_wait(self, parity: int) -> bool:
        return self.phase != (parity & 1)

    def _maybe_complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase ^= 1
            self.completed_phases += 1
            self.pending = self.arrive_count


# --------------------------------------------------------------------------------------------
# Named barriers
# --------------------------------------------------------------------------------------------


class NamedBarrierAllocator:
    """Hands out named-barrier ids 1..15 by name; id 0 stays ``__syncthreads``.

    ``alloc(name, threads)`` returns a :class:`NamedBarrierPlan`. Raises ValueError for a thread
    count that is not a positive multiple of 32, a duplicate name, or more than 15 barriers.
    """

    def __init__(self, first_id: int = RESERVED_BARRIER_ID + 1, limit: int = MAX_NAMED_BARRIERS):
        if not 1 < limit <= MAX_NAMED_BARRIERS:
            raise ValueError(f"limit must be in 2..{MAX_NAMED_BARRIERS}, got {limit}")
        if not RESERVED_BARRIER_ID < first_id < limit:
            raise ValueError(f"first_id must be in 1..{limit - 1}, got {first_id}")
        self.limit = limit
        self._next = first_id
        self._plans: dict[str, NamedBarrierPlan] = {}

    def alloc(self, name: str, threads: int) -> NamedBarrierPlan:
        if not isinstance(threads, int) or threads <= 0 or threads % WARP_SIZE:
            raise ValueError(f"named barrier {name!r}: threads must be a positive multiple of "
                             f"{WARP_SIZE}, got {threads!r}")
        if name in self._plans:
            raise ValueError(f"named barrier {name!r} is already allocated")
        if self._next >= self.limit:
            raise ValueError(f"out of named barriers: ids 1..{self.limit - 1} are taken "
                             f"({list(self._plans)})")
        plan = NamedBarrierPlan(name=name, id=self._next, threads=threads)
        self._next += 1
        self._plans[name] = plan
        return plan

    def __getitem__(self, name: str) -> NamedBarrierPlan:
        return self._plans[name]

    @property
    def barriers(self) -> tuple[NamedBarrierPlan, ...]:
        """All allocations in id order, ready for ``KernelPlan(barriers=...)``."""
        return tuple(self._plans.values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{p.name}={p.id}/{p.threads}" for p in self._plans.values())
        return f"NamedBarrierAllocator({inner})"


# --------------------------------------------------------------------------------------------
# Device helpers (emit CuTe DSL ops; call inside a kernel)
# --------------------------------------------------------------------------------------------


def sync(nb: NamedBarrierPlan) -> None:
    """``bar.sync nb.id, nb.threads``: block until ``nb.threads`` threads reached the barrier."""
    import cutlass.cute as cute

    cute.arch.barrier(barrier_id=nb.id, number_of_threads=nb.threads)


def arrive(nb: NamedBarrierPlan) -> None:
    """``bar.arrive nb.id, nb.threads``: count this thread in without waiting."""
    import cutlass.cute as cute

    cute.arch.barrier_arrive(barrier_id=nb.id, number_of_threads=nb.threads)


def pdl_wait(enabled: bool) -> None:
    """``griddepcontrol.wait`` when ``enabled`` (a compile-time flag): upstream writes are visible after."""
    import cutlass.cute as cute

    if enabled:
        cute.arch.griddepcontrol_wait()


def pdl_launch_dependents(enabled: bool) -> None:
    """``griddepcontrol.launch_dependents`` when ``enabled`` (a compile-time flag)."""
    import cutlass.cute as cute

    if enabled:
        cute.arch.griddepcontrol_launch_dependents()


def mbar_init(ring_ptr, mb: MbarrierPlan) -> None:
    """Initialise ``mb.stages`` mbarriers at ``ring_ptr`` with ``mb.arrive_count``. One thread only;
    follow with a fence + CTA barrier (:func:`mbar_init_fence`)."""
    import cutlass.cute as cute

    for s in range(mb.stages):
        cute.arch.mbarrier_init(ring_ptr + s, mb.arrive_count)


def init_rings(rings, tma_atoms=()) -> None:
    """A TMA-ring kernel's setup, from ONE thread: prefetch the ``tma_atoms``' descriptors and
    initialise each ``(ring pointer, MbarrierPlan)`` of ``rings`` (:func:`mbar_init`). Every
    thread then calls :func:`mbar_init_fence` and meets at a CTA barrier."""
    from cutlass.cute.nvgpu import cpasync

    for atom in tma_atoms:
        cpasync.prefetch_descriptor(atom)
    for ptr, mb in rings:
        mbar_init(ptr, mb)


def mbar_init_fence() -> None:
    """Make mbarrier initialisation visible to the async proxy (TMA)."""
    import cutlass.cute as cute

    cute.arch.mbarrier_init_fence()


def mbar_wait(ring_ptr, state: DevicePipelineState) -> None:
    """Wait until the phase of stage ``state.index`` with parity ``state.phase`` completed."""
    import cutlass.cute as cute

    cute.arch.mbarrier_wait(ring_ptr + state.index, state.phase)


def mbar_arrive(ring_ptr, state: DevicePipelineState) -> None:
    """Arrive (count 1) on stage ``state.index`` of the ring."""
    import cutlass.cute as cute

    cute.arch.mbarrier_arrive(ring_ptr + state.index)
