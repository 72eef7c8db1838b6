"""The OpenAI-compatible policy against a canned local HTTP server (127.0.0.1, started here)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from tests.fixtures.stall_server import silent_server, trickle_server
from urbex.agents.openai_api import OpenAIPolicy
from urbex.agents.openai_messages import from_openai_message, to_openai_messages
from urbex.env.protocol import Answer, ToolCall, parse_action
from urbex.errors import ConfigError, PolicyError, PolicyTimeoutError

SECRET = "sk-test-DO-NOT-LEAK-123"


class _Canned:
    """Replies served in order: (status, json body, delay seconds[, headers]); a body that is
    a ``str`` is sent as it is (not JSON)."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, object, float]] = []
        self.requests: list[dict] = []


def _reply(message: dict) -> dict:
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}


@pytest.fixture
def server():
    canned = _Canned()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # silence
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(n))
            canned.requests.append({"path": self.path, "headers": self.headers, "body": body})
            status, payload, delay, *extra = (
                canned.replies.pop(0) if canned.replies else (500, {"error": "none"}, 0)
            )
            if delay:
                time.sleep(delay)
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    canned.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield canned
    httpd.shutdown()
    httpd.server_close()


def _conversation():
    img = Image.new("RGB", (32, 32), (200, 10, 10))
    msgs = [
        {"role": "system", "content": "You are an agent."},
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "text", "text": "Query: the red car"}],
        },
    ]
    return msgs, [img]


def _policy(url, **kw):
    kw.setdefault("sleep", lambda s: None)
    return OpenAIPolicy(base_url=url, model="m", api_key_env="URBEX_TEST_KEY", **kw)


def test_openai_act_tool_call_reply_becomes_valid_tool_call(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    args = {"view_id": "global", "bbox_2d": [100, 100, 400, 300]}
    server.replies.append(
        (
            200,
            _reply(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "zoom_in", "arguments": json.dumps(args)},
                        }
                    ],
                }
            ),
            0,
        )
    )
    pol = _policy(server.url)
    pol.begin_episode(seed=7)
    text = pol.act(*_conversation())
    action = parse_action(text, known_views={"global"})
    assert isinstance(action, ToolCall) and action.name == "zoom_in"
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == f"Bearer {SECRET}"
    body = req["body"]
    assert body["model"] == "m" and body["seed"] == 7
    assert {t["function"]["name"] for t in body["tools"]} == {
        "landmark_query",
        "zoom_in",
        "oblique_render",
        "answer",
    }
    user = body["messages"][1]["content"]
    assert user[0]["type"] == "image_url"
    assert user[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert SECRET not in repr(pol) and SECRET not in str(vars(pol))


def test_openai_act_answer_function_becomes_answer(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies.append(
        (
            200,
            _reply(
                {
                    "role": "assistant",
                    "content": "found it",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {
                                "name": "answer",
                                "arguments": '{"view_id": "global", "bbox_2d": [1, 2, 30, 40]}',
                            },
                        }
                    ],
                }
            ),
            0,
        )
    )
    text = _policy(server.url).act(*_conversation())
    assert isinstance(parse_action(text, known_views={"global"}), Answer)


