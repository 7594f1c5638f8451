"""What the measured-module fits share (bench/fit_dsa_prefill.py, bench/fit_gdn_prefill.py): reading NVIDIA
aiconfigurator's parquet tables from a checkout or a bare clone, the commit they were read at, and the fit itself, a
least-squares fit of the relative error with a floor held at 0 or above. Needs pandas with a parquet engine; the app
never imports this."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import numpy as np

DATA = "aic-core/src/aiconfigurator_core/systems/data"


class AicTables:
    """The tables of one aiconfigurator checkout (or bare clone) at its HEAD."""

    def __init__(self, repo: Path) -> None:
        self.repo = Path(repo)
        got = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "HEAD"], capture_output=True, text=True)
        self.commit = got.stdout.strip()
        if got.returncode or not self.commit:
            raise SystemExit(f"{self.repo} is not a git checkout or clone of ai-dynamo/aiconfigurator")

    def read(self, rel: str):
        """The table at ``rel`` (a path under the repository root) as a DataFrame; None where HEAD has none."""
        import pandas as pd

        path = self.repo / rel
        if path.is_file():
            return pd.read_parquet(path)
        blob = subprocess.run(["git", "-C", str(self.repo), "show", f"HEAD:{rel}"], capture_output=True)
        return pd.read_parquet(io.BytesIO(blob.stdout)) if blob.returncode == 0 else None


def fit_relative(columns: list[np.ndarray], y: np.ndarray) -> list[float]:
    """Coefficients ``c`` minimising ``sum((sum_i c_i x_i) / y - 1)^2``; ``columns[0]`` is the floor (ones), held at
    0 or above (refitted without it where the free fit makes it negative)."""
    a = np.vstack(columns).T / y[:, None]
    coef = np.linalg.lstsq(a, np.ones_like(y), rcond=None)[0]
    if coef[0] < 0:
        coef = np.array([0.0, *np.linalg.lstsq(a[:, 1:], np.ones_like(y), rcond=None)[0]])
    return [float(c) for c in coef]
