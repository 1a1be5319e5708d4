"""_engine.py: engines, devices and graphs. An Engine is libgpar's engine (gpar_init): its
devices, a flat list over every backend; `with engine.graph() as g:` records the ops issued in
the block, and g.launch() replays them. Engines still open when Python exits are shut down then,
and what they imported is given back to its owners."""
import atexit
import weakref

import _gpar

BACKENDS = {"host": 1, "cuda": 2, "opencl": 4}
_live = weakref.WeakSet()
_default = None


class Device:
    """One device of an engine's flat list: index, backend ('host', 'cuda', 'opencl'),
    backend_index, name, type ('cpu', 'gpu'), memory_bytes, compute_lanes and the rest of
    gpar_device_info."""

    def __init__(self, info):
        self.__dict__.update(info)

    def __int__(self):
        return self.index

    __index__ = __int__

    def __repr__(self):
        return "<gpar.Device %d: %s:%d %s>" % (self.index, self.backend, self.backend_index, self.name)


class Engine:
    """libgpar's engine. backends: None (every backend built) or names ('cuda,opencl' or a
    list); lanes, host_threads, synchronous: None keeps the environment's value (GPAR_LANES,
    GPAR_HOST_THREADS, GPAR_SYNC) or the default."""

    def __init__(self, backends=None, lanes=None, host_threads=None, synchronous=None):
        mask = 0
        if backends:
            names = backends.split(",") if isinstance(backends, str) else list(backends)
            for n in names:
                if n.strip() not in BACKENDS:
                    raise ValueError("unknown backend %r (host, cuda, opencl)" % n)
                mask |= BACKENDS[n.strip()]
        self._exports = 0  # DLPack exports of this engine's arrays not yet deleted by their consumers
        self._h = _gpar.init(backends=mask, lanes=-1 if lanes is None else lanes,
                             host_threads=-1 if host_threads is None else host_threads,
                             synchronous=-1 if synchronous is None else int(bool(synchronous)))
        n = _gpar.device_count(self._h)
        self.devices = [Device(_gpar.device_info(self._h, i)) for i in range(n)]
        _live.add(self)

    # ---- devices ----
    def device(self, spec=None):
        """The device index of spec: an int, a Device, 'cpu' (or 'host'), 'cuda', 'cuda:N',
        'opencl:N', 'gpu' (the first GPU), or None (the first GPU, else the CPU); gpar.Error
        GPAR_ENODEV when there is no such device."""
        if isinstance(spec, Device):
            return spec.index
        if isinstance(spec, int):
            if not -1 <= spec < len(self.devices):
                _gpar.refuse(_gpar.GPAR_ENODEV, "device %d: this engine has %d devices" % (spec, len(self.devices)))
            return spec
        if spec is None or spec == "gpu":
            for d in self.devices:
                if d.type == "gpu":
                    return d.index
            if spec == "gpu":
                _gpar.refuse(_gpar.GPAR_ENODEV, "no GPU in this engine")
            spec = "cpu"
        if spec in ("cpu", "host"):
            return self.cpu
        backend, _, num = str(spec).partition(":")
        want = int(num) if num.isdigit() else 0 if not num else -1
        for d in self.devices:
            if d.backend == backend and d.backend_index == want:
                return d.index
        _gpar.refuse(_gpar.GPAR_ENODEV, "no device %r in this engine (%s)" % (spec, ", ".join(
            "%s:%d" % (d.backend, d.backend_index) for d in self.devices)))

    @property
    def cpu(self):
        """The CPU device's index (host memory lives there)."""
        for d in self.devices:
            if d.backend == "host":
                return d.index
        _gpar.refuse(_gpar.GPAR_ENODEV, "this engine has no CPU device")

    # ---- waits, counters ----
    def wait_all(self):
        """Wait for everything submitted (the GIL is released meanwhile)."""
        _gpar.wait_all(self._h)

    def stats(self):
        return _gpar.stats(self._h)

    def config(self):
        return _gpar.config(self._h)

    def fault_inject(self, kind, n):
        _gpar.fault_inject(self._h, kind, n)

    def graph(self):
        """A Graph: `with engine.graph() as g:` records this thread's ops until the block ends."""
        return Graph(self)

    # ---- lifetime ----
    def close(self, force=False):
        """Drain and shut down; later calls with this engine or its arrays raise gpar.Error.
        Every buffer's memory goes with the engine, so while a DLPack consumer (a NumPy or torch
        view) still holds one of its arrays this refuses (GPAR_EINVAL), unless force=True; at
        exit the engines close regardless."""
        if self._h is not None and self._exports and not force:
            _gpar.refuse(_gpar.GPAR_EINVAL, "close: %d DLPack export(s) of this engine's arrays are still "
                         "alive (their consumers view its memory): drop them first, or close(force=True)"
                         % self._exports)
        if self._h is not None:
            h, self._h = self._h, None
            _live.discard(self)
            _gpar.shutdown(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<gpar.Engine %s>" % ", ".join("%s:%d" % (d.backend, d.backend_index) for d in self.devices)

    @property
    def handle(self):
        if self._h is None:
            _gpar.refuse(_gpar.GPAR_ESHUTDOWN, "engine is shut down")
        return self._h


class Graph:
    """A recorded op graph (gpar_graph_*): ops issued on this thread inside `with` are recorded,
    not run; launch() replays them all (one launch per device part)."""

    def __init__(self, engine):
        self.engine = engine
        self._h = None

    def __enter__(self):
        _gpar.graph_begin(self.engine.handle)
        return self

    def __exit__(self, et, ev, tb):
        h = _gpar.graph_end(self.engine.handle)
        if et is not None:
            _gpar.graph_destroy(h)
            return False
        self._h = h
        return False

    def launch(self):
        _gpar.graph_launch(self._require())

    def info(self):
        return _gpar.graph_info(self._require())

    def destroy(self):
        if self._h is not None:
            h, self._h = self._h, None
            _gpar.graph_destroy(h)

    def _require(self):
        if self._h is None:
            _gpar.refuse(_gpar.GPAR_EINVAL, "the graph is not recorded yet, or destroyed")
        return self._h

    def __del__(self):
        try:
            self.destroy()
        except Exception:  # noqa: BLE001 - the engine may be shut down already
            pass


def default_engine():
    """The process's shared engine (every backend built), made at first use."""
    global _default
    if _default is None or _default._h is None:
        _default = Engine()
    return _default


@atexit.register
def _close_all():
    for e in list(_live):
        try:
            e.close(force=True)
        except Exception:  # noqa: BLE001 - exit: report nothing
            pass
    _gpar.drain()