def test_openai_act_retries_5xx_then_succeeds(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies += [
        (503, {"error": "overloaded"}, 0),
        (429, {"error": "slow down"}, 0),
        (200, _reply({"role": "assistant", "content": "<answer>{}</answer>"}), 0),
    ]
    slept: list[float] = []
    pol = _policy(server.url, backoff_s=0.5, sleep=slept.append)
    assert pol.act(*_conversation()) == "<answer>{}</answer>"
    assert len(server.requests) == 3 and slept == [0.5, 1.0]


def test_openai_act_timeout_is_one_total_deadline_not_one_per_attempt(server, monkeypatch):
    # timeout_s bounds the whole request: the late first attempt uses it up, no retry follows
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies += [(200, _reply({"content": "late"}), 1.0)] * 2
    pol = _policy(server.url, timeout_s=0.3, max_retries=1)
    t = time.monotonic()
    with pytest.raises(PolicyError, match=r"within openai.timeout_s = 0.3 s in total.*Timeout"):
        pol.act(*_conversation())
    assert time.monotonic() - t < 0.9  # a bound (0.3 s + slack), not a benchmark
    assert pol.n_requests == 1


def test_openai_act_honours_retry_after_over_the_backoff(server):
    server.replies += [
        (429, {"error": "slow down"}, 0, {"Retry-After": "3"}),
        (503, {"error": "busy"}, 0, {"retry-after-ms": "250", "Retry-After": "9"}),
        (200, _reply({"content": "hi"}), 0),
    ]
    slept: list[float] = []
    pol = _keyless(server.url, backoff_s=0.5, sleep=slept.append)
    assert pol.act(*_conversation()) == "hi"
    assert slept == [3.0, 0.25] and pol.n_retries == 2  # retry-after-ms comes first


def test_openai_act_honours_the_servers_x_should_retry(server):
    server.replies += [
        (400, {"error": "try again"}, 0, {"x-should-retry": "true"}),
        (503, {"error": "do not"}, 0, {"x-should-retry": "false"}),
    ]
    with pytest.raises(PolicyError, match="HTTP 503"):
        _keyless(server.url).act(*_conversation())
    assert len(server.requests) == 2


def test_openai_act_bad_request_is_not_retried_and_names_the_base_url(server):
    server.replies += [(400, {"error": "messages: invalid"}, 0)] * 3
    pol = _keyless(server.url, max_retries=2)
    with pytest.raises(PolicyError, match=r"HTTP 400: .*messages: invalid") as ei:
        pol.act(*_conversation())
    assert str(ei.value).startswith(server.url + "/chat/completions: ")
    assert len(server.requests) == 1 and pol.n_retries == 0


def test_openai_act_server_down_names_the_base_url_after_its_retries():
    pol = _keyless("http://127.0.0.1:1/v1", max_retries=2, backoff_s=0.01)  # nothing listens
    with pytest.raises(
        PolicyError, match=r"after 3 attempts; last error: APIConnectionError"
    ) as ei:
        pol.act(*_conversation())
    assert "http://127.0.0.1:1/v1/chat/completions" in str(ei.value)
    assert pol.n_requests == 3 and pol.n_retries == 2


def test_openai_act_reply_that_is_not_json_is_a_policy_error(server):
    server.replies.append((200, "<html>proxy error</html>", 0))
    with pytest.raises(PolicyError, match=r"/v1/chat/completions: reply is not JSON.*proxy error"):
        _keyless(server.url).act(*_conversation())
    assert len(server.requests) == 1


def test_openai_act_total_deadline_holds_over_retries_of_a_sleeping_server(server):
    # each attempt: 0.3 s of server time, then 503; real backoff sleeps. Per attempt the client's
    # timeout would allow 1 s and max_retries 20 more: the total still ends at timeout_s.
    server.replies += [(503, {"error": "busy"}, 0.3)] * 20
    pol = _keyless(server.url, timeout_s=1.0, max_retries=20, backoff_s=0.05, sleep=time.sleep)
    t = time.monotonic()
    with pytest.raises(PolicyError, match=r"within openai.timeout_s = 1 s in total") as ei:
        pol.act(*_conversation())
    elapsed = time.monotonic() - t
    assert server.url in str(ei.value)
    assert 0.9 < elapsed < 2.5  # a bound (1 s + slack), not a benchmark
    assert 2 <= pol.n_requests <= 4  # retried, but only while time was left


# ---------------------------------------------------------------------------------------------
# bounded waits: servers that never answer (tests/fixtures/stall_server.py); time assertions are
# generous upper bounds (shared CI machines), far below what an unbounded wait takes
# ---------------------------------------------------------------------------------------------


def _keyless(url, **kw):
    kw.setdefault("sleep", lambda s: None)
    return OpenAIPolicy(base_url=url, model="m", api_key_env=None, **kw)


def test_openai_act_silent_server_costs_timeout_s_in_total_whatever_the_retries():
    # before: 1 s per attempt × 5 attempts + 0.5+1+2+4 s of backoff = 12.5 s
    with silent_server() as url:
        pol = _keyless(url, timeout_s=1.0, max_retries=4, backoff_s=0.5, sleep=time.sleep)
        t = time.monotonic()
        with pytest.raises(PolicyError, match=r"within openai.timeout_s = 1 s in total") as ei:
            pol.act(*_conversation())
        elapsed = time.monotonic() - t
        pol.close()
    assert not isinstance(ei.value, PolicyTimeoutError)  # no episode deadline was given
    assert 0.9 < elapsed < 4.0


def test_openai_act_trickling_server_is_bounded_by_timeout_s():
    # a byte every 50 ms keeps every socket read alive: httpx's per-operation timeouts alone
    # would wait as long as the server trickles (20 s here, forever in the wild)
    with trickle_server(every_s=0.05) as url:
        pol = _keyless(url, timeout_s=1.0, max_retries=2, backoff_s=0.1, sleep=time.sleep)
        t = time.monotonic()
        with pytest.raises(PolicyError, match="in total"):
            pol.act(*_conversation())
        elapsed = time.monotonic() - t
        pol.close()
    assert elapsed < 4.0


def test_openai_act_waits_no_longer_than_the_episode_deadline():
    with silent_server() as url:
        pol = _keyless(url, timeout_s=30.0, max_retries=4, sleep=time.sleep)
        pol.begin_episode(seed=0, deadline=time.monotonic() + 1.0)
        t = time.monotonic()
        with pytest.raises(PolicyTimeoutError, match="episode's deadline"):
            pol.act(*_conversation())
        elapsed = time.monotonic() - t
        pol.close()
    assert 0.9 < elapsed < 4.0  # before: 30 s per attempt, 5 attempts


def test_openai_act_past_the_episode_deadline_sends_nothing(server):
    pol = _keyless(server.url)
    pol.begin_episode(seed=0, deadline=time.monotonic() - 1.0)
    with pytest.raises(PolicyTimeoutError, match="0 attempts"):
        pol.act(*_conversation())
    assert server.requests == []
    pol.begin_episode(seed=1)  # the next episode has no deadline: the request is made
    server.replies.append((200, _reply({"content": "hi"}), 0))
    assert pol.act(*_conversation()) == "hi"


def test_openai_act_no_retry_whose_backoff_ends_past_the_deadline(server):
    server.replies += [(503, {"error": "busy"}, 0)] * 5
    slept: list[float] = []
    pol = _keyless(server.url, timeout_s=2.0, max_retries=4, backoff_s=5.0, sleep=slept.append)
    with pytest.raises(PolicyError, match=r"in total \(1 attempt,.*HTTP 503"):
        pol.act(*_conversation())
    assert slept == [] and len(server.requests) == 1


def test_openai_act_client_error_raises_without_key(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies.append((401, {"error": "bad key"}, 0))
    with pytest.raises(PolicyError, match="HTTP 401") as ei:
        _policy(server.url).act(*_conversation())
    assert SECRET not in str(ei.value)
    assert len(server.requests) == 1  # 4xx is not retried


def test_openai_act_missing_key_env_raises_config_error(server, monkeypatch):
    monkeypatch.delenv("URBEX_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="URBEX_TEST_KEY"):
        _policy(server.url).act(*_conversation())
    assert server.requests == []


def test_openai_keyless_endpoint_sends_no_authorization(server):
    server.replies.append((200, _reply({"content": "hi"}), 0))
    pol = OpenAIPolicy(base_url=server.url, model="m", api_key_env=None)
    assert pol.act(*_conversation()) == "hi"
    assert "Authorization" not in server.requests[0]["headers"]


def test_to_openai_messages_tool_round_trip_uses_tool_role():
    img = Image.new("RGB", (8, 8))
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": 'think <tool_call>{"name": "zoom_in", "arguments": '
            '{"view_id": "global", "bbox_2d": [0, 0, 9, 9]}}</tool_call>',
        },
        {
            "role": "tool",
            "name": "zoom_in",
            "content": [{"type": "image"}, {"type": "text", "text": "new view"}],
        },
        {"role": "assistant", "content": "no action"},
        {"role": "tool", "name": "invalid", "content": [{"type": "text", "text": "Invalid"}]},
    ]
    out = to_openai_messages(msgs, [img, img])
    roles = [m["role"] for m in out]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "user"]
    assert out[2]["tool_calls"][0]["id"] == out[3]["tool_call_id"] == "call_1"
    assert out[2]["content"] == "think"
    assert out[3]["content"] == "new view"
    assert out[4]["content"][1]["type"] == "image_url"
    assert out[6] == {"role": "user", "content": "Invalid"}  # no call to answer: a user turn


