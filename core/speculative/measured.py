"""Speculative decoding from measured acceptance: the speedup of each published draft length at a batch, from
the step-time model's verification cost and the published mean accepted length (:mod:`core.speculative.acceptance`), and
the draft length that pays most there. Where the measured curve flattens, more draft tokens cost verification
and drafting without adding accepted tokens, so the best length stops growing; the constant-alpha closed
form (:func:`core.speculative.optimal_gamma`) keeps climbing and is only the what-if view.

MTP without a published curve is held to the checkpoint's module depth: beyond it the engine reuses the last
module, whose acceptance nobody has measured for that model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.deployment.bundle import Deployment
from core.model import ModelSpec
from core.speculative import acceptance
from core.speculative import closed_form as sd

__all__ = ["GammaAdvice", "MeasuredGamma", "best_measured", "gamma_limit", "measured_speedups", "recommend_gamma"]


@dataclass(frozen=True)
class MeasuredGamma:
    """Each published draft length of one curve at one batch: mean accepted tokens and speedup; the best."""

    curve_id: str
    batch: float
    gammas: tuple[int, ...]
    accepted: tuple[float, ...]
    speedups: tuple[float, ...]

    @property
    def best_gamma(self) -> int:
        """The published draft length with the highest speedup (0 when none beats plain decoding)."""
        i = int(np.argmax(self.speedups))
        return self.gammas[i] if self.speedups[i] > 1.0 else 0

    @property
    def best_speedup(self) -> float:
        return max(max(self.speedups), 1.0)


def measured_speedups(
    d: Deployment,
    curve: acceptance.AcceptanceCurve,
    *,
    batch: float,
    context_len: int,
    draft_cost: float,
) -> MeasuredGamma:
    """The speedup of every draft length ``curve`` publishes at ``batch`` sequences in a replica of ``d``: the
    measured mean accepted length over the step-time model's verification of ``gamma + 1`` tokens per sequence
    plus ``gamma`` draft steps (:func:`core.speculative.batch_speedup`: ``d.draft``'s own, else ``draft_cost``
    target steps)."""
    if not isinstance(curve, acceptance.AcceptanceCurve):
        raise ValueError(f"curve must be an AcceptanceCurve, got {type(curve).__name__}")
    gammas = tuple(sorted(curve.accepted_length))
    speedups = []
    for k in gammas:
        r = sd.batch_speedup(
            d,
            [batch],
            alpha=0.5,  # unused: the measured length replaces the closed form
            gamma=k,
            context_len=context_len,
            draft_cost=draft_cost,
            accepted_tokens=curve.accepted_length[k],
        )
        speedups.append(float(r.speedup[0]))
    return MeasuredGamma(
        curve.id, float(batch), gammas, tuple(float(curve.accepted_length[k]) for k in gammas), tuple(speedups)
    )


def best_measured(d: Deployment, curves, *, batch: float, context_len: int, draft_cost: float) -> MeasuredGamma:
    """Of every published curve for the model and method, the one whose best draft length gives the highest
    speedup at ``batch`` (:func:`measured_speedups` of each; the first listed wins a tie). Curves differ in
    engine, temperature and how far they were measured (SGLang's k = 1 vs a k = 7 card): each is a measured
    option, and the advice is the best of them."""
    curves = tuple(curves)
    if not curves:
        raise ValueError("best_measured needs at least one published acceptance curve")
    found = [measured_speedups(d, c, batch=batch, context_len=context_len, draft_cost=draft_cost) for c in curves]
    return max(found, key=lambda mg: mg.best_speedup)


def gamma_limit(model: ModelSpec, method: str, has_curve: bool) -> int | None:
    """The most draft tokens a page may recommend for ``method`` on ``model`` without a measured curve: MTP's
    module depth (the checkpoint's MTP layers; engines reuse the last module beyond it, at an acceptance
    nobody has published for the model); None (no limit) otherwise or when a curve says what reuse gives."""
    if method != "mtp" or has_curve:
        return None
    return max(1, int(getattr(model, "num_mtp_layers", 0) or 1))


@dataclass(frozen=True)
class GammaAdvice:
    """The draft length the pages, the report and the CLI recommend, and on what ground."""

    gamma: int
    speedup: float
    note: str
    curves: tuple[acceptance.AcceptanceCurve, ...]  # published curves for the model and method
    at_batch1: MeasuredGamma | None  # the best curve's speedups at batch 1 (best_measured)
    limit: int | None  # MTP's module depth when nothing is measured


def recommend_gamma(d: Deployment, method: str, alpha: float, draft_cost: float, context_len: int) -> GammaAdvice:
    """The measured best draft length at batch 1 when a curve is published for ``d.model`` and ``method``, else the
    closed form's with a constant ``alpha``, held to MTP's module depth. Either way the speedup given is the
    step-time model's at batch 1 (a separate draft model, ``d.draft``: its own step), the number the Speculative
    page shows at that length, so the page, the report and the CLI give one speedup per length."""
    if not isinstance(d, Deployment):
        raise ValueError(f"d must be a Deployment, got {type(d).__name__}")
    model = d.model
    curves = tuple(acceptance.curves_for(model.id, method))
    limit = gamma_limit(model, method, bool(curves))
    if curves:
        mg = best_measured(d, curves, batch=1, context_len=context_len, draft_cost=draft_cost)
        return GammaAdvice(
            mg.best_gamma,
            mg.best_speedup,
            f"step-time model at batch 1 (fixed step costs, unlike the low-batch closed form), measured ({mg.curve_id}"
            + (f", the best of {len(curves)} published curves" if len(curves) > 1 else "")
            + ")",
            curves,
            mg,
            None,
        )
    g = int(sd.optimal_gamma(alpha, draft_cost, max_gamma=limit or 16))
    note = f"held to the {limit}-module MTP depth (nothing published beyond)" if limit else "closed form, constant α"
    at1 = sd.batch_speedup(d, [1], alpha=alpha, gamma=g, context_len=context_len, draft_cost=draft_cost)
    return GammaAdvice(g, float(at1.speedup[0]), f"{note}; step-time model at batch 1", curves, None, limit)
