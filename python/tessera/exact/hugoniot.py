"""Rankine-Hugoniot jump of a shock for any EOS, the EOS evaluated by Tessera itself
(``tessera eos --dens D --pres P --json``), so a hydro run and its check use the same
equation of state.

For a shock running into the state (rho1, p1, u1), the post-shock state (rho2, p2) obeys
the Hugoniot  e(rho2, p2) - e(rho1, p1) = (p1 + p2) (1/rho1 - 1/rho2) / 2  and the mass flux
j^2 = (p2 - p1) / (1/rho1 - 1/rho2); the shock moves at u1 + j / rho1 (into +x).
(Landau & Lifshitz, Fluid Mechanics, §85; Zel'dovich & Raizer I.II.)
"""
from __future__ import annotations

import json
import math
import subprocess


class EosCli:
    """e(rho, p) and friends from ``tessera eos`` (one process per state, cached)."""

    def __init__(self, exe: str, abar: float, zbar: float, coulomb: int = 1, table=None):
        self.exe, self.abar, self.zbar, self.coulomb, self.table = exe, abar, zbar, coulomb, table
        self._cache = {}

    def state(self, dens: float, pres: float) -> dict:
        key = (dens, pres)
        if key not in self._cache:
            cmd = [self.exe, "eos", "--dens", repr(dens), "--pres", repr(pres), "--abar",
                   repr(self.abar), "--zbar", repr(self.zbar), "--coulomb", str(self.coulomb),
                   "--json"]
            if self.table:
                cmd += ["--table", str(self.table)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(p.stderr.strip())
            self._cache[key] = json.loads(p.stdout)
        return self._cache[key]

    def eint(self, dens: float, pres: float) -> float:
        return float(self.state(dens, pres)["eint"])


def shock(eos: EosCli, rho1: float, p1: float, u1: float, p2: float, tol: float = 1e-10):
    """Post-shock density and the shock speed for pre-shock (rho1, p1, u1) and post-shock
    pressure p2 > p1: returns (rho2, speed)."""
    if not p2 > p1:
        raise ValueError("a shock needs p2 > p1")
    e1 = eos.eint(rho1, p1)

    def h(rho2):
        return eos.eint(rho2, p2) - e1 - 0.5 * (p1 + p2) * (1.0 / rho1 - 1.0 / rho2)

    # h > 0 just above rho1 (the gas at p2 > p1 is hotter) and falls as rho2 grows (colder
    # at p2, more compression work): bracket by growing rho2 in steps of 10 % (a state
    # past the table's cold edge ends the search), then the Illinois variant of regula
    # falsi, which converges superlinearly with few EOS calls.
    a = rho1 * (1.0 + 1e-9)
    fa = h(a)
    b, fb = a, fa
    while fb * fa > 0:
        a, fa = b, fb
        b = b * 1.1
        if b > 50.0 * rho1:
            raise RuntimeError(f"no Hugoniot root below 50 rho1 = {b:g}")
        try:
            fb = h(b)
        except RuntimeError as e:
            raise RuntimeError(f"no Hugoniot root before the EOS failed at rho2 = {b:g}: {e}")
    side = 0
    for _ in range(100):
        c = (a * fb - b * fa) / (fb - fa)
        fc = h(c)
        if abs(b - a) <= tol * c or abs(fc) <= 1e-13 * abs(e1):
            break
        if fc * fb > 0:
            b, fb = c, fc
            if side == -1:
                fa *= 0.5
            side = -1
        else:
            a, fa = c, fc
            if side == +1:
                fb *= 0.5
            side = +1
    rho2 = c
    j = math.sqrt((p2 - p1) / (1.0 / rho1 - 1.0 / rho2))
    return rho2, u1 + j / rho1
