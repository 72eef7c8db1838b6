"""Serving throughput: episodes/s of model policies with many episodes in flight.

1. ``openai`` against a local OpenAI-compatible stub (``tests/fixtures/openai_server.py``, started
   here in its own process on 127.0.0.1, bounded, stops by itself) that answers a fixed valid
   episode — a ``zoom_in`` tool call, then the answer — after an injected latency (200 ms per
   request), at ``openai.concurrency`` 1, 4, 16, 64. Peer: the ideal of a client that costs
   nothing, ``concurrency / (turns × latency)`` episodes/s; the ratio is measured / ideal.
2. ``vlm`` on the tiny offline Qwen3-VL (``urbex make-tiny-model``), CPU, at ``vlm.batch_size``
   1, 4, 16 (lockstep batches). Peer: perfect batching, ``batch_size ×`` the batch-1 rate.

Both through :func:`urbex.eval.runner.evaluate` end to end (episodes, metrics, Parquet shards;
warehouse refresh off), each level a fresh run over distinct queries of one split.

    .venv/bin/python benchmarks/bench_serving.py           # 10 blocks, 16/64/128/256 episodes
    .venv/bin/python benchmarks/bench_serving.py --quick   # 4 blocks, 8/16/32/64 episodes

The last line is one JSON object of the figures: ``openai_eps_c<N>`` and ``openai_vs_ideal_c<N>``
per concurrency, ``openai_png_vs_ideal_c16``, ``vlm_eps_b<N>`` and ``vlm_vs_ideal_b<N>`` per
batch size (absent with ``--skip-vlm``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_eval import build_project

from urbex.annotations.splits import load_queries
from urbex.config import EnvParams, Params, VLMParams
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec

LATENCY_S = 0.2
TURNS = 2
CONCURRENCY = (1, 4, 16, 64)
BATCHES = (1, 4, 16)
SPLIT = "test_no"


class StubProcess:
    """``python -m tests.fixtures.openai_server`` in a child process (run from the repository
    root, where ``tests`` is importable); its URL and final counts."""

    def __init__(self, latency_s: float, turns: int, lifetime_s: float) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fixtures.openai_server",
                f"--latency-s={latency_s}",
                f"--turns={turns}",
                f"--max-lifetime-s={lifetime_s}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if line[:1] != ["base_url"]:
            raise RuntimeError(f"stub server failed to start: {line}")
        self.base_url = line[1]
        self.summary = ""

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.summary = self.proc.stdout.read().strip()
        self.proc.wait(timeout=30)
        return self.summary


def _openai_run(assets: Path, url: str, c: int, n: int, image_format: str) -> tuple[int, float]:
    """``(episodes, ep/s)`` of one ``evaluate`` at concurrency ``c`` over ``n`` queries."""
    p = Params(
        paths={"assets": assets},
        eval={"workers": 1, "chunk_size": 16, "limit": n, "sample_seed": c},
        openai={
            "base_url": url,
            "api_key_env": None,
            "concurrency": c,
            "image_format": image_format,
        },
    )
    t = time.perf_counter()
    r = evaluate(
        p,
        RunSpec.from_params(p, policy="openai", split=SPLIT),
        run_id=f"serve-openai-c{c}-{image_format}-{time.time_ns()}",
        progress=False,
    )
    return r.n_played, r.n_played / (time.perf_counter() - t)


def bench_openai(assets: Path, sizes: dict[int, int]) -> dict[str, float]:
    print(
        f"== openai vs the local stub: {TURNS} turns per episode (zoom_in, answer), "
        f"{LATENCY_S * 1000:.0f} ms per request, image_format jpeg, views 768/512 px"
    )
    print(f"{'concurrency':>11s} {'eps':>5s} {'ep/s':>8s} {'ideal ep/s':>10s} {'ratio':>6s}")
    ratios = {}
    figures: dict[str, float] = {}
    stub = StubProcess(LATENCY_S, TURNS, lifetime_s=900)
    try:
        for c in CONCURRENCY:
            n, eps = _openai_run(assets, stub.base_url, c, sizes[c], "jpeg")
            ideal = c / (TURNS * LATENCY_S)
            ratios[c] = eps / ideal
            figures[f"openai_eps_c{c}"], figures[f"openai_vs_ideal_c{c}"] = eps, eps / ideal
            print(f"{c:11d} {n:5d} {eps:8.2f} {ideal:10.2f} {eps / ideal:6.2f}")
        n, png = _openai_run(assets, stub.base_url, 16, sizes[16], "png")
    finally:
        summary = stub.close()
    verdict = "PASS" if ratios[16] >= 0.8 else "MISS"
    ideal16 = 16 / (TURNS * LATENCY_S)
    print(
        f"  png instead of jpeg at concurrency 16: {png:.2f} ep/s over {n} episodes, "
        f"ratio {png / ideal16:.2f} (PNG encoding costs the client CPU)"
    )
    print(f"  stub: {summary}")
    print(f"  target >= 0.8 x ideal at concurrency 16: {verdict}")
    return {**figures, "openai_png_vs_ideal_c16": png / ideal16}


def bench_vlm(assets: Path, root: Path, n: int) -> dict[str, float]:
    from urbex.train.corpus import protocol_corpus
    from urbex.train.tiny import make_tiny_model

    t0 = time.perf_counter()  # a BPE of the protocol: prompts of hundreds of tokens, not bytes
    corpus = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=200))
    tiny = make_tiny_model(root / "tiny", seed=0, corpus=corpus)
    print(
        f"== vlm: tiny Qwen3-VL, protocol BPE, on CPU (built in {time.perf_counter() - t0:.1f} s), "
        f"{n} episodes of at most 2 turns, 16 new tokens per turn, greedy"
    )
    print(f"{'batch_size':>10s} {'eps':>5s} {'ep/s':>8s} {'ideal ep/s':>10s} {'ratio':>6s}")
    base = None
    figures: dict[str, float] = {}
    for b in (0, *BATCHES):  # 0: an untimed warm-up episode (first-call costs of torch)
        p = Params(
            paths={"assets": assets},
            eval={"workers": 1, "chunk_size": 16, "limit": n if b else 1, "sample_seed": 0},
            env={"max_turns": 2, "global_view_size": [128, 128], "zoom_size": [128, 128]},
            vlm={"checkpoint": tiny, "batch_size": max(b, 1), "max_new_tokens": 16},
        )
        t = time.perf_counter()
        r = evaluate(
            p,
            RunSpec.from_params(p, policy="vlm", split=SPLIT),
            run_id=f"serve-vlm-b{b}-{time.time_ns()}",
            progress=False,
        )
        wall = time.perf_counter() - t
        if b == 0:
            continue
        eps = r.n_played / wall
        base = eps if base is None else base
        ideal = b * base
        print(f"{b:10d} {r.n_played:5d} {eps:8.2f} {ideal:10.2f} {eps / ideal:6.2f}")
        figures[f"vlm_eps_b{b}"], figures[f"vlm_vs_ideal_b{b}"] = eps, eps / ideal
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer blocks and episodes (~1 min)")
    ap.add_argument("--skip-vlm", action="store_true", help="only the openai table")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        blocks = 4 if args.quick else 10
        assets = build_project(
            Path(tmp), blocks=blocks, size=100.0, density=10.0, targets=40, per_target=3
        )
        n_split = len(load_queries(Params(paths={"assets": assets}).layout, SPLIT))
        print(
            f"project: {blocks} blocks of 100 m, {n_split} {SPLIT} queries "
            f"(built in {time.perf_counter() - t0:.1f} s); cores: {os.cpu_count()}"
        )
        per = {1: 8, 4: 16, 16: 32, 64: 64} if args.quick else {1: 16, 4: 64, 16: 128, 64: 256}
        figures = bench_openai(assets, {c: min(k, n_split) for c, k in per.items()})
        if not args.skip_vlm:
            figures |= bench_vlm(assets, Path(tmp), min(16 if args.quick else 32, n_split))
    print(
        "ep/s: episodes / wall time of evaluate() (queries, episodes, metrics, Parquet); "
        "ideal: openai concurrency / (turns x latency), vlm batch_size x the batch-1 rate"
    )
    print(json.dumps(figures))  # the last line: the figures, compared run to run


if __name__ == "__main__":
    main()
