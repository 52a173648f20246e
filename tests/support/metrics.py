"""Read /metrics the way Prometheus does: prometheus-client's own parser."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """The samples of one scrape, by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for family in self.families.values():
            for sample in family.samples:
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    def value(self, name: str, **labels: str) -> float:
        """The sample `name` with exactly these labels (KeyError naming them when absent)."""
        key = (name, frozenset(labels.items()))
        if key not in self.samples:
            raise KeyError(f"no sample {name}{labels}")
        return self.samples[key]

    def get(self, name: str, **labels: str) -> float:
        """The sample, or 0 when absent (a counter not incremented yet)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum of `name` over the samples that carry at least these labels."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)


def scrape(client: Any, path: str = "/metrics", **headers: Any) -> Scrape:
    response = client.get(path, **headers)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return Scrape(response.content.decode())