def test_to_openai_messages_image_count_mismatch_raises():
    with pytest.raises(ValueError, match="1 image placeholders, got 0"):
        to_openai_messages([{"role": "user", "content": [{"type": "image"}]}], [])


def test_from_openai_message_malformed_arguments_reach_env_as_invalid():
    text = from_openai_message(
        {"tool_calls": [{"function": {"name": "zoom_in", "arguments": "{bad"}}]}
    )
    assert not isinstance(parse_action(text, known_views={"global"}), ToolCall | Answer)


def _assert_tool_calls_answered(messages: list[dict]) -> None:
    """The OpenAI chat contract: an assistant message with ``tool_calls`` is followed directly
    by one ``tool`` message per call id (otherwise the API answers HTTP 400)."""
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            nxt = messages[i + 1 : i + 1 + len(ids)]
            assert [t.get("role") for t in nxt] == ["tool"] * len(ids), (i, messages)
            assert [t["tool_call_id"] for t in nxt] == ids


ZOOM = '{"view_id": "global", "bbox_2d": [100, 100, 400, 300]}'


@pytest.mark.parametrize(
    "message",
    [
        # OpenAI: content null, arguments a JSON string
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "zoom_in", "arguments": ZOOM}}]},
        # vLLM (hermes parser): content "", an index field, reasoning on the side
        {"role": "assistant", "content": "", "reasoning_content": "look north", "tool_calls": [
            {"id": "chatcmpl-tool-1", "index": 0, "type": "function",
             "function": {"name": "zoom_in", "arguments": ZOOM}}]},
        # servers that return parsed arguments (a dict)
        {"role": "assistant", "tool_calls": [
            {"function": {"name": "zoom_in", "arguments": json.loads(ZOOM)}}]},
        # vLLM without a tool parser: Qwen's raw tags in the content
        {"role": "assistant", "content": f'<tool_call>{{"name": "zoom_in", "arguments": {ZOOM}}}</tool_call>'},
        # content as a list of parts
        {"role": "assistant", "content": [{"type": "text", "text":
            f'<tool_call>{{"name": "zoom_in", "arguments": {ZOOM}}}</tool_call>'}]},
    ],
)  # fmt: skip
def test_from_openai_message_real_reply_shapes_parse_as_tool_calls(message):
    action = parse_action(from_openai_message(message), known_views={"global"})
    assert isinstance(action, ToolCall) and action.name == "zoom_in"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": '<answer>{"view_id": "global", "bbox_2d": [1, 2'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function",
             "function": {"name": "zoom_in", "arguments": '{"view_id": "glo'}}]},
    ],
)  # fmt: skip
def test_openai_act_truncated_reply_length_is_an_invalid_action(server, message):
    server.replies.append((200, {"choices": [{"message": message, "finish_reason": "length"}]}, 0))
    pol = OpenAIPolicy(base_url=server.url, model="m", api_key_env=None)
    text = pol.act(*_conversation())
    assert not isinstance(parse_action(text, known_views={"global"}), ToolCall | Answer)


