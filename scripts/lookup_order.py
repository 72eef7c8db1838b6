"""The same held-out mark look-ups in the drills' order and in an episode's order.

usage: .venv/bin/python scripts/lookup_order.py [--id-only] PARAMS MARKS CHECKPOINT [CHECKPOINT ...]

A look-up drill prints the listing, then the description, then asks for the mark; an episode
gives the description first (the query), then tool texts with the listing, then the answer.
This builds held-out look-ups of ``MARKS`` marks per listing as ``urbex train-reader`` scores
them (the held-out train queries, the params' seed + 1), one answer per sequence, and scores
each checkpoint's greedy answer under teacher forcing with the description after the listing
(drill order) and before it (episode order), and in the episode's order with the answer turn
first repeating the description (``env.marks.restate``): given, or written by the model.
``--id-only`` scores the mark id's tokens alone (the answer's opening given).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: Look-ups scored per order.
N = 150
#: Score only the mark id (``--id-only``): the answer's ``<answer>{"mark": `` is given.
ID_ONLY = False
#: drill: the listing, then the description; episode: the description first; restate: the
#: episode's order with the answer turn's ``<think>`` repeating the description (given);
#: copy: the same, the repetition scored too (every token, as greedy decoding needs it);
#: reminder: the episode's order, the listing's tool text ending with the query again.
ORDERS = ("drill", "episode", "restate", "copy", "reminder")


def main(argv: list[str]) -> int:
    import torch

    from urbex.agents.checkpoints import load_local_vlm
    from urbex.config import load_params
    from urbex.env.world import World
    from urbex.train.drill_loss import answer_logits, length_batches, right_answers
    from urbex.train.drills import Drill, drill_sources
    from urbex.train.reader import held_out, reader_episodes

    global ID_ONLY
    if argv and argv[0] == "--id-only":
        ID_ONLY, argv = True, argv[1:]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    params = load_params(Path(argv[0]))
    level = int(argv[1])
    r = params.reader
    world = World.from_params(params)
    _, held = reader_episodes(world, params.layout, params.sft, params.vlm, r)
    src = drill_sources(held)
    looks: list[tuple[str, str, str]] = []  # (listing turn, description, answer)
    marks = params.env.marks.model_copy(update={"restate": False})  # each order adds its own
    for d in held_out("mark_lookup", src, r, marks, level=level, n=48, seed=r.seed + 1):
        listing = ""
        for i, (text, supervised) in enumerate(d.segments):
            if "<tool_response>" in text:
                listing = text
            elif supervised:
                desc = d.segments[i - 1][0].split("Query: ", 1)[1].split("<|im_end|>")[0]
                looks.append((listing, desc, text))
    looks = looks[:N]

    def drill(order: str, listing: str, desc: str, answer: str) -> Drill:
        query = f"<|im_start|>user\nQuery: {desc}<|im_end|>\n"
        if order == "drill":
            segs = [(listing, False), ("\n", False), (query + "<|im_start|>assistant\n", False)]
        elif order == "episode":
            segs = [(query, False), (listing, False), ("\n<|im_start|>assistant\n", False)]
        elif order == "restate":  # the episode's order, the description repeated (given)
            think = f"\n<|im_start|>assistant\n<think>{desc}</think>"
            segs = [(query, False), (listing, False), (think, False)]
        elif order == "reminder":  # the episode's order, the tool text ends repeating the query
            told = listing.replace("\n</tool_response>", f"\nQuery: {desc}\n</tool_response>")
            segs = [(query, False), (told, False), ("\n<|im_start|>assistant\n", False)]
        else:  # copy: the episode's order, the model repeats the description itself
            segs = [(query, False), (listing, False), ("\n<|im_start|>assistant\n", False)]
            return Drill(
                family="mark_lookup",
                segments=(*segs, (f"<think>{desc}</think>{answer}", True)),
                level=level,
            )
        if ID_ONLY:  # score the mark id's tokens only, the answer's opening given
            head, tail = answer.split(": ", 1)
            return Drill(
                family="mark_lookup",
                segments=(*segs, (head + ": ", False), (tail.split("}", 1)[0], True)),
                level=level,
            )
        return Drill(family="mark_lookup", segments=(*segs, (answer, True)), level=level)

    for ck in argv[2:]:
        model, proc = load_local_vlm(Path(ck))
        model.eval()
        scores = []
        for order in ORDERS:
            right = total = 0
            batches = length_batches([drill(order, *x) for x in looks], proc.tokenizer, 8192, 16)
            for b in batches:
                with torch.no_grad():
                    logits, target, owner = answer_logits(model, b)
                a, n = right_answers(logits.argmax(-1) != target, owner)
                right, total = right + a, total + n
            scores.append(f"{order} order {right}/{total} = {right / max(1, total):.2f}")
        print(f"{ck}, {level} marks: " + ", ".join(scores))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
