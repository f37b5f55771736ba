"""The chart of bench/models/run.py: per model, each Kiln variant's median time over a peer's
(ONNX Runtime's), one bar per (variant, thread count), with a line at 1.0 (as fast as the peer).
Drawn with matplotlib, without a display.
"""

MISSING = ("matplotlib is not installed (Debian: apt-get install -y python3-matplotlib); "
           "the table is written without the chart")


def available():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_chart(path, ratios, models, variants, thread_counts, titles, peer, subtitle=""):
    """Writes the PNG at `path`. ratios: {(model, threads): {variant: ratio or None}}, each
    over `peer` (its title); a missing ratio (a failed variant) leaves its bar out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(v, t) for v in variants for t in thread_counts]
    width = 0.8 / len(series)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    figure, axes = plt.subplots(figsize=(max(7.0, 1.6 * len(models) + 4), 4.5))
    for i, (variant, threads) in enumerate(series):
        xs, ys = [], []
        for m, model in enumerate(models):
            ratio = ratios.get((model, threads), {}).get(variant)
            if ratio is not None:
                xs.append(m - 0.4 + (i + 0.5) * width)
                ys.append(ratio)
        shade = thread_counts.index(threads) / max(1, len(thread_counts))
        bars = axes.bar(xs, ys, width, label=f"{titles[variant]}, {threads} thread(s)",
                        color=colors[variants.index(variant) % len(colors)],
                        alpha=1.0 - 0.5 * shade, edgecolor="black", linewidth=0.5)
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    axes.axhline(1.0, color="black", linestyle="--", linewidth=1)
    axes.set_xticks(range(len(models)), models)
    axes.set_ylabel(f"median time / {peer}'s (lower is faster)")
    axes.set_title(f"Kiln vs {peer} on the CPU" + (f"\n{subtitle}" if subtitle else ""),
                   fontsize=10)
    # Outside the axes, where no bar can hide behind it.
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    # No Software/date metadata: the file changes only when the numbers do.
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)
