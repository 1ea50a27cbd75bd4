"""The on-disk cache of compiled SDPA backward chains: compile once per machine (or once for a
fleet, ahead of time), load in milliseconds after that.

Where: ``$FROST_CACHE_DIR``, else the user cache dir (``platformdirs.user_cache_dir("frost")``
when platformdirs is installed, else ``$XDG_CACHE_HOME/frost`` or ``~/.cache/frost``).
``FROST_CACHE_DIR=off`` turns the disk cache off (every new process compiles).

What an entry is: a folder ``sdpa-bwd-<digest>/`` holding

* ``chain.o``: CuTe DSL's export of the compiled chain (``compiled.export_to_c``): the host
  launch function with the cubin inside, loaded back with ``cutlass.runtime.load_module``
  into the same ``JitCompiledFunction`` type ``cute.compile`` returns, so
  :class:`frost.sdpa.chain.FastLauncher` launches it as it launches a fresh compile;
* ``chain.h``: its C header (for C/C++ callers; frost does not read it);
* ``meta.json``: the key fields (:func:`entry_fields`), the sha256 of both files, the
  exported symbol prefix, when and how long the compile took.

The key (:func:`entry_fields`; the folder is named by its sha256) is everything the compiled
code depends on:

* the variant (:class:`frost.sdpa.api.VariantKey`: arch, dtype, head dim, causal alignment,
  deterministic, PDL, forced tiles, tail split);
* the sha256 of its Plan's JSON and the main kernel's code choices (so a patched planner or
  code choice, as bench/chain_ab.py makes, never loads or overwrites the default build);
* the sha256 of frost's kernel sources (:data:`KERNEL_SOURCES`);
* the toolchain: the nvidia-cutlass-dsl version, its CUDA libs package (cu12 / cu13: the
  bundled NVVM and ptxas that made the cubin) and CuTe DSL's own compile-affecting settings
  (``CUTE_DSL_*``: lineinfo, debug, compiler_opt, ...; the arch is the variant's, and the
  runtime library's path is machine-local, so both are left out);
* the host CPU architecture (the exported host code is native).

Not in it: the GPU driver. The cubin is SASS for the variant's arch, the same bytes a fresh
compile loads; a driver too old for it fails a fresh compile's first launch the same way.

Concurrency: an entry is written into a private temporary folder and renamed into place (the
commit point), so a reader sees a whole entry or none. Filling an entry takes a per-entry file
lock (``filelock`` when installed, else ``fcntl.flock``), so processes racing for one variant
compile it once: the others wait and load the winner's entry. Loads take no lock. A cache
folder that cannot be written (a read-only AOT folder) still loads; a miss there compiles
without storing, with a warning.

Integrity: every load checks the meta's key against the expected fields, both files' sha256,
that CuTe DSL loads the module and finds the symbol, and the entry point's argument count.
Any failure is logged as a warning and the entry is rebuilt and replaced; it is never used.

AOT: ``frost compile sdpa-bwd --arch sm_120a --out DIR [--variants ...]`` fills DIR; another
machine with the same frost sources and toolchain loads from it with ``FROST_CACHE_DIR=DIR``.
``frost cache list|clear`` manages a cache folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

FORMAT = 1
PROGRAM = "sdpa-bwd"
DIR_ENV = "FROST_CACHE_DIR"
OFF = "off"
OBJ, HDR, META = "chain.o", "chain.h", "meta.json"
# what the compiled chain's code comes from (under frost/): a change to any of these files
# gives every entry a new key
KERNEL_SOURCES = ("tile_dsl", "ir", "sched", "recipes", "templates", "sdpa/api.py", "sdpa/chain.py")
# CuTe DSL settings that affect the compile but are not part of frost's key: the arch (the
# variant's own, passed as --gpu-arch) and the runtime library's path (machine-local)
IGNORED_DSL_SETTINGS = ("arch", "shared_libs")
# the key fields that belong to the machine and install rather than to the variant
ENV_FIELDS = ("format", "sources", "cutlass_dsl", "cuda_libs", "dsl_settings", "machine")
LOCK_TIMEOUT_S = 600.0


class BadEntry(Exception):
    """A cache entry that must not be loaded (the reason is the message)."""


# ------------------------------------------------------------------------------- where
def default_dir() -> Path:
    """The user cache dir for frost (without ``$FROST_CACHE_DIR``)."""
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("frost", appauthor=False))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "frost"


def cache_dir() -> Path | None:
    """The disk cache's folder: ``$FROST_CACHE_DIR`` (read at each call), else
    :func:`default_dir`; None when ``FROST_CACHE_DIR=off``."""
    text = os.environ.get(DIR_ENV, "").strip()
    if text.lower() == OFF:
        return None
    return Path(text).expanduser() if text else default_dir()


def default_store() -> "Store | None":
    """A :class:`Store` on :func:`cache_dir`, or None when the disk cache is off."""
    root = cache_dir()
    return None if root is None else Store(root)


# ------------------------------------------------------------------------------- the key
@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """sha256 of frost's kernel sources (:data:`KERNEL_SOURCES`, :func:`tree_digest`). Once
    per process."""
    import frost

    return tree_digest(Path(frost.__file__).resolve().parent)


def tree_digest(root: Path, names: tuple[str, ...] = KERNEL_SOURCES) -> str:
    """sha256 over the ``.py`` files of ``names`` (folders, searched recursively, and files)
    under ``root``: each file's path relative to ``root`` and its bytes, in path order."""
    files = []
    for name in names:
        p = root / name
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.is_file() else []
    h = hashlib.sha256()
    for f in files:
        data = f.read_bytes()
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _dsl_settings() -> str:
    """CuTe DSL's compile-affecting settings (``CUTE_DSL_*``), without
    :data:`IGNORED_DSL_SETTINGS`, as ``name=value;`` text."""
    from cutlass.cutlass_dsl import CuTeDSL

    env = CuTeDSL._get_dsl().envar
    try:
        spec = type(env)._ENV_VAR_SPEC
    except AttributeError:  # another DSL release: its whole key string, arch and all
        return env.cache_key_str()
    parts = []
    for entry in sorted(spec, key=lambda e: e.key_name):
        if not entry.affects_compile or entry.key_name in IGNORED_DSL_SETTINGS:
            continue
        value = getattr(env, entry.key_name, None)
        if value is not None:
            parts.append(f"{entry.key_name}={value!r};")
    return "".join(parts)


