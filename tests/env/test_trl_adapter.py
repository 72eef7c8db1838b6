"""The trl adapter: one real GRPOTrainer step on a tiny offline Qwen3-VL with the real tools."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

from tests.fixtures.scripted import scripted_generate
from urbex.config import EnvParams
from urbex.env.trl_adapter import answer_reward, grpo_rows, make_environment_class

SMALL = EnvParams(global_view_size=(64, 64), zoom_size=(64, 64), oblique_size=(64, 64), max_turns=3)


def test_environment_class_public_methods_are_the_tools(city):
    cache, index, _ = city
    cls = make_environment_class(SMALL, lambda sid: cache, index)
    names = {
        n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_")
    }
    assert names == {"reset", "get_reward", "landmark_query", "zoom_in", "oblique_render"}


def test_environment_class_tools_return_content_blocks(city):
    cache, index, queries = city
    cls = make_environment_class(SMALL, lambda sid: cache, index)
    env = cls()
    row = grpo_rows(queries[:1], lambda sid: cache, SMALL)[0]
    assert env.reset(**row) is None
    assert "Merton Hall" in env.landmark_query(name="merton hall", view_id="global")
    out = env.zoom_in(view_id="global", bbox_2d=[0, 0, 500, 500])
    assert out[0]["type"] == "image" and out[0]["image"].size == (64, 64)
    assert 'view "zoom_1"' in out[-1]["text"]
    bad = env.zoom_in(view_id="oblique_9", bbox_2d=[0, 0, 5, 5])
    assert isinstance(bad, str) and "not a known view" in bad
    # budget 3: two tool turns used; the third call ends the episode (truncated), later ones refused
    env.landmark_query(name="nowhere", view_id="global")
    assert "episode is over" in env.zoom_in(view_id="global", bbox_2d=[0, 0, 5, 5])
    assert env.get_reward() == pytest.approx(env.env.episode_return)
    assert answer_reward(["<answer>{}</answer>"], environments=[env]) == [0.0]


def test_environment_tools_judge_malformed_arguments_like_the_episode_loop(city):
    """trl calls ``tool(**arguments)`` with what the model wrote: a missing or unknown argument
    is an invalid turn of the episode (a turn used, the penalty paid), not a TypeError."""
    cache, index, queries = city
    env = make_environment_class(SMALL, lambda sid: cache, index)()
    env.reset(**grpo_rows(queries[:1], lambda sid: cache, SMALL)[0])
    out = env.zoom_in(view_id="global")  # bbox_2d missing
    assert isinstance(out, str) and "bbox_2d" in out
    out = env.landmark_query(name="merton hall", view_id="global", colour="red")
    assert isinstance(out, str)
    steps = env.env.steps
    assert [s.valid for s in steps] == [False, False]
    assert env.get_reward() == pytest.approx(-2 * SMALL.invalid_penalty)
    # positional arguments still bind to the documented parameters
    ok = env.zoom_in("global", [0, 0, 500, 500])
    assert ok[0]["type"] == "image" and env.env.steps[-1].valid


def test_answer_reward_scores_final_answer(city):
    cache, index, queries = city
    env = make_environment_class(SMALL, lambda sid: cache, index)()
    q = queries[0]
    env.reset(**q.to_row())
    g = env.env.views["global"]
    box = [round(v) for v in np.clip(g.from_world_box(q.target_box_2d), 0, 1000)]
    completion = [
        {
            "role": "assistant",
            "content": f'<answer>{{"view_id": "global", "bbox_2d": {box}}}</answer>',
        }
    ]
    (r,) = answer_reward([completion], environments=[env])
    assert r > 1.0 and env.env.done
    env.reset(**q.to_row())
    (r_bad,) = answer_reward([[{"role": "assistant", "content": "no idea"}]], environments=[env])
    assert r_bad < 0


def test_answer_reward_scores_a_mark_answer_with_marks_on(city):
    """trl's final message may name a mark shown by a tool view (``env.marks``)."""
    cache, index, queries = city
    params = SMALL.model_copy(update={"marks": SMALL.marks.model_copy(update={"enabled": True})})
    env = make_environment_class(params, lambda sid: cache, index)()
    q = queries[0]
    env.reset(**q.to_row())
    g = env.env.views["global"]
    box = [round(v) for v in np.clip(g.from_world_box(q.target_box_2d), 0, 1000)]
    out = env.zoom_in(view_id="global", bbox_2d=box)
    assert "Marks in" in out[-1]["text"]
    mark = env.env.views["zoom_1"].marks[0].mark_id
    answer_reward(
        [[{"role": "assistant", "content": f'<answer>{{"mark": {mark}}}</answer>'}]],
        environments=[env],
    )
    assert env.env.outcome.answer_mark == mark and env.env.outcome.answered


