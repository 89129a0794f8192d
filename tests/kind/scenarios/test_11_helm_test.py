"""`helm test`: passes on a healthy release (schema at the image's revision, every role
Service answers) and fails, with a readable log, once the database is behind the image."""

from __future__ import annotations

import pytest

from jhkind.scenario import Scenario

pytestmark = [pytest.mark.kind, pytest.mark.timeout(600)]


def helm_test(sc: Scenario) -> tuple[int, str]:
    res = sc.helm.run(["test", sc.release, "-n", sc.namespace, "--logs", "--timeout", "120s"], timeout=240)
    return res.rc, res.stdout + res.stderr


def test_11_helm_test_passes_healthy_and_fails_behind(scenario: Scenario) -> None:
    sc, p = scenario, scenario.progress
    with p.phase("install workload:2 (schema revision 4)"):
        sc.install({"image": {"tag": "2"}}).check("helm install")
        sc.wait_handlers_ready(90)
    with p.phase("helm test on the healthy release"):
        rc, out = helm_test(sc)
    p.fact("helm_test_healthy_rc", rc)
    assert rc == 0, out[-3000:]
    assert "http://jh-jobhandlers-web:8080/healthz 200" in out, out[-3000:]
    with p.phase("database rolled back behind the image (revision 4 record removed)"):
        sc.pg.sql(sc.database, "DELETE FROM workload_schema_version WHERE revision = 4")
    with p.phase("helm test on the release whose database is behind"):
        rc, out = helm_test(sc)
    p.fact("helm_test_behind_rc", rc)
    assert rc != 0, "helm test passed on a database behind the image"
    assert "behind this image's head 4" in out, out[-3000:]
    p.note(next((line for line in out.splitlines() if "behind" in line), "")[:200])
