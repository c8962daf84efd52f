"""The Prometheus exporter over the probes' NVML reader, its alert rules and the Grafana
dashboard. Imports `probes` only: a tray gets `probes` and `exporters` alone."""
