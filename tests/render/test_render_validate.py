"""Every rendered object is valid Kubernetes (kubernetes-validate, strict: unknown fields
fail) for every matrix version kubernetes-validate bundles schemas for (1.25+)."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes_validate.utils import all_versions, major_minor

from generator import model
from generator.render import helm
from render_helpers import EXAMPLES, case_id

BUNDLED = {major_minor(v) for v in all_versions()}
VALIDATED = [v for v in model.KUBE_VERSIONS if model.at_least(v, "1.25")]
CASES = [(e, v) for e in EXAMPLES for v in helm.example_versions(e, VALIDATED)]


def test_every_validated_version_is_bundled():
    """No silent skip: each 1.25+ matrix version has its own schema set."""
    assert VALIDATED, "the matrix has no 1.25+ version"
    assert set(VALIDATED) <= BUNDLED, f"kubernetes-validate lacks {sorted(set(VALIDATED) - BUNDLED)}"


@pytest.mark.parametrize(("example", "version"), CASES, ids=[case_id(e, v) for e, v in CASES])
def test_objects_validate_strict(render_cache, example: Path, version: str):
    objs = render_cache.get(example, version)
    assert objs
    errors = []
    for obj in objs:
        try:
            used = kubernetes_validate.validate(obj, version, strict=True)
            assert used == version, f"validated against {used}, wanted {version}"
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {'.'.join(map(str, exc.path))}: {exc.message}")
    assert not errors, "\n".join(errors)
