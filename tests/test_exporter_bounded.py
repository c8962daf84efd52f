"""The exporter's HTTP side is bounded (issue 15): concurrent scrapes share one render of the latest
readings, connections are capped, and a client that sends its request too slowly is cut off —
over real sockets, against the exporter serving a simulated HGX tray."""

import socket
import threading
import time
import urllib.request

import pytest

from exporters.server import Exporter, RenderCache
from exporters.tray_poller import TrayPoller, _GpuSlot


@pytest.fixture
def quiet_exporter(sim_exporter, hgx_topology):
    """An exporter whose readings stop changing once every GPU was read (reads an hour apart), so
    that a render is due only when a test makes one due."""

    def serve(**bounds):
        served = sim_exporter(topology=hgx_topology, interval=3600, stale_after=7200)
        served.exporter.cache.max_age_s = 7200
        served.wait_for(lambda s: sum(v for (n, _), v in s.items() if n == "opsctl_gpu_up") == 8)
        # A GPU's reading shows before its round is marked done (the round is set after the read),
        # so a scrape can see all 8 up one render before the round completes: wait for the round,
        # and render it, before a test counts renders.
        slots = [slot for poller in served.exporter.pollers for slot in poller._slots]
        deadline = time.monotonic() + 30
        while any(slot.round is None for slot in slots):
            assert time.monotonic() < deadline, "the first reading round never completed"
            time.sleep(0.05)
        scrape(served.url)
        server = served.exporter.server
        for name, value in bounds.items():
            setattr(server, name, value)
        return served, server

    return serve


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read()


def half_sent(port):
    """A connection that sent the start of a request and never its end."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    return sock


def test_concurrent_scrapes_share_one_render(quiet_exporter):
    served, _ = quiet_exporter()
    cache = served.exporter.cache
    before = cache.renders
    bodies, threads = [], [threading.Thread(target=lambda: bodies.append(scrape(served.url))) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(bodies) == 24 and all(status == 200 for status, _ in bodies)
    assert len({body for _, body in bodies}) == 1 and b"opsctl_gpu_temperature_celsius" in bodies[0][1]
    assert cache.renders == before  # nothing new was read: the cached render served all 24


def test_the_version_is_the_round_every_tray_completed():
    class Poller:
        def __init__(self, done):
            self.done, self.stale_after_s = done, 30.0

        def completed_round(self, moment):
            return self.done

    exporter = Exporter([Poller(7), Poller(6), Poller(7)], port=0)
    assert exporter._version() == 6  # one tray still in round 7: the text waits for it


def test_a_round_is_complete_once_every_gpu_read_it_or_the_next_one_began(hgx_topology):
    poller = TrayPoller("hgx01", "node", None, interval_s=10.0)
    poller._slots = [_GpuSlot(i) for i in range(3)]
    moment = 1005.0  # in round 100
    assert poller.completed_round(moment) == 99  # nothing read yet
    for slot in poller._slots[:2]:
        slot.round = 100
    assert poller.completed_round(moment) == 99  # one GPU still reading round 100
    poller._slots[2].round = 100
    assert poller.completed_round(moment) == 100
    assert poller.completed_round(1015.0) == 100  # round 101 has begun, nobody read it yet


def test_the_cache_renders_once_per_version_and_again_at_the_staleness_bound():
    from prometheus_client import CollectorRegistry

    version, now = [1], [0.0]
    cache = RenderCache(CollectorRegistry(), lambda: version[0], max_age_s=30.0, clock=lambda: now[0])
    for _ in range(50):
        cache.body()
        cache.body(gzipped=True)
    assert cache.renders == 1
    version[0] = 2
    cache.body()
    assert cache.renders == 2
    now[0] = 29.9  # just below the bound: still served
    cache.body()
    assert cache.renders == 2
    now[0] = 30.0  # at the bound: never served that old
    cache.body()
    assert cache.renders == 3


@pytest.mark.slow
def test_many_scrapers_cost_at_most_one_render_a_round(sim_exporter, hgx_topology):
    served = sim_exporter(topology=hgx_topology, interval=0.5)
    served.wait_for(lambda s: sum(v for (n, _), v in s.items() if n == "opsctl_gpu_up") == 8)
    cache = served.exporter.cache
    before, began = cache.renders, time.monotonic()
    stop = time.monotonic() + 3.0

    def hammer():
        while time.monotonic() < stop:
            scrape(served.url)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rounds = (time.monotonic() - began) / 0.5
    assert 1 <= cache.renders - before <= rounds + 2, (cache.renders - before, rounds)


@pytest.mark.slow
def test_half_sent_requests_closed_at_once_cost_no_render(quiet_exporter):
    served, server = quiet_exporter(max_connections=200)
    before = served.exporter.cache.renders
    sockets = [half_sent(served.exporter.port) for _ in range(200)]
    for sock in sockets:
        sock.close()
    status, body = scrape(served.url)
    assert status == 200 and b"opsctl_gpu_up" in body
    assert served.exporter.cache.renders == before


@pytest.mark.slow
def test_one_connection_over_the_cap_is_answered_busy_and_the_cap_frees_up(quiet_exporter):
    # The three idle connections must all be open at once: a request timeout shorter than a loaded
    # machine takes to accept three cut the first off before the third came (it failed so once in
    # about twenty runs beside eight busy processes), and the cap was never reached.
    served, server = quiet_exporter(max_connections=3, request_timeout_s=5.0)
    idle = [half_sent(served.exporter.port) for _ in range(3)]
    deadline = time.monotonic() + 10
    while server.open_connections < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    over = socket.create_connection(("127.0.0.1", served.exporter.port), timeout=10)
    assert over.recv(100).startswith(b"HTTP/1.1 503")
    for sock in idle:  # the server cut each off at its request timeout
        assert sock.recv(100) == b""
    # A closed socket is seen before its handler has given back its place under the cap.
    deadline = time.monotonic() + 10
    while server.open_connections > 0:
        assert time.monotonic() < deadline, "the cut-off connections never freed the cap"
        time.sleep(0.01)
    assert scrape(served.url)[0] == 200
    assert server.refused == 1


@pytest.mark.slow
def test_a_client_that_trickles_its_request_is_cut_off_at_the_request_timeout(quiet_exporter):
    served, server = quiet_exporter(request_timeout_s=1.0)
    sock = socket.create_connection(("127.0.0.1", served.exporter.port), timeout=10)
    sock.sendall(b"GET /metrics HTTP/1.1\r\n")
    sent = 0
    try:
        for _ in range(100):  # one header byte every 0.1 s: each read is in time, the request never is
            sock.sendall(b"X")
            sent += 1
            time.sleep(0.1)
    except OSError:
        pass  # the server closed the connection while we were still sending
    assert sent < 100
    assert scrape(served.url)[0] == 200
