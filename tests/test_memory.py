"""Memory-saving steps between stages must not change what the stages give."""

from __future__ import annotations

from probe import runtime, stages


class _Digesting:
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self.calls = name, calls

    def digest(self, request: object, result: object) -> str:
        self.calls.append(self.name)
        return f"{self.name} digest"


class _WholeResult:
    name = "whole"


def test_digests_keep_the_analyzers_order_whatever_order_they_are_made_in() -> None:
    calls: list[str] = []
    analyzers = [_Digesting("diagnosis", calls), _WholeResult(), _Digesting("collective", calls),
                 _Digesting("advisor", calls)]
    digests, needs_result = stages.diagnose(object(), object(), analyzers)
    assert list(digests) == ["diagnosis", "collective", "advisor"]
    assert digests == {n: f"{n} digest" for n in ("diagnosis", "collective", "advisor")}
    assert needs_result
    assert calls == ["advisor", "collective", "diagnosis"]  # the largest digest is made last


def test_release_memory_can_run_at_any_time() -> None:
    kept = [bytes(1000) for _ in range(1000)]
    runtime.release_memory()
    runtime.release_memory()
    assert len(kept) == 1000
