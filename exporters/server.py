"""The running exporter: tray pollers, the burn-in results and an HTTP server for /metrics.

prometheus_client's server answers each scrape on its own thread; scrapes only read the
pollers' latest readings (swapped in whole by the reader threads), so parallel scrapes are safe.
"""

import threading

from prometheus_client import CollectorRegistry, start_http_server

from exporters.burnin_results import BurninResults
from exporters.metrics import RackCollector


class Exporter:
    def __init__(self, pollers, listen="0.0.0.0", port=9400, burnin_path=None, refresh_s=10.0):
        self.pollers = list(pollers)
        self.listen = listen
        self.requested_port = port
        self.burnin = BurninResults(burnin_path)
        self.refresh_s = refresh_s
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(RackCollector(self.pollers, self.burnin))
        self._server = None
        self._stop = threading.Event()

    def start(self):
        """Start reading and serving; OSError when the address cannot be bound."""
        self.burnin.refresh()
        self._server, _ = start_http_server(self.requested_port, addr=self.listen, registry=self.registry)
        for poller in self.pollers:
            poller.start()
        threading.Thread(target=self._refresh_burnin, name="burnin-results", daemon=True).start()
        return self

    @property
    def port(self):
        return self._server.server_port

    def _refresh_burnin(self):
        while not self._stop.wait(self.refresh_s):
            self.burnin.refresh()

    def wait(self, timeout=None):
        """Block until stop() (or the timeout); True when stopped."""
        return self._stop.wait(timeout)

    def stop(self):
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
