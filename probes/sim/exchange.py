"""The simulator's collectives without PyTorch: a small key-value store over TCP (the rendezvous,
on the first tray's rank, as torch.distributed's TCPStore) and the four collectives run through
it on NumPy arrays: every rank publishes its buffer, reads its group's, and reduces or copies
for real, so the results are verified as NCCL's would be. A simulated tray moves only a few KiB
per collective (SimCollectiveDevice.real_bytes), so the store's traffic stays small, and a
README install (no PyTorch) runs the NVLink domain test on a simulated rack.

The store's protocol: a JSON header line per request ({"op": "set"|"get"|"get_all"|"check", "key",
"size", "wait_s"}), then `size` raw bytes for a set; the answer is a JSON line, then the value's
bytes for a get. A get waits in the store up to `wait_s` for its keys, as TCPStore's wait does:
72 ranks polling for the slowest one would spend the machine's CPU on asking. Nothing is
unpickled: a value is bytes.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from typing import Any

import numpy as np

# The longest one request waits in the store: a rank asks again after it, and sees its own deadline.
_WAIT_S = 2.0


class _Handler(socketserver.StreamRequestHandler):
    server: _StoreServer
    # TCP_NODELAY, as the ranks' side has: an answer is a line, then the values, in two writes, and
    # Nagle held the second until the rank's delayed ACK (~40 ms), so each collective call waited that.
    disable_nagle_algorithm = True

    def handle(self) -> None:
        while True:
            line = self.rfile.readline()
            if not line:
                return
            request = json.loads(line)
            store, changed = self.server.values, self.server.changed
            if request["op"] == "set":
                data = self.rfile.read(int(request["size"]))
                with changed:
                    store[request["key"]] = data
                    changed.notify_all()
                self._answer({"ok": True})
            elif request["op"] == "check":
                with changed:
                    present = all(key in store for key in request["keys"])
                self._answer({"ok": present})
            elif request["op"] == "get_all":  # every key's value, or none until all are there
                values = self._wait_for(request["keys"], float(request.get("wait_s", 0.0)))
                if any(v is None for v in values):
                    self._answer({"ok": False})
                else:
                    self._answer({"ok": True, "sizes": [len(v) for v in values if v is not None]})
                    self.wfile.write(b"".join(v for v in values if v is not None))
            else:  # get
                [value] = self._wait_for([request["key"]], float(request.get("wait_s", 0.0)))
                if value is None:
                    self._answer({"ok": False})
                else:
                    self._answer({"ok": True, "size": len(value)})
                    self.wfile.write(value)
            self.wfile.flush()

    def _wait_for(self, keys: list[str], wait_s: float) -> list[bytes | None]:
        """The keys' values once all are set, or as they stand after `wait_s` (None: not set)."""
        store, changed = self.server.values, self.server.changed
        with changed:
            changed.wait_for(lambda: all(key in store for key in keys), timeout=max(0.0, min(wait_s, _WAIT_S)))
            return [store.get(key) for key in keys]

    def _answer(self, answer: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class _StoreServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.values: dict[str, bytes] = {}
        self.changed = threading.Condition()  # notified at every set: a waiting get looks again


class KeyStore:
    """set/check/get of bytes by key; the first rank serves it (is_master), every rank connects."""

    def __init__(self, host: str, port: int, is_master: bool, timeout_s: float) -> None:
        self.server: _StoreServer | None = None
        if is_master:
            self.server = _StoreServer(("0.0.0.0", port))
            threading.Thread(target=self.server.serve_forever, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                # Longer than any wait the store makes before it answers.
                self.socket = socket.create_connection((host, port), timeout=max(1.0, timeout_s) + _WAIT_S)
                break
            except OSError as error:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no store at {host}:{port}: {error}") from None
                time.sleep(0.05)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.socket.makefile("rwb")

    def _ask(self, request: dict[str, Any], data: bytes = b"") -> dict[str, Any]:
        self.file.write(json.dumps(request).encode() + b"\n" + data)
        self.file.flush()
        line = self.file.readline()
        if not line:
            raise ConnectionError("the rendezvous store closed the connection")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def set(self, key: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else value
        self._ask({"op": "set", "key": key, "size": len(data)}, data)

    def check(self, keys: list[str]) -> bool:
        return bool(self._ask({"op": "check", "keys": keys})["ok"])

    def wait_get(self, key: str, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._ask({"op": "get", "key": key, "wait_s": min(_WAIT_S, max(0.0, deadline - time.monotonic()))})
            if answer["ok"]:
                return bytes(self.file.read(int(answer["size"])))
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {key}")

    def wait_get_all(self, keys: list[str], timeout_s: float) -> list[bytes]:
        """Every key's value, in one answer once all are there (one round trip, not one a key)."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._ask({"op": "get_all", "keys": keys,
                                "wait_s": min(_WAIT_S, max(0.0, deadline - time.monotonic()))})
            if answer["ok"]:
                return [bytes(self.file.read(int(size))) for size in answer["sizes"]]
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {len(keys)} rank(s)")

    def close(self) -> None:
        try:
            self.file.close()
            self.socket.close()
        finally:
            if self.server is not None:
                self.server.shutdown()
                self.server.server_close()


class _Done:
    def wait(self, timeout: Any = None) -> bool:
        return True


class NumpyExchange:
    """The collectives of probes/collective.py on NumPy arrays, through the job's KeyStore."""

    def __init__(self) -> None:
        self.store: KeyStore | None = None
        self.rank = 0
        self.world = 1
        self.timeout_s = 120.0
        self.calls: dict[tuple[int, ...], int] = {}

    # --- the rendezvous and the process group ---
    def connect(self, host: str, port: int, rank: int, timeout_s: float) -> KeyStore:
        self.store = KeyStore(host, port, rank == 0, timeout_s)
        self.rank = rank
        return self.store

    def init(self, backend: str, rank: int, world: int, timeout_s: float) -> None:
        self.rank, self.world, self.timeout_s = rank, world, timeout_s

    def destroy(self) -> None:
        pass

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def new_group(self, ranks: list[int]) -> tuple[int, ...]:
        return tuple(ranks)

    # --- arrays ---
    def full(self, n: int, value: float) -> Any:
        return np.full(n, value, dtype=np.float32)

    def chunk_index(self, n: int, count: int) -> Any:
        """[0]*count + [1]*count + … + [n-1]*count."""
        return np.repeat(np.arange(n, dtype=np.float32), count)

    def empty(self, n: int) -> Any:
        return np.empty(n, dtype=np.float32)

    def clone(self, array: Any) -> Any:
        return np.array(array, copy=True)

    def equal(self, a: Any, b: Any) -> bool:
        return bool(np.array_equal(a, b))

    # --- collectives ---
    def _gather(self, array: Any, group: tuple[int, ...] | None) -> list[Any]:
        """Every rank of the group's buffer, in group order (this rank's own included)."""
        assert self.store is not None
        ranks = group if group is not None else tuple(range(self.world))
        call = self.calls.get(ranks, 0)
        self.calls[ranks] = call + 1
        prefix = f"x/{','.join(map(str, ranks))}/{call}"
        data = np.ascontiguousarray(array)
        self.store.set(f"{prefix}/{self.rank}", data.tobytes())
        values = self.store.wait_get_all([f"{prefix}/{r}" for r in ranks], self.timeout_s)
        return [np.frombuffer(value, dtype=data.dtype) for value in values]

    def call(self, op: str, send: Any, recv: Any, group: tuple[int, ...] | None) -> _Done:
        buffers = self._gather(send, group)
        n = len(buffers)
        if op == "all_reduce":
            send[...] = np.sum(buffers, axis=0, dtype=send.dtype)
        elif op == "all_gather":
            recv[...] = np.concatenate(buffers)
        else:
            me = (group if group is not None else tuple(range(self.world))).index(self.rank)
            count = len(send) // n
            if op == "reduce_scatter":
                recv[...] = np.sum([b[me * count:(me + 1) * count] for b in buffers], axis=0, dtype=recv.dtype)
            else:  # all_to_all: chunk `me` of every rank, in rank order
                recv[...] = np.concatenate([b[me * count:(me + 1) * count] for b in buffers])
        return _Done()

    def max_across(self, values: list[float], group: tuple[int, ...] | None = None) -> list[float]:
        buffers = self._gather(np.asarray(values, dtype=np.float64), group)
        return [float(v) for v in np.max(buffers, axis=0)] if values else []
