"""output_limit(): a target's catalog max_output_tokens under the policy's clamp."""

from __future__ import annotations

from gw.config.schema import ModelEntry
from gw.execution.output_limit import OutputLimit, output_limit


def entry(max_output_tokens: int | None) -> ModelEntry:
    return ModelEntry(provider="p", model="m", max_output_tokens=max_output_tokens)


def test_without_a_catalog_ceiling_the_policy_ceiling_stands() -> None:
    assert output_limit(None, None, None, "p/m") == OutputLimit(None, None)
    assert output_limit(500, 800, entry(None), "p/m") == OutputLimit(500, 800)


def test_the_lower_of_the_two_ceilings_bounds_a_default() -> None:
    assert output_limit(None, 800, entry(300), "p/m") == OutputLimit(None, 300)
    assert output_limit(None, 200, entry(300), "p/m") == OutputLimit(None, 200)
    assert output_limit(None, None, entry(300), "p/m") == OutputLimit(None, 300)


def test_a_request_above_the_models_ceiling_is_clamped_and_noted() -> None:
    clamped = output_limit(5000, None, entry(300), "p/m")
    assert clamped == OutputLimit(
        300, 300, ("max_tokens 5000 clamped to p/m's max_output_tokens 300",)
    )


def test_a_request_within_it_goes_as_asked() -> None:
    assert output_limit(300, None, entry(300), "p/m") == OutputLimit(300, 300)
