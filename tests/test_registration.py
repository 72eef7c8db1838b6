"""``import urbex`` registers urbex/Grounding-v0 with Gymnasium without importing Gymnasium."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import urbex

pytest.importorskip("gymnasium")

ROOT = Path(urbex.__file__).parent.parent


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize(
    "order",
    ["import urbex, gymnasium", "import gymnasium, urbex", "import urbex; import urbex.gym"],
)
def test_registration_happens_in_either_import_order(order):
    code = f"{order}; import gymnasium; print('urbex/Grounding-v0' in gymnasium.registry)"
    assert _run(code) == "True"


def test_registration_import_urbex_leaves_gymnasium_and_numpy_unimported():
    code = "import sys, urbex; print(sorted({'gymnasium', 'numpy'} & set(sys.modules)))"
    assert _run(code) == "[]"
    assert _run("import sys, urbex; print(len(sys.meta_path))") == _run(
        "import sys; print(len(sys.meta_path) + 1)"
    )  # one hook, which leaves once gymnasium is imported
    assert _run("import sys, urbex, gymnasium; print(len(sys.meta_path))") == _run(
        "import sys, gymnasium; print(len(sys.meta_path))"
    )


def test_registration_register_envs_is_idempotent():
    import gymnasium

    from urbex.registration import GROUNDING_ID, register_envs

    register_envs()
    register_envs()
    assert gymnasium.registry[GROUNDING_ID].entry_point == "urbex.gym.grounding:GroundingGymEnv"
