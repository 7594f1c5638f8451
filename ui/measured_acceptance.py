"""The Speculative page's measured-acceptance view: the published accepted length per draft length next to the
constant-alpha what-if, and the draft length that pays most at batch 1 from the step-time model
(:mod:`core.speculative.measured`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.deployment.bundle import Deployment
from core.speculative import acceptance
from core.speculative.measured import GammaAdvice, best_measured, recommend_gamma
from ui.charts import lines_chart
from ui.render import chart

__all__ = ["MeasuredView", "measured_view", "show_measured"]


class MeasuredView(GammaAdvice):
    """:class:`core.speculative.measured.GammaAdvice` with the page's "+1 γ" figure."""

    def gain(self, gamma: int, closed_form: float) -> str:
        """The speedup one more draft token adds at batch 1: measured where both lengths are published; the
        closed form's only where nothing is measured and no module depth holds it; else "unmeasured" (a
        curve that stops before gamma + 1, or MTP reusing its module beyond the checkpoint's depth)."""
        mg = self.at_batch1
        if mg is not None and gamma in mg.gammas and gamma + 1 in mg.gammas:
            return f"{mg.speedups[mg.gammas.index(gamma + 1)] - mg.speedups[mg.gammas.index(gamma)]:+.2f}×"
        if mg is not None or (self.limit is not None and gamma >= self.limit):
            return "unmeasured"
        return f"{closed_form:+.2f}×"


def measured_view(d: Deployment, method: str, alpha: float, cost: float, ctx: int) -> MeasuredView:
    """What the page recommends for ``d`` (:func:`core.speculative.measured.recommend_gamma`)."""
    a = recommend_gamma(d, method, alpha, cost, ctx)
    return MeasuredView(a.gamma, a.speedup, a.note, a.curves, a.at_batch1, a.limit)


def show_measured(view: MeasuredView, alpha: float, d: Deployment, method: str, ctx: int, cost: float) -> None:
    """The published curves (accepted tokens per step vs draft tokens) against the constant-α closed form, and
    the best draft length as the batch grows on ``d`` (at ``ctx`` tokens of context, ``cost`` per draft pass), the
    choice engines' dynamic speculation makes per batch."""
    model_name = d.model.name
    if not view.curves:
        return
    rows = [
        pd.DataFrame({"k": list(c.accepted_length), "tokens": list(c.accepted_length.values()), "series": c.id})
        for c in view.curves
    ]
    top = max(max(c.accepted_length) for c in view.curves)
    ks = list(range(1, top + 1))
    rows.append(
        pd.DataFrame(
            {
                "k": ks,
                "tokens": [acceptance.constant_alpha_length(alpha, k) for k in ks],
                "series": f"what if: constant α = {alpha:.2f}",
            }
        )
    )
    points = pd.concat(
        pd.DataFrame(
            {"k": list(c.accepted_length), "tokens": list(c.accepted_length.values()), "label": c.id.split("/")[-1]}
        )
        for c in view.curves
    )
    st.subheader("Measured acceptance: where more draft tokens stop paying")
    chart(
        lines_chart,
        pd.concat(rows),
        x="k",
        y="tokens",
        series="series",
        x_title="speculative tokens per step (γ)",
        y_title="mean accepted tokens per step",
        log_x=False,
        log_y=False,
        y_format=".1f",
        title=f"Published accepted length: {model_name}, {method}",
        subtitle="each curve as published (points; source in its name); the what-if applies one α at every position",
        markers=points,
        width="stretch",
    )
    if view.at_batch1 is not None:
        per_batch = [best_measured(d, view.curves, batch=b, context_len=ctx, draft_cost=cost) for b in (1, 8, 32, 128)]
        st.caption(
            "Best γ as the batch grows (the published lengths, the step-time model's verification cost): "
            + "; ".join(f"batch {int(m.batch)}: γ {m.best_gamma} ({m.best_speedup:.2f}×)" for m in per_batch)
            + ". Engines that choose γ per batch (dynamic speculation) follow this row."
        )
        mg = view.at_batch1
        st.caption(
            f"At batch 1 with the step-time model's verification cost ({mg.curve_id}): "
            + ", ".join(f"γ {k}: {s:.2f}×" for k, s in zip(mg.gammas, mg.speedups, strict=True))
            + f". Best: γ {mg.best_gamma}. Sources and each engine's knobs are listed with every curve in the project's acceptance catalog."
        )
