"""Inputs the fuzz tests (test_fuzz_*.py) shrank to, kept as plain regression tests: each
fixture under fixtures/fuzz/ must give findings, never a crash, for check and grace."""

from __future__ import annotations

import pytest

from fuzz_support import FUZZ_FIXTURES, check_bytes, gen_tests_bytes, grace_bytes

# fixture -> (rule, line, col) of the one finding `check` must report (None: no expectation
# beyond the property).
EXPECTED: dict[str, tuple[str, int, int] | None] = {
    "year0-timestamp.yaml": ("JHY001", 1, 1),  # was ValueError: year 0 is out of range
    "control-char.yaml": ("JHY001", 1, 2),  # was a two-line finding (ReaderError text)
    "inf-multiplier.yaml": ("JHY006", 2, 3),  # was OverflowError in the grace model
    "nan-multiplier.yaml": ("JHY006", 2, 3),  # was ValueError in `grace`
    "inf-probe-grace.yaml": ("JHY006", 2, 3),  # was OverflowError in JH011
    "bad-bool-tag.yaml": ("JHY001", 2, 6),  # was KeyError: 'maybe'
    "bad-int-tag.yaml": ("JHY001", 1, 4),  # was ValueError: invalid literal for int()
    "bad-float-tag.yaml": ("JHY001", 1, 4),  # was ValueError: could not convert string to float
    "surrogate-key.yaml": ("JHS001", 1, 1),  # was UnicodeEncodeError printing `\ud800`
    "binary-tag.yaml": None,  # !!binary is the string helm sees ("2"), not "b'2'"
    "huge-int-runtime.yaml": None,
    "grace-overflows-float.yaml": None,
}

# Crashes in generator/model/ or generator/rules/ (owned by the lead): strict xfail, so
# the fix there turns them into failures to remove from here.
# Crashes kept as strict xfails until fixed (none left: the schema bounds maxJobRuntimeSeconds
# and runtimeMultiplier, and rules/gen-tests treat ArithmeticError as a value the schema reports).
XFAIL: dict[tuple[str, str], str] = {}


def test_every_fixture_is_listed() -> None:
    assert sorted(p.name for p in FUZZ_FIXTURES.glob("*.yaml")) == sorted(EXPECTED)


def _params(command: str) -> list[object]:
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=XFAIL[(command, name)]))
            if (command, name) in XFAIL else name for name in sorted(EXPECTED)]


@pytest.mark.parametrize("name", _params("check"))
def test_check_fixture(name: str) -> None:
    run = check_bytes((FUZZ_FIXTURES / name).read_bytes())
    want = EXPECTED[name]
    if want is not None:
        rule, line, col = want
        assert f".yaml:{line}:{col}: error {rule} " in run.out, run.out
        assert run.rc == (2 if rule.startswith("JHY") else 1)
    if name == "binary-tag.yaml":
        assert "[image.tag]" not in run.out, run.out


@pytest.mark.parametrize("name", _params("grace"))
def test_grace_fixture(name: str) -> None:
    grace_bytes((FUZZ_FIXTURES / name).read_bytes())


@pytest.mark.parametrize("name", _params("gen-tests"))
def test_gen_tests_fixture(name: str) -> None:
    gen_tests_bytes([(FUZZ_FIXTURES / name).read_bytes()])
