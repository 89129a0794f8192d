"""helm lint --strict is clean for every example; helm 3 renders the same objects as helm 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.render import helm
from render_helpers import EXAMPLES, MATRIX, MATRIX_IDS, VERSIONS, case_id


LINT = [(e, v) for e in EXAMPLES for v in (VERSIONS[0], VERSIONS[-1])]


@pytest.mark.parametrize(("example", "version"), LINT, ids=[case_id(e, v) for e, v in LINT])
def test_helm_lint_strict_is_clean(example: Path, version: str):
    """Oldest and newest matrix version: lint's deprecation checks depend on it."""
    out = helm.lint([example], strict=True, kube_version=version)
    assert "0 chart(s) failed" in out
    assert "[WARNING]" not in out and "[ERROR]" not in out, out


def test_helm3_is_available():
    """No silent skip: the parity test needs bin/helm3 (`make tools`)."""
    assert helm.find_helm(3).is_file()


def key(obj) -> tuple[str, str, str]:
    return obj["apiVersion"], obj["kind"], obj["metadata"]["name"]


@pytest.mark.parametrize(("example", "version"), MATRIX, ids=MATRIX_IDS)
def test_helm3_renders_the_same_objects(render_cache, example: Path, version: str):
    four = sorted(render_cache.get(example, version, major=4), key=key)
    three = sorted(render_cache.get(example, version, major=3), key=key)
    assert [key(o) for o in three] == [key(o) for o in four]
    for a, b in zip(three, four):
        assert a == b, key(a)


def test_helm3_fails_the_same_way():
    messages = []
    for major in (3, 4):
        with pytest.raises(helm.HelmRenderError) as info:
            helm.render(overrides={"handlers": {"job": {"terminationGracePeriodSeconds": 1}}}, helm_binary=helm.find_helm(major))
        messages.append(info.value.message)
    assert messages[0] == messages[1]