@pytest.mark.parametrize("reply", [{"choices": [{"message": None}]}, {"choices": [None]}])
def test_openai_act_reply_without_message_object_is_policy_error(server, reply):
    server.replies.append((200, reply, 0))
    pol = OpenAIPolicy(base_url=server.url, model="m", api_key_env=None)
    with pytest.raises(PolicyError, match=r"choices\[0\]\.message"):
        pol.act(*_conversation())


def test_openai_key_echoed_by_the_server_never_reaches_errors(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies.append((401, {"error": f"Incorrect API key provided: {SECRET}"}, 0))
    with pytest.raises(PolicyError, match="HTTP 401") as ei:
        _policy(server.url).act(*_conversation())
    assert SECRET not in str(ei.value) and SECRET not in repr(ei.value.args)
    server.replies += [(503, {"error": f"overloaded (key {SECRET})"}, 0)] * 2
    with pytest.raises(PolicyError, match="HTTP 503") as ei:
        _policy(server.url, max_retries=1).act(*_conversation())
    assert SECRET not in str(ei.value)


def test_openai_key_with_surrounding_whitespace_is_stripped(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", f"  {SECRET}\n")  # e.g. read from a secrets file
    server.replies.append((200, _reply({"content": "hi"}), 0))
    assert _policy(server.url).act(*_conversation()) == "hi"
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("bad", ["sk-t\u00e9st-DO-NOT-LEAK", "sk-two words-DO-NOT-LEAK"])
def test_openai_key_not_fit_for_a_header_is_a_config_error_without_the_key(
    server, monkeypatch, bad
):
    monkeypatch.setenv("URBEX_TEST_KEY", bad)
    with pytest.raises(ConfigError, match="URBEX_TEST_KEY") as ei:
        _policy(server.url).act(*_conversation())
    assert "DO-NOT-LEAK" not in str(ei.value) and "DO-NOT-LEAK" not in repr(ei.value)
    assert server.requests == []


def test_openai_backoff_is_capped(server, monkeypatch):
    monkeypatch.setenv("URBEX_TEST_KEY", SECRET)
    server.replies += [(503, {"error": "busy"}, 0)] * 8
    slept: list[float] = []
    with pytest.raises(PolicyError, match="after 8 attempts"):
        _policy(server.url, max_retries=7, backoff_s=1.0, sleep=slept.append).act(*_conversation())
    assert slept == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0]


def test_to_openai_messages_tool_call_without_tool_response_is_sent_as_text():
    # the workflow wrapper re-asks with a plain user turn after an off-order tool call
    img = Image.new("RGB", (8, 8))
    call = f'<tool_call>{{"name": "zoom_in", "arguments": {ZOOM}}}</tool_call>'
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q"}]},
        {"role": "assistant", "content": call},
        {"role": "user", "content": "Rejected: the workflow requires landmark_query now"},
    ]
    out = to_openai_messages(msgs, [img])
    _assert_tool_calls_answered(out)
    assert out[2] == {"role": "assistant", "content": call}


