"""prometheus-client's metric families and rendering, imported with the first scrape.

Importing prometheus-client costs ~25 ms of ``gw serve``'s start (its package imports its
HTTP exposition servers too), and nothing on the request path needs it: requests only add
numbers to gw's own tallies (gw/telemetry/request_metrics.py); families are built when
``GET /metrics`` is scraped. Attributes of this module load prometheus-client on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.metrics_core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )

    __all__ = [
        "CollectorRegistry",
        "CounterMetricFamily",
        "GaugeMetricFamily",
        "HistogramMetricFamily",
        "Metric",
        "generate_latest",
    ]
else:
    _WHERE = {
        "CollectorRegistry": "prometheus_client",
        "generate_latest": "prometheus_client",
        "CounterMetricFamily": "prometheus_client.metrics_core",
        "GaugeMetricFamily": "prometheus_client.metrics_core",
        "HistogramMetricFamily": "prometheus_client.metrics_core",
        "Metric": "prometheus_client.metrics_core",
    }

    def __getattr__(name: str) -> Any:
        if name not in _WHERE:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
