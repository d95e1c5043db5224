"""Sequential calls to the sample calculator, timed: what stays fast while something else
blocks or runs heavy."""

from __future__ import annotations

import time

import httpx

CALC = b'{"arg1": 12.5, "arg2": 7.25, "operation": "plus"}'


def calculator_latencies(
    url: str, key: str, seconds: float, keep_alive: bool = True, interval: float = 0.01
) -> list[float]:
    """Sequential calculator calls for ``seconds``, ``interval`` apart: each one's latency
    (all must be 200).
    ``keep_alive=False``: a new connection per call (a worker that stops closes its idle
    connections, and a call sent on one at that instant is reset, as with any server)."""
    latencies = []
    headers = {"x-api-key": key, "Content-Type": "application/json"}
    limits = httpx.Limits(max_keepalive_connections=None if keep_alive else 0)
    with httpx.Client(base_url=url, timeout=10, limits=limits) as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            began = time.perf_counter()
            answer = client.post("/dev/restapi_sample/calculator", content=CALC, headers=headers)
            latencies.append(time.perf_counter() - began)
            assert answer.status_code == 200, answer.text
            time.sleep(interval)
    return latencies
