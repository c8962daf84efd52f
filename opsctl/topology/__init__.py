"""Rack topology: components, NVLink links and the physical parts between them."""

from opsctl.topology.graph import Component, Link, Topology, build_topology, default_cabling_map

__all__ = ["Component", "Link", "Topology", "build_topology", "default_cabling_map"]
