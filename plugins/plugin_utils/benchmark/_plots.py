# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark's plots (PNG, matplotlib imported when they are drawn): throughput and latency
percentiles against concurrency, and a run against its baseline."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import (
    LATENCIES,
    METRICS,
    BenchmarkError,
    metric,
)

PNG_SIZE = (1000, 600)  # pixels of every plot (10 x 6 inches at 100 dpi)
PNG_DPI = 100


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BenchmarkError(
            "the plots need matplotlib on the controller: pip install matplotlib (requirements.txt pins it)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _series(points, scenarios=None):
    """{scenario: points sorted by concurrency}, only of ``scenarios`` when given."""
    out = {}
    for p in points:
        if scenarios is None or p["scenario"] in scenarios:
            out.setdefault(p["scenario"], []).append(p)
    return {k: sorted(v, key=lambda p: p["concurrency"]) for k, v in out.items()}


def _colours(points):
    """One colour per scenario, the same in every panel."""
    names = sorted({p["scenario"] for p in points})
    return {name: "C%d" % (i % 10) for i, name in enumerate(names)}


def _concurrency_axis(ax, points):
    """Concurrency on a log2 axis (a sweep doubles it), ticked at the concurrencies that ran."""
    ticks = sorted({p["concurrency"] for p in points})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("concurrency")


def _figure(plt, rows=1, cols=1):
    size = (PNG_SIZE[0] / PNG_DPI, PNG_SIZE[1] / PNG_DPI)
    fig, axes = plt.subplots(rows, cols, figsize=size, dpi=PNG_DPI, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=PNG_DPI, format="png")
    plt.close(fig)
    return path


def plot_throughput(points, path, title=""):
    """Output tokens/s and requests/s against concurrency, a line per scenario, saved to ``path``."""
    plt = _pyplot()
    fig, (left, right) = _figure(plt, 1, 2)
    colours = _colours(points)
    for scenario, series in _series(points).items():
        x = [p["concurrency"] for p in series]
        colour = colours[scenario]
        left.plot(x, [p["output_throughput"] for p in series], marker="o", color=colour, label=scenario)
        right.plot(x, [p["request_throughput"] for p in series], marker="o", color=colour, label=scenario)
    for ax, label in ((left, "output tokens/s"), (right, "requests/s")):
        _concurrency_axis(ax, points)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title or "Throughput against concurrency")
    return _save(plt, fig, path)


def plot_latency(points, path, title=""):
    """p50, p90 and p99 of each latency against concurrency, a panel per latency, saved to ``path``."""
    plt = _pyplot()
    fig, axes = _figure(plt, 2, 2)
    colours = _colours(points)
    for ax, lat in zip(axes, LATENCIES, strict=True):
        for scenario, series in _series(points).items():
            x = [p["concurrency"] for p in series]
            for p_name, style, marker in (("p50", "-", "o"), ("p90", "--", "s"), ("p99", ":", "^")):
                ax.plot(
                    x,
                    [p[lat][p_name] for p in series],
                    style,
                    marker=marker,
                    color=colours[scenario],
                    label="%s %s" % (scenario, p_name),
                )
        ax.set_title(lat[:-3].upper())
        _concurrency_axis(ax, points)
        ax.set_ylabel("ms")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(title or "Latency percentiles against concurrency")
    return _save(plt, fig, path)


def plot_baseline(points, baseline, path, title=""):
    """Output throughput, p99 TTFT and p99 TPOT of this run and of the ``baseline`` points (by name),
    saved to ``path``."""
    plt = _pyplot()
    fig, axes = _figure(plt, 1, 3)
    # The baseline's points of the scenarios this run has, in the same colour, dashed.
    scenarios = {p["scenario"] for p in points}
    base_points = [p for p in baseline.values() if p.get("scenario") in scenarios]
    colours = _colours(points)
    for ax, name in zip(axes, ("output_throughput", "ttft_ms.p99", "tpot_ms.p99"), strict=True):
        for label, group, style, marker in (("run", points, "-", "o"), ("baseline", base_points, "--", "x")):
            for scenario, series in _series(group, scenarios).items():
                ax.plot(
                    [p["concurrency"] for p in series],
                    [metric(p, name) for p in series],
                    style,
                    marker=marker,
                    color=colours[scenario],
                    label="%s %s" % (scenario, label),
                )
        ax.set_title("%s (%s)" % (name, METRICS[name][1]))
        _concurrency_axis(ax, points + base_points)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(title or "This run against the baseline")
    return _save(plt, fig, path)
