"""The exporter's HTTP side is bounded (issue 15): concurrent scrapes share one render of the latest
readings, connections are capped, and a client that sends its request too slowly is cut off —
over real sockets, against the exporter serving a simulated HGX tray."""

import socket
import threading
import time
import urllib.request

import pytest


@pytest.fixture
def quiet_exporter(sim_exporter, hgx_topology):
    """An exporter whose readings stop changing once every GPU was read (reads an hour apart), so
    that a render is due only when a test makes one due."""

    def serve(**bounds):
        served = sim_exporter(topology=hgx_topology, interval=3600, stale_after=7200)
        served.exporter.cache.max_age_s = 3600
        served.wait_for(lambda s: sum(v for (n, _), v in s.items() if n == "opsctl_gpu_up") == 8)
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


def test_a_new_reading_makes_the_next_scrape_render_again(quiet_exporter):
    served, _ = quiet_exporter()
    cache = served.exporter.cache
    scrape(served.url)
    before = cache.renders
    served.exporter.pollers[0].generation += 1  # as a poller does when it publishes a reading
    scrape(served.url)
    scrape(served.url)
    assert cache.renders == before + 1


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
    served, server = quiet_exporter(max_connections=3, request_timeout_s=1.0)
    idle = [half_sent(served.exporter.port) for _ in range(3)]
    deadline = time.monotonic() + 10
    while server.open_connections < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    over = socket.create_connection(("127.0.0.1", served.exporter.port), timeout=10)
    assert over.recv(100).startswith(b"HTTP/1.1 503")
    for sock in idle:  # the server cut each off at its request timeout
        assert sock.recv(100) == b""
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