def _cuda_libs() -> str:
    """The CUDA libs CuTe DSL runs with: ``cu12 4.8.1`` (the folder of its runtime library,
    and its package's version)."""
    from importlib import metadata

    from cutlass.cutlass_dsl import CuTeDSL

    libs = CuTeDSL._get_dsl().get_shared_libs() or []
    flavour = next((Path(p).parent.parent.name for p in libs
                    if Path(p).name.startswith("libcute_dsl_runtime")), "unknown")
    try:
        version = metadata.version(f"nvidia-cutlass-dsl-libs-{flavour}")
    except metadata.PackageNotFoundError:
        version = "?"
    return f"{flavour} {version}"


@functools.lru_cache(maxsize=1)
def toolchain() -> dict:
    """The key fields of this install: CuTe DSL's version, CUDA libs and settings, the host
    CPU. Once per process."""
    import cutlass

    return {"cutlass_dsl": cutlass.__version__, "cuda_libs": _cuda_libs(),
            "dsl_settings": _dsl_settings(), "machine": f"{sys.platform}-{platform.machine()}"}


def _jsonable(value):
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def entry_fields(variant: dict, plan_json: str, code: dict) -> dict:
    """The key of one compiled chain: ``variant`` (``dataclasses.asdict`` of a VariantKey),
    the sha256 of its Plan's JSON, its main kernel's code choices, and this install's
    :func:`source_digest` and :func:`toolchain`. JSON-normal (a JSON round trip changes
    nothing), so it compares equal to the copy in an entry's meta."""
    fields = {"format": FORMAT, "program": PROGRAM, "variant": variant,
              "plan": hashlib.sha256(plan_json.encode()).hexdigest(),
              "code": {k: _jsonable(v) for k, v in sorted(code.items())},
              "sources": source_digest(), **toolchain()}
    return json.loads(json.dumps(fields, sort_keys=True))


