"""The running exporter: tray pollers, the burn-in results and an HTTP server for /metrics.

A scrape renders nothing itself. The text is rendered once per reading round, when the round
completes (every GPU of every tray has published its read of it, or the next round has begun:
exporters/tray_poller.py), and its bytes are shared by every scrape until the next round
completes: however many scrape, the exporter renders at most once per reading interval, since a
render between two rounds would show nothing newer. No render is served once it is as old as the
staleness bound (`max_age_s`, the pollers' `stale_after_s`): then the next scrape renders again,
so a GPU's status and reading age never lag more than that. One render runs at a time; scrapes
that arrive during it wait for it and send its bytes. The server holds at most `max_connections`
connections (one more is answered 503 at once, without a thread), closes any connection whose
client has not sent its whole request `request_timeout_s` after it was accepted, however slowly
it sends, and gives up a write that waits that long on a client that does not read —
Prometheus's own default scrape timeout is 10 s.
"""

from __future__ import annotations

import gzip
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from exporters.burnin_results import BurninResults
from exporters.metrics import RackCollector

if TYPE_CHECKING:
    from exporters.tray_poller import TrayPoller

log = logging.getLogger("opsctl.exporter")

MAX_CONNECTIONS = 16
# Prometheus's default scrape_timeout (prometheus.io, Configuration: scrape_config): a scrape
# that has not finished by then is abandoned by Prometheus anyway.
REQUEST_TIMEOUT_S = 10.0
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"


class RenderCache:
    """The latest /metrics text, rendered once per completed reading round and shared by every scrape."""

    def __init__(self, registry: CollectorRegistry, version: Callable[[], Hashable], max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry
        self.version = version  # () -> a value that changes when a reading round completes
        # A render this old is not served, whatever the version says: the staleness bound.
        self.max_age_s = max_age_s
        self.clock = clock
        self.renders = 0  # how many times the text was rendered (benchmarks and tests read it)
        self._lock = threading.Lock()
        self._key: Hashable = None
        self._rendered_at: float | None = None
        self._body = b""
        self._gzipped: bytes | None = None

    def _fresh(self, version: Hashable) -> bool:
        return self._key == version and self._rendered_at is not None and \
            self.clock() - self._rendered_at < self.max_age_s

    def body(self, gzipped: bool = False) -> bytes:
        with self._lock:  # one render at a time; who waited for it gets its bytes
            version = self.version()
            if not self._fresh(version):
                self._body = generate_latest(self.registry)
                self._gzipped = None
                self._key, self._rendered_at = version, self.clock()
                self.renders += 1
            if not gzipped:
                return self._body
            if self._gzipped is None:
                self._gzipped = gzip.compress(self._body, compresslevel=6)
            return self._gzipped


class _MetricsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection: a connection's time is its request's
    server: BoundedMetricsServer  # the server that made this handler

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.request_received(self.connection)  # the client sent its request in time; the answer is ours
        return parsed

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/", "/metrics"):
            self.send_error(404, "only /metrics is served here")
            return
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        body = self.server.cache.body(gzipped)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not worth a line each on stderr
        pass


class BoundedMetricsServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a cap on connections and on each connection's lifetime."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], cache: RenderCache, max_connections: int = MAX_CONNECTIONS,
                 request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.address_family = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)[0][0]
        self.cache = cache
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self._open: dict[socket.socket, float | None] = {}  # socket -> the monotonic time its request must have arrived by (None once it has)
        self._open_lock = threading.Lock()
        self.refused = 0  # connections answered 503 because max_connections were open
        super().__init__(address, _MetricsHandler)
        self._reaper = threading.Thread(target=self._reap, name="exporter-reaper", daemon=True)
        self._reaper.start()

    # A TCP server's requests are sockets (the supertypes also allow a UDP server's (data, socket)).
    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        with self._open_lock:
            full = len(self._open) >= self.max_connections
            if not full:
                self._open[request] = time.monotonic() + self.request_timeout_s
        if full:
            self.refused += 1
            try:
                request.settimeout(0.5)
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        request.settimeout(self.request_timeout_s)  # no single read or write waits longer than the whole
        super().process_request(request, client_address)

    def request_received(self, request: socket.socket) -> None:
        with self._open_lock:
            if request in self._open:
                self._open[request] = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A scraper that hangs up before its answer is sent (BrokenPipe, ConnectionReset) is one
        log line, not socketserver's traceback on stderr for each; anything else is still a traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            address = client_address[0] if isinstance(client_address, tuple) and client_address else client_address
            log.info("scraper %s disconnected before its answer was sent (%s)", address,
                     type(error).__name__ if not error.strerror else error.strerror)
            return
        super().handle_error(request, client_address)

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]  # a TCP socket
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def _reap(self) -> None:
        """Close connections whose request is late: a client that sends a byte now and then stops here."""
        while True:
            time.sleep(min(1.0, self.request_timeout_s / 4))
            now = time.monotonic()
            with self._open_lock:
                overdue = [s for s, deadline in self._open.items() if deadline is not None and deadline <= now]
            for sock in overdue:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the handler's read or write; it then closes
                except OSError:
                    pass

    @property
    def open_connections(self) -> int:
        with self._open_lock:
            return len(self._open)


class Exporter:
    def __init__(self, pollers: Iterable[TrayPoller], listen: str = "0.0.0.0", port: int = 9400,
                 burnin_path: str | None = None, refresh_s: float = 10.0, max_connections: int = MAX_CONNECTIONS,
                 request_timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.pollers = list(pollers)
        self.listen = listen
        self.requested_port = port
        self.burnin = BurninResults(burnin_path)
        self.refresh_s = refresh_s
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(RackCollector(self.pollers, self.burnin))
        # Rendered again at the latest when the first GPU could have turned stale since.
        self.cache = RenderCache(self.registry, self._version,
                                 max_age_s=min((p.stale_after_s for p in self.pollers), default=refresh_s))
        self.max_connections = max_connections
        self.request_timeout_s = request_timeout_s
        self._server: BoundedMetricsServer | None = None
        self._stop = threading.Event()

    def _version(self) -> int:
        """The latest reading round every tray has completed: it moves on once a reading interval.
        (What else a render shows — XID events, burn-in results — comes with the next round.)"""
        now = time.monotonic()
        return min((poller.completed_round(now) for poller in self.pollers), default=0)

    def start(self) -> Exporter:
        """Start reading and serving; OSError when the address cannot be bound."""
        self.burnin.refresh()
        self._server = BoundedMetricsServer((self.listen, self.requested_port), self.cache, self.max_connections,
                                            self.request_timeout_s)
        threading.Thread(target=self._server.serve_forever, name="exporter-http", daemon=True).start()
        for poller in self.pollers:
            poller.start()
        threading.Thread(target=self._refresh_burnin, name="burnin-results", daemon=True).start()
        return self

    @property
    def port(self) -> int:
        return self._server.server_port  # type: ignore[union-attr]  # asked once started, as ever

    @property
    def server(self) -> BoundedMetricsServer | None:
        return self._server

    def _refresh_burnin(self) -> None:
        while not self._stop.wait(self.refresh_s):
            self.burnin.refresh()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until stop() (or the timeout); True when stopped."""
        return self._stop.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        # Each tray's XID watcher takes up to one poll to notice; let them notice together.
        stopping = [threading.Thread(target=poller.stop) for poller in self.pollers]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