def test_workflow_over_openai_redirect_request_is_valid(server):
    from urbex.agents.workflow import WorkflowPolicy

    def tool_reply(name, args):
        return _reply({"role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]})  # fmt: skip

    server.replies += [
        (200, tool_reply("zoom_in", json.loads(ZOOM)), 0),  # off order: landmark_query is due
        (200, tool_reply("landmark_query", {"name": "Merton Hall", "view_id": "global"}), 0),
    ]
    pol = WorkflowPolicy(OpenAIPolicy(base_url=server.url, model="m", api_key_env=None))
    text = pol.act(*_conversation())
    assert '"landmark_query"' in text and pol.n_redirects == 1
    for req in server.requests:
        _assert_tool_calls_answered(req["body"]["messages"])


def test_openai_image_encoded_once_for_every_thread_and_forgotten_with_it(monkeypatch):
    import gc

    import urbex.agents.openai_api as api

    encoded = []
    real = api.image_data_url
    monkeypatch.setattr(
        api, "image_data_url", lambda im, fmt: encoded.append(1) or real(im, fmt=fmt)
    )
    pol = OpenAIPolicy(base_url="http://127.0.0.1:1/v1", model="m", api_key_env=None, concurrency=4)
    msgs, images = _conversation()
    bodies = []
    threads = [
        threading.Thread(target=lambda: bodies.append(pol.request_body(msgs, images)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
        t.join()  # one after another: each thread finds the first one's URL
    assert len(encoded) == 1 and all(b["messages"] == bodies[0]["messages"] for b in bodies)
    del images[:], bodies[:]
    gc.collect()
    msgs, images = _conversation()
    pol.request_body(msgs, images)  # the next encoding purges the entries of images gone
    assert [ref() for ref, _ in pol._urls.values()] == images


def test_openai_policy_plays_marks_the_request_carries_the_drawn_marks_and_the_list(server, city):
    """With ``env.marks`` on, the openai policy's second request holds the zoom view with its
    marks drawn (yellow tags) and the tool text listing them; an ``answer`` function call that
    names a mark ends the episode on that proposal."""
    import base64
    import io

    import numpy as np

    from urbex.config import EnvParams
    from urbex.env.episode import GroundingEnv
    from urbex.env.play import play_episode
    from urbex.geometry import iou_2d

    cache, index, queries = city
    q = queries[0]
    params = EnvParams(
        global_view_size=(256, 256), zoom_size=(256, 256), oblique_size=(96, 96),
        marks={"enabled": True},
    )  # fmt: skip
    env = GroundingEnv(params, lambda sid: cache, index)
    env.reset(query=q)
    box = np.clip(np.rint(env.views["global"].from_world_box(q.target_box_2d)), 0, 1000)
    box = [int(v) for v in box]
    box = [max(box[0] - 60, 0), max(box[1] - 60, 0), min(box[2] + 60, 1000), min(box[3] + 60, 1000)]
    props = cache.proposals
    mark = int(props.mark_id[int(np.argmax(iou_2d(q.target_box_2d[None], props.box_2d_m)))])
    call = {"name": "zoom_in", "arguments": json.dumps({"view_id": "global", "bbox_2d": box})}
    answer = {"name": "answer", "arguments": json.dumps({"mark": mark})}
    for fn in (call, answer):
        msg = {"role": "assistant", "content": None,
               "tool_calls": [{"id": "c", "type": "function", "function": fn}]}  # fmt: skip
        server.replies.append((200, _reply(msg), 0))
    pol = OpenAIPolicy(base_url=server.url, model="m", api_key_env=None, marks=True)
    traj = play_episode(env, pol, q, seed=0)
    assert traj.outcome.answer_mark == mark and traj.outcome.answered
    tools = {t["function"]["name"]: t for t in server.requests[0]["body"]["tools"]}
    assert "mark" in tools["answer"]["function"]["parameters"]["properties"]
    second = server.requests[1]["body"]["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    text = json.dumps(second)
    assert 'Marks in \\"zoom_1\\"' in text and f" {mark} " in text and tool_msgs
    urls = [
        part["image_url"]["url"]
        for m in second
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    zoom_png = Image.open(io.BytesIO(base64.b64decode(urls[-1].split(",", 1)[1]))).convert("RGB")
    px = np.asarray(zoom_png).reshape(-1, 3)
    yellow = (px[:, 0] > 230) & (px[:, 1] > 200) & (px[:, 2] < 40)  # the marks' outline/tags
    assert yellow.sum() > 20
