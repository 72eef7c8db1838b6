"""The policy extension point: the Protocol, PolicyBase's defaults and the batch check."""

from __future__ import annotations

import pytest

from urbex.env.policy import Policy, PolicyBase, check_batch


class _Echo(PolicyBase):
    """Replies with the number of messages and images it was shown."""

    def act(self, messages, images):
        return f"{len(messages)}/{len(images)}"


def test_policy_base_subclass_satisfies_the_protocol():
    p = _Echo()
    assert isinstance(p, Policy)
    assert (p.template_lists_tools, p.max_batch, p.max_concurrency) == (False, 1, 1)


def test_policy_base_without_act_cannot_be_instantiated():
    class NoAct(PolicyBase):
        pass

    with pytest.raises(TypeError, match="act"):
        NoAct()  # type: ignore[abstract]


def test_policy_base_begin_episode_accepts_seed_and_deadline():
    assert _Echo().begin_episode(seed=3, deadline=12.5) is None


def test_act_batch_calls_act_once_per_episode_in_order():
    msgs = [[{"role": "user"}], [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]]
    imgs = [["img"], []]
    assert _Echo().act_batch(msgs, imgs) == ["1/1", "3/0"]


@pytest.mark.parametrize(("n_msgs", "n_imgs"), [(2, 1), (1, 2), (0, 1)])
def test_check_batch_mismatched_lengths_raise(n_msgs, n_imgs):
    with pytest.raises(ValueError, match=f"expected {n_msgs} image lists, got {n_imgs}"):
        check_batch([[]] * n_msgs, [[]] * n_imgs)


def test_check_batch_equal_lengths_pass():
    assert check_batch([[], []], [[], []]) is None
    assert check_batch([], []) is None


def test_an_object_without_act_batch_is_not_a_policy():
    class Half:
        template_lists_tools = False
        max_batch = 1
        max_concurrency = 1

        def begin_episode(self, *, seed, deadline=None):
            pass

        def act(self, messages, images):
            return ""

    assert not isinstance(Half(), Policy)