def test_grpo_trainer_runs_one_step_with_tools(city, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import GRPOConfig, GRPOTrainer

    from urbex.train.tiny import make_tiny_model

    cache, index, queries = city
    path = make_tiny_model(tmp_path / "tiny", seed=0)
    processor = AutoProcessor.from_pretrained(path)
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
    scripted_generate(model, processor.tokenizer)
    provider = lambda sid: cache  # noqa: E731
    rows = grpo_rows([queries[0], queries[-1]], provider, SMALL)
    ds = Dataset.from_list(rows)
    env_cls = make_environment_class(SMALL, provider, index)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=1024,
        max_tool_calling_iterations=SMALL.max_turns - 1,
        max_steps=1,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
    )
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    # what the training forward passes (with grad) receive: images, pixel rows, image tokens
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    seen: list[tuple[int, int, int, int]] = []
    sequences: list[list[int]] = []  # the token rows trained on (padding dropped)

    def spy(module, args, kwargs):
        grid = kwargs.get("image_grid_thw")
        if torch.is_grad_enabled() and grid is not None:
            for ids, mask in zip(kwargs["input_ids"], kwargs["attention_mask"], strict=True):
                sequences.append(ids[mask.bool()].tolist())
            seen.append(
                (
                    int(grid.shape[0]),
                    int(kwargs["pixel_values"].shape[0]),
                    int(grid.prod(dim=1).sum()),
                    int((kwargs["input_ids"] == image_token).sum()),
                )
            )

    hook = model.register_forward_pre_hook(spy, with_kwargs=True)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[answer_reward],
        args=args,
        train_dataset=ds,
        processing_class=processor,
        environment_factory=env_cls,
    )
    trainer.train()
    hook.remove()
    assert trainer.state.global_step == 1
    envs = trainer.environments
    assert len(envs) == 4 and all(e.env.done for e in envs)
    assert all(any(r.tool == "zoom_in" and r.valid for r in e.env.steps) for e in envs)
    # the tool images reach the training forward pass (trl issue 5663 / PR 6286): every rollout
    # brings its global view and its zoom view, as pixel rows and as image tokens (merge 2×2)
    views = sum(len(e.env.views) for e in envs)
    assert views == 8
    assert seen and max(n for n, *_ in seen) == views
    _, rows, grid_rows, tokens = max(seen)
    assert rows == grid_rows and tokens == rows // 4
    returns = sorted(e.env.episode_return for e in envs)
    assert returns[0] < returns[-1]  # good and bad answers differ → non-zero advantages
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert any("lm_head" in n for n in changed)
    assert any("language_model.layers.1" in n for n in changed)
    assert len(changed) >= 0.5 * len(before)
    # what trl trained on is, token for token up to the image-pad runs, the conversation our
    # evaluation loop shows the vlm policy (and SFT trains on): same system prompt and tool
    # schemas, image placement, tool-response turns
    trained = {_collapse_image_pads(processor.tokenizer.decode(s)) for s in sequences}
    assert len(trained) == 4
    ours = set()
    for q in (queries[0], queries[-1]):
        for box in ([200, 200, 800, 800], [0, 0, 5, 5]):
            ours.add(_loop_rendering(processor, cache, index, q, box))
    if not trained <= ours:  # show where the renderings part
        import difflib

        a, b = sorted(trained - ours)[0], min(ours, key=lambda o: -len(o))
        raise AssertionError(
            "\n".join(
                difflib.unified_diff(b.split("\n"), a.split("\n"), "ours", "trl", lineterm="")
            )
        )


