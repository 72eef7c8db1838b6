"""Reading drills per second: the reader stage's step, padded in length groups vs one batch.

One training step of the reader stage (``urbex train-reader``) runs the recipe's 3.8 M-parameter
student (``bench_learning``'s ``make-tiny-model`` sizes, random weights) forward and backward
over 16 drills. Look-up listings of 2 marks up to the curriculum's level are mixed in a step, so
one padded batch pads every drill to the longest. :func:`urbex.train.drill_loss.drill_loss`
pads groups of drills of similar length instead (the same loss and gradients, tested); the peer
is the one padded batch it replaced, on the same drills, in the same process, interleaved.

    .venv/bin/python benchmarks/bench_reader.py            # 3 levels × 12 steps (~2 min idle)
    .venv/bin/python benchmarks/bench_reader.py --quick    # a small model, 2 steps per level

Prints per level the padding share of one batch and of the groups, seconds per step of each and
their ratio (one batch / groups: > 1 is faster), then as its LAST line one JSON object:
``reader_level_<L>_step_s``, ``reader_level_<L>_one_batch_s``, ``reader_level_<L>_speedup``,
``reader_level_<L>_pad_one``, ``reader_level_<L>_pad_groups`` per level ``L``, and ``threads``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

#: Marks per look-up listing of the recipe's curriculum (``params-cpu.yaml`` ``reader.levels``).
LEVELS = (8, 16, 32)
#: The recipe's reader drills per step (``reader.batch_size``) and the text families' shares.
BATCH = 16
MIX = {"mark_lookup": 0.6, "name_copy": 0.15, "box_copy": 0.15}


def main() -> int:
    import torch

    from urbex.agents.checkpoints import load_local_vlm
    from urbex.config_env import MarksParams
    from urbex.config_reader import ReaderParams
    from urbex.train.drill_loss import answer_logits, drill_loss, encode_drills, length_groups
    from urbex.train.drills import DrillSources, drill_batch
    from urbex.train.tiny import TinyModelSpec, make_tiny_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per level")
    args = ap.parse_args()
    steps = args.steps or (2 if args.quick else 12)
    marks = MarksParams(enabled=True, describe="attributes", layout="id_last")
    r = ReaderParams(levels=list(LEVELS), spread_from=2, mix={**MIX, "whole_turn": 0.1})
    sources = DrillSources(
        name_pool=("Merton Hall", "Fell Road", "Old Mill Parking", "Quarry Park"),
        names=(("the car north of Merton Hall", "Merton Hall"),),
        query_texts=("Merton Hall (building): box [120, 340, 410, 620], surroundings box "
                     "[80, 300, 450, 660]",),
    )  # fmt: skip
    rng = np.random.default_rng(0)
    total = sum(MIX.values())
    probs = [v / total for v in MIX.values()]

    def batch(level_index: int) -> list:
        counts = dict(zip(MIX, rng.multinomial(BATCH, probs).tolist(), strict=True))
        return drill_batch(rng, sources, r, marks, counts, level_index=level_index)

    spec = (
        TinyModelSpec(hidden_size=64, num_layers=2, vocab_size=1024)
        if args.quick
        else TinyModelSpec(hidden_size=256, num_layers=4, num_heads=8, num_kv_heads=4,
                           head_dim=32, vision_hidden_size=64, vocab_size=4096,
                           tie_embeddings=True)
    )  # fmt: skip
    corpus = [d.text for li in range(len(LEVELS)) for _ in range(8) for d in batch(li)]
    with tempfile.TemporaryDirectory() as tmp:
        path = make_tiny_model(
            Path(tmp) / "tiny", seed=0, spec=spec, corpus=corpus, number_tokens=True
        )
        model, proc = load_local_vlm(path)
    tok = proc.tokenizer
    model.train()

    def one_batch(drills: list) -> None:
        logits, target, _ = answer_logits(model, encode_drills(drills, tok, r.max_length))
        torch.nn.functional.cross_entropy(logits, target).backward()

    def grouped(drills: list) -> None:
        drill_loss(model, drills, tok, r.max_length).backward()

    print(f"student: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, "
          f"{torch.get_num_threads()} torch threads, {BATCH} drills a step, {steps} steps a level")  # fmt: skip
    print("level  pad one  pad groups  one batch s/step  groups s/step  speedup")
    out: dict[str, float] = {"threads": torch.get_num_threads()}
    for li, level in enumerate(LEVELS):
        drills = [batch(li) for _ in range(steps)]
        real = pad_one = pad_groups = 0
        for b in drills:
            lengths = encode_drills(b, tok, r.max_length)["attention_mask"].sum(dim=1).tolist()
            real += sum(lengths)
            pad_one += max(lengths) * len(lengths)
            pad_groups += sum(max(lengths[i] for i in g) * len(g) for g in length_groups(lengths))
        grouped(drills[0])  # warm both paths once
        one_batch(drills[0])
        t = {"one": 0.0, "groups": 0.0}
        for b in drills:  # interleaved, so a load change hits both alike
            for name, fn in (("one", one_batch), ("groups", grouped)):
                model.zero_grad(set_to_none=True)
                t0 = time.perf_counter()
                fn(b)
                t[name] += time.perf_counter() - t0
        one_s, groups_s = t["one"] / steps, t["groups"] / steps
        share_one, share_groups = 1 - real / pad_one, 1 - real / pad_groups
        print(f"{level:5d}  {share_one:7.2f}  {share_groups:10.2f}  {one_s:16.3f}  "
              f"{groups_s:13.3f}  {one_s / groups_s:7.2f}")  # fmt: skip
        out |= {
            f"reader_level_{level}_step_s": groups_s,
            f"reader_level_{level}_one_batch_s": one_s,
            f"reader_level_{level}_speedup": one_s / groups_s,
            f"reader_level_{level}_pad_one": share_one,
            f"reader_level_{level}_pad_groups": share_groups,
        }
    print("pad: share of the padded tokens that are padding; speedup: one batch / groups")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