def digest(fields: dict) -> str:
    """The entry name's hash of ``fields`` (24 hex digits of a sha256)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:24]


def variant_label(v: dict) -> str:
    """``bf16 d=64 causal top_left deterministic no-PDL tail-split`` for a VariantKey's dict
    (the arch is not in it)."""
    parts = [v["dtype"], f"d={v['head_dim']}",
             "non-causal" if v["causal_align"] == "none" else f"causal {v['causal_align']}"]
    if v.get("deterministic"):
        parts.append("deterministic")
    if not v.get("use_pdl", True):
        parts.append("no-PDL")
    if v.get("tile"):
        parts.append("tile " + ",".join(f"{k}={x}" for k, x in v["tile"]))
    if v.get("tail_split"):
        parts.append("tail-split")
    if v.get("mods"):
        from frost.ir.mods import AttentionMods

        parts.append(f"[{AttentionMods.from_dict(json.loads(v['mods'])).label()}]")
    return " ".join(parts)


def check_abi(fn) -> None:
    """BadEntry unless ``fn`` (a loaded entry point) takes the chain's arguments
    (:data:`frost.sdpa.chain.ARG_KINDS`)."""
    from frost.sdpa.chain import ARG_KINDS

    try:
        n = len(fn.execution_args.signature.parameters)
    except AttributeError as e:
        raise BadEntry(f"the loaded function has no signature ({e})") from None
    if n != len(ARG_KINDS):
        raise BadEntry(f"the loaded function takes {n} arguments, the chain passes "
                       f"{len(ARG_KINDS)}")


# ------------------------------------------------------------------------------- locks
class _FcntlLock:
    """An exclusive ``fcntl.flock`` on a lock file, polled until ``timeout`` (TimeoutError)."""

    def __init__(self, path: Path, timeout: float):
        self.path, self.timeout, self.fd = path, timeout, None

    def __enter__(self):
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TimeoutError(f"waited {self.timeout:.0f} s for {self.path}") from None
                time.sleep(0.05)
        self.fd = fd
        return self

    def __exit__(self, *exc):
        import fcntl

        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


def file_lock(path: Path, timeout: float = LOCK_TIMEOUT_S):
    """An exclusive inter-process lock on ``path`` (a context manager): ``filelock.FileLock``
    when installed, else :class:`_FcntlLock`. Raises TimeoutError after ``timeout`` s, OSError
    when the lock file cannot be made."""
    try:
        import filelock
    except ImportError:
        return _FcntlLock(path, timeout)

    @contextlib.contextmanager
    def held():
        try:
            with filelock.FileLock(str(path), timeout=timeout):
                yield
        except filelock.Timeout:
            raise TimeoutError(f"waited {timeout:.0f} s for {path}") from None

    return held()


@functools.lru_cache(maxsize=1)
def _dsl_runtime_global() -> None:
    """Load CuTe DSL's runtime library with RTLD_GLOBAL: exporting resolves the CUDA runtime
    symbols (``cudaLibraryLoadData``, ...) the host code calls in this process (without it,
    4.8.1's export fails with "Symbols not found")."""
    import ctypes

    import cutlass.cute as cute
    import cutlass.cute.export  # noqa: F401  (sets the export and load providers)

    for path in cute.runtime.find_runtime_libraries(enable_tvm_ffi=False):
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


# ------------------------------------------------------------------------------- entries
@dataclasses.dataclass(frozen=True)
class Entry:
    """One folder of a cache, as :meth:`Store.entries` lists it (``meta``: {} when its
    meta.json is missing or unreadable)."""

    path: Path
    meta: dict

    @property
    def fields(self) -> dict:
        return self.meta.get("fields") or {}

    @property
    def size(self) -> int:
        return sum(f.stat().st_size for f in self.path.iterdir() if f.is_file())

    @property
    def created(self) -> float:
        return float(self.meta.get("created") or self.path.stat().st_mtime)

    @property
    def label(self) -> str:
        v = self.fields.get("variant")
        return variant_label(v) if v else "(unreadable meta.json)"

    @property
    def arch(self) -> str:
        return (self.fields.get("variant") or {}).get("arch", "?")

    def current(self) -> bool:
        """Whether this install would load it: its machine and install fields
        (:data:`ENV_FIELDS`) equal this process's (False for an unreadable entry)."""
        now = {"format": FORMAT, "sources": source_digest(), **toolchain()}
        return bool(self.fields) and all(self.fields.get(k) == now[k] for k in ENV_FIELDS)

    def to_dict(self) -> dict:
        return {"name": self.path.name, "arch": self.arch, "variant": self.label,
                "size": self.size, "created": self.created,
                "compile_s": self.meta.get("compile_s"), "fields": self.fields}


@dataclasses.dataclass
class Slot:
    """What :meth:`Store.fill` yields: ``loaded``, the entry another process stored while this
    one waited (None: compile, then :meth:`put`); ``writable``: whether :meth:`put` stores."""

    store: "Store"
    fields: dict
    loaded: object = None
    writable: bool = True
    stored: Path | None = None

    def put(self, compiled, seconds: float | None = None) -> Path | None:
        if self.writable:
            self.stored = self.store._write(self.fields, compiled, seconds)
        return self.stored


class Store:
    """One cache folder (see the module docstring)."""

    def __init__(self, root):
        self.root = Path(root)
        self._bad: set[str] = set()  # entries this process found unusable

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def path(self, fields: dict) -> Path:
        return self.root / f"{PROGRAM}-{digest(fields)}"

    def _lock_path(self, name: str) -> Path:
        return self.root / f".{name}.lock"

    def _log(self):
        from frost.tile_dsl.log import logger

        return logger("cache")

    # ---- reading
    def load(self, fields: dict, check=check_abi):
        """The compiled chain stored under ``fields``, or None: not there (a miss), or unusable
        (a warning; :meth:`fill` then replaces it). Takes no lock."""
        path = self.path(fields)
        if not (path / META).exists():
            return None
        try:
            return self._read(path, fields, check)
        except FileNotFoundError:  # replaced while read: the locked re-check reads the new one
            return None
        except BadEntry as e:
            self._bad.add(path.name)
            self._log().warning("cache entry %s is unusable (%s); rebuilding it", path, e)
            return None

    def _read(self, path: Path, fields: dict, check):
        try:
            meta = json.loads((path / META).read_text())
        except (ValueError, UnicodeDecodeError) as e:
            raise BadEntry(f"unreadable {META}: {e}") from None
        if not isinstance(meta, dict) or meta.get("fields") != fields:
            raise BadEntry(f"its {META} holds another key")
        files = meta.get("files")
        if not isinstance(files, dict) or set(files) != {OBJ, HDR}:
            raise BadEntry(f"its {META} lists no checksums")
        for name, want in files.items():
            if hashlib.sha256((path / name).read_bytes()).hexdigest() != want:
                raise BadEntry(f"{name} fails its sha256 check")
        _dsl_runtime_global()
        import cutlass.cute as cute

        try:
            fn = getattr(cute.runtime.load_module(str(path / OBJ)), meta["prefix"])
        except Exception as e:  # CuTe DSL's load errors have no common base
            raise BadEntry(f"CuTe DSL could not load it: {type(e).__name__}: "
                           f"{str(e).strip()[:300]}") from None
        if check is not None:
            check(fn)
        return fn

    # ---- writing
    @contextlib.contextmanager
    def fill(self, fields: dict, check=check_abi):
        """Hold the entry's file lock while the caller compiles (yields a :class:`Slot`).
        Under the lock, an entry another process stored meanwhile is loaded into
        ``slot.loaded``. Where the folder or its lock cannot be made, or the lock is not got
        within :data:`LOCK_TIMEOUT_S`, a warning, and ``slot.writable`` is False."""
        path = self.path(fields)
        lock = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = file_lock(self._lock_path(path.name))
            lock.__enter__()
        except (OSError, TimeoutError) as e:
            self._log().warning("cannot lock an entry in %s (%s): compiling without storing",
                                self.root, e)
            lock = None
        if lock is None:
            yield Slot(self, fields, writable=False)
            return
        try:
            slot = Slot(self, fields)
            if path.name not in self._bad and (path / META).exists():
                try:
                    slot.loaded = self._read(path, fields, check)
                except (BadEntry, FileNotFoundError) as e:
                    self._log().warning("cache entry %s is unusable (%s); rebuilding it", path, e)
            yield slot
        finally:
            lock.__exit__(None, None, None)

    def _write(self, fields: dict, compiled, seconds: float | None) -> Path | None:
        """Export ``compiled`` into a temporary folder and rename it into place (the caller
        holds the entry's lock). A failed export is a warning and stores nothing."""
        path = self.path(fields)
        prefix = f"frost_{path.name.replace('-', '_')}"
        tmp = trash = None
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{path.name}-", dir=self.root))
            _dsl_runtime_global()
            compiled.export_to_c(str(tmp), Path(OBJ).stem, prefix)
            files = {name: hashlib.sha256((tmp / name).read_bytes()).hexdigest()
                     for name in (OBJ, HDR)}
            from frost import __version__

            meta = {"fields": fields, "name": path.name, "prefix": prefix, "files": files,
                    "created": time.time(), "compile_s": seconds, "frost": __version__}
            (tmp / META).write_text(json.dumps(meta, indent=1, sort_keys=True))
            os.chmod(tmp, 0o755)
            if path.exists():  # an unusable entry: out of the way first
                trash = self.root / f".trash-{path.name}-{os.getpid()}-{time.monotonic_ns()}"
                os.rename(path, trash)
            os.rename(tmp, path)
            tmp = None
            self._bad.discard(path.name)
            return path
        except Exception as e:  # export or file errors: keep the compiled chain, store nothing
            self._log().warning("could not store %s in %s: %s: %s", variant_label(
                fields["variant"]), self.root, type(e).__name__, str(e).strip()[:300])
            return None
        finally:
            for p in (tmp, trash):
                if p is not None:
                    shutil.rmtree(p, ignore_errors=True)

    # ---- managing
    def entries(self) -> list[Entry]:
        """Every entry folder, oldest first."""
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.iterdir():
            if not p.is_dir() or not p.name.startswith(f"{PROGRAM}-"):
                continue
            try:
                meta = json.loads((p / META).read_text())
                meta = meta if isinstance(meta, dict) else {}
            except (OSError, ValueError, UnicodeDecodeError):
                meta = {}
            out.append(Entry(p, meta))
        return sorted(out, key=lambda e: (e.created, e.path.name))

    def clear(self, stale_only: bool = False) -> list[Entry]:
        """Remove every entry (``stale_only``: those this install would not load,
        :meth:`Entry.current`), each under its lock (one another process holds for 30 s is
        left, with a warning), with its lock file; and, clearing all, leftover temporary
        folders. Returns the removed entries. Meant for a folder no process is filling."""
        removed = []
        for e in self.entries():
            if stale_only and e.current():
                continue
            lock_path = self._lock_path(e.path.name)
            try:
                with file_lock(lock_path, timeout=30):
                    shutil.rmtree(e.path, ignore_errors=True)
            except TimeoutError:
                self._log().warning("%s is being filled by another process; left in place",
                                    e.path)
                continue
            with contextlib.suppress(OSError):
                lock_path.unlink()
            removed.append(e)
        if not stale_only and self.root.is_dir():
            for p in self.root.iterdir():
                if p.name.startswith((".tmp-", ".trash-")) and p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                elif p.name.startswith(f".{PROGRAM}-") and p.name.endswith(".lock"):
                    with contextlib.suppress(OSError):
                        p.unlink()
        return removed