def _collapse_image_pads(text: str) -> str:
    import re

    return re.sub(r"(<\|image_pad\|>)+", "<|image_pad|>", text)


def _loop_rendering(processor, cache, index, query, box) -> str:
    """The chat-template text of the episode the scripted model plays, through our own loop."""
    from urbex.env.episode import GroundingEnv
    from urbex.env.play import play_episode
    from urbex.env.policy import PolicyBase
    from urbex.env.trl_adapter import template_tool_schemas

    class Scripted(PolicyBase):
        template_lists_tools = True

        def act(self, messages, images):
            if len(messages) == 2:
                return '<tool_call>\n{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [0, 0, 500, 500]}}\n</tool_call>'
            return f'<answer>{{"view_id": "zoom_1", "bbox_2d": {box}}}</answer>'

    env = GroundingEnv(SMALL, lambda sid: cache, index)
    traj = play_episode(env, Scripted(), query, seed=0)
    text = processor.apply_chat_template(
        list(traj.messages),
        tools=template_tool_schemas(),
        add_generation_prompt=False,
        tokenize=False,
    )
    return text.removesuffix("\n")  # the template's newline after the last <|im_end|>


def test_trl_tool_schemas_come_from_the_same_tool_specs():
    from transformers.utils import get_json_schema

    from urbex.env.tools import TOOLS
    from urbex.env.trl_adapter import make_environment_class

    cls = make_environment_class(None, lambda scene_id: None)
    for name, spec in TOOLS.items():
        fn = get_json_schema(getattr(cls, name))["function"]
        assert fn["name"] == name and fn["description"] == spec.description
        props = fn["parameters"]["properties"]
        assert set(props) == set(spec.parameters["properties"])
        for arg, prop in props.items():
            assert prop["description"] == spec.parameters["properties"][arg]["description"]


def test_rollout_rules_pay_the_tool_bonus_on_a_hit_and_mask_rollouts_out_of_turns(city):
    """``train.tool_bonus: on_hit`` keeps a miss's positive shaping out (penalties stay);
    ``train.mask_budget`` makes a rollout that ran out of turns unscorable (None everywhere)."""
    from urbex.env.trl_adapter import RolloutRules

    cache, index, queries = city
    q = queries[0]
    row = q.to_row()
    on_hit = make_environment_class(
        SMALL, lambda sid: cache, index, rules=RolloutRules(tool_bonus="on_hit")
    )()
    always = make_environment_class(SMALL, lambda sid: cache, index)()
    miss = [
        {
            "role": "assistant",
            "content": '<answer>{"view_id": "global", "bbox_2d": [0, 0, 9, 9]}</answer>',
        }
    ]
    for env in (on_hit, always):
        env.reset(**row)
        g = env.env.views["global"]
        box = [round(v) for v in np.clip(g.from_world_box(q.target_box_2d), 0, 1000)]
        env.zoom_in(view_id="global", bbox_2d=box)  # zoom progress: positive shaping
        env.zoom_in(view_id="nope", bbox_2d=box)  # invalid: a penalty
        answer_reward([miss], environments=[env])
    assert always.get_reward() > on_hit.get_reward()
    assert on_hit.get_reward() == pytest.approx(-SMALL.invalid_penalty)
    masked = make_environment_class(
        SMALL, lambda sid: cache, index, rules=RolloutRules(mask_budget=True)
    )()
    masked.reset(**row)
    for _ in range(2):
        masked.landmark_query(name="merton hall", view_id="global")
    tool_call = [{"role": "assistant", "content": '<tool_call>{"name": "zoom_in"}</tool_call>'}]
    assert answer_reward([tool_call], environments=[masked]) == [None]
    assert masked.env.outcome.stop_reason == "budget" and masked.get_reward() is None
    masked.reset(**row)
    assert answer_reward([miss], environments=[masked])[0] is not None
