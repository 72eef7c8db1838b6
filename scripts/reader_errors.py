"""What a reader checkpoint answers on held-out mark look-ups, by kind of error and listing size.

usage: .venv/bin/python scripts/reader_errors.py PARAMS CHECKPOINT [MARKS ...]

``CHECKPOINT`` is a published reader (``assets/checkpoints/reader``) or a staged resume state
(``.staging-<run>/resume/state.pt``, loaded onto ``reader.checkpoint``'s model). For each
listing size (default 2 4 8) it builds 48 held-out look-up drills as ``urbex train-reader``
scores them (the held-out train queries, the params' seed + 1) and sorts each answer's greedy id
under teacher forcing: the right mark, another mark of its listing, an id of an earlier listing
in the same drill, an id that no listing of the drill holds, or not a number.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch

    from urbex.agents.checkpoints import load_local_vlm
    from urbex.config import load_params
    from urbex.env.world import World
    from urbex.train.drill_loss import answer_logits, encode_drills
    from urbex.train.drills import drill_sources
    from urbex.train.reader import held_out, reader_episodes

    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    params = load_params(Path(argv[0]))
    r = params.reader
    source = Path(argv[1])
    sizes = [int(x) for x in argv[2:]] or [2, 4, 8]
    world = World.from_params(params)
    _, held = reader_episodes(world, params.layout, params.sft, params.vlm, params.reader)
    src = drill_sources(held)
    if source.suffix == ".pt":
        if r.checkpoint is None:
            print("reader.checkpoint names no base model to load the state onto", file=sys.stderr)
            return 2
        model, proc = load_local_vlm(params.base_dir / r.checkpoint)
        model.load_state_dict(torch.load(source, weights_only=False)["model"])
    else:
        model, proc = load_local_vlm(source)
    model.eval()
    tok = proc.tokenizer
    for size in sizes:
        kinds: collections.Counter[str] = collections.Counter()
        for d in held_out(
            "mark_lookup", src, r, params.env.marks, level=size, n=48, seed=r.seed + 1
        ):
            blocks, current, earlier = [], set(), set()
            for text, supervised in d.segments:
                if "<tool_response>" in text:
                    earlier |= current
                    current = {int(x) for x in re.findall(r"= (\d+)$", text, re.M)}
                elif supervised:
                    blocks.append((current, set(earlier)))
            with torch.no_grad():
                logits, target, owner = answer_logits(model, encode_drills([d], tok, 4096))
            pred = logits.argmax(-1)
            for k in owner.unique().tolist():
                m = owner == k
                tg, pr = target[m].tolist(), pred[m].tolist()
                digits = [i for i, t in enumerate(tg) if tok.decode([t]).strip().isdigit()]
                if not digits:
                    continue
                i = digits[0]
                said = tok.decode([pr[i]]).strip()
                listed, before = blocks[k]
                if pr[i] == tg[i]:
                    kinds["right mark"] += 1
                elif not said.isdigit():
                    kinds["not a number"] += 1
                elif int(said) in listed:
                    kinds["another listed mark"] += 1
                elif int(said) in before:
                    kinds["an earlier listing's id"] += 1
                else:
                    kinds["an id of no listing"] += 1
        n = sum(kinds.values()) or 1
        print(f"{size} marks: " + ", ".join(f"{k} {v / n:.2f}" for k, v in kinds.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
