"""The three-stage Type Ia burn's NSE table and zone kernel (issue 24, item 3;
verification.md §N): the table (tools/nse_table/make_nse_table.py -> build/nse_table.dat)
against pynucastro's own NSE solver, at nodes and between them through Tessera's lookup in
(Ye, rho, e - qbar); the one-zone isochoric burn (`tessera nse --burn`, the burn unit's own
kernel) at 1e9 and 2e9 g/cm^3 against the relaxation equations and the table's final state.
Needs the Helmholtz and NSE tables (make test builds both)."""
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runner import EXE, ROOT

TABLE = Path(EXE).resolve().parents[1] / "nse_table.dat"  # the build's (make nse-table)
MEV = 6.02214076e23 * 1.602176634e-6  # erg/g per MeV/nucleon


def tessera_json(*args):
    p = subprocess.run([EXE, *map(str, args), "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def pynucastro_nse():
    pyna = pytest.importorskip("pynucastro")
    sys.path.insert(0, str(ROOT / "tools" / "nse_table"))
    import make_nse_table as gen
    nuc = [pyna.Nucleus(n) for n in gen.NUCLEI]
    lib = pyna.TabularWeakLibrary().linking_nuclei(nuc, print_warning=False)
    linked = set()
    for r in lib.get_rates():
        linked.update(r.reactants)
        linked.update(r.products)
    net = pyna.NSENetwork(libraries=[lib], inert_nuclei=[n for n in nuc if n not in linked])
    assert len(net.unique_nuclei) == len(nuc)

    def solve(rho, T, ye):
        comp = net.get_comp_nse(rho, T, ye, use_coulomb_corr=True)
        qbar = sum(x * n.nucbind for n, x in comp.X.items())
        abar = 1.0 / sum(x / n.A for n, x in comp.X.items())
        return abar, qbar
    return solve


def table_rows():
    rows = np.loadtxt(TABLE)
    return {(round(r[0], 4), round(r[1], 4), round(r[2], 4)): r for r in rows}


def test_table_nodes_are_pynucastros_nse(pynucastro_nse):
    # The vectorised solve of the build step against pynucastro's NSENetwork.get_comp_nse
    # (scipy fsolve, the same equations), Coulomb on: measured to 1e-10 relative.
    rows = table_rows()
    for key in [(9.0, 9.8, 0.5), (9.0, 9.8, 0.47), (8.0, 9.6, 0.49), (9.5, 10.0, 0.45),
                (7.0, 9.4, 0.5), (10.0, 10.4, 0.43)]:
        abar, qbar = pynucastro_nse(10**key[0], 10**key[1], key[2])
        r = rows[key]
        assert abs(r[3] / abar - 1) < 1e-8, (key, r[3], abar)
        assert abs(r[4] / qbar - 1) < 1e-8, (key, r[4], qbar)


# Between nodes, at white-dwarf densities and NSE temperatures: the direct solve's
# (T, qbar, abar) against the lookup at its (Ye, rho, e - qbar), e from Tessera's Helmholtz
# EOS with the direct NSE abar. The table's interpolation error (cubic in Ye and log rho,
# Hermite in log T; grid steps 0.005, 0.1, 0.02), measured at 20 points (8 mid-cell, 12
# random, log rho 7-10, log T 9.45-10.35): T to 0.26 %, abar to 0.8 %, qbar to 1e-4 below
# T9 = 10 (worst near Ye = 0.5, where NSE turns from 56Ni to 54Fe and 58Ni; above T9 = 10
# at low density, where matter is dissociated and qbar small, to 9 % of qbar).
@pytest.mark.parametrize("lr, lt, ye", [(9.05, 9.81, 0.4975), (8.55, 9.71, 0.4975),
                                        (8.05, 9.65, 0.4875), (8.37, 9.571, 0.4642),
                                        (7.875, 9.595, 0.4982)])
def test_lookup_between_nodes_agrees_with_pynucastro_to_the_interpolation_error(
        pynucastro_nse, lr, lt, ye):
    rho, T = 10**lr, 10**lt
    abar, qbar = pynucastro_nse(rho, T, ye)
    e = tessera_json("eos", "--dens", rho, "--temp", T, "--abar", abar, "--zbar", ye * abar)["eint"]
    s = tessera_json("nse", "--ye", ye, "--dens", rho, "--emq", e - MEV * qbar)
    assert s["out_of_table"] == 0
    assert abs(s["temp"] / T - 1) < 4e-3, (s["temp"], T)
    assert abs(s["qbar"] / qbar - 1) < 3e-4, (s["qbar"], qbar)
    assert abs(s["abar"] / abar - 1) < 1.2e-2, (s["abar"], abar)
    # The isobaric table (FLASH's nse_pres_hmq_table, inside the flame front) at the same
    # state's (Ye, P, h - qbar): measured at the same 20 points, T to 0.23 %, rho to 0.4 %,
    # qbar to 5.3e-4 below T9 = 10.
    eos = tessera_json("eos", "--dens", rho, "--temp", T, "--abar", abar, "--zbar", ye * abar)
    p = eos["pres"]
    s = tessera_json("nse", "--ye", ye, "--pres", p, "--hmq", e + p / rho - MEV * qbar)
    assert s["out_of_table"] == 0
    assert abs(s["temp"] / T - 1) < 4e-3, (s["temp"], T)
    assert abs(s["dens"] / rho - 1) < 5e-3, (s["dens"], rho)
    assert abs(s["qbar"] / qbar - 1) < 8e-4, (s["qbar"], qbar)


def burn(rho, tend, steps, csv_path=None):
    args = ["nse", "--burn", "--dens", rho, "--temp", 7e8, "--fuel", "c12=0.5,o16=0.5",
            "--tend", tend, "--steps", steps]
    if csv_path:
        args += ["--csv", csv_path]
    p = subprocess.run([EXE, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def crossing_times(tau_aq, tau_qn):
    """phfa = 1 at t = 0: dphaq/dt = (1 - phaq)/tau_aq, dphqn/dt = (phaq - phqn)^2/tau_qn,
    integrated by RK4 with 1e5 steps: when phaq passes 1 - 1/e and phqn 1/2."""
    def f(y):
        return np.array([(1 - y[0]) / tau_aq, max(y[0] - y[1], 0.0)**2 / tau_qn])
    t, y, h = 0.0, np.zeros(2), 20 * (tau_aq + tau_qn) / 1e5
    t_aq = t_qn = None
    while t_qn is None:
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y1 = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if t_aq is None and y1[0] >= 1 - math.exp(-1):
            t_aq = t + h * (1 - math.exp(-1) - y[0]) / (y1[0] - y[0])
        if y1[1] >= 0.5:
            t_qn = t + h * (0.5 - y[1]) / (y1[1] - y[1])
        t, y = t + h, y1
    return t_aq, t_qn


@pytest.mark.parametrize("rho", [1e9, 2e9])
def test_one_zone_burn_relaxes_on_the_relaxation_times_and_ends_at_the_table(tmp_path, rho):
    # C/O 50/50 at 7e8 K burned by the flame at t = 0, then relaxed at constant density.
    # The relaxation times at the NSE temperature (FLASH4's constants): the kernel's
    # phaq reaches 1 - 1/e and phqn 1/2 when the relaxation equations say (within 10 %);
    # measured: 1e-6 and 2e-4.
    probe = burn(rho, 1e-12, 10)
    t1, t2 = probe["tau_nsqe_start"], probe["tau_nse_start"]
    assert 1e-12 < t1 < t2 < 1e-8  # hot NSE at these densities: T9 near 8
    z = burn(rho, 30 * t2, 20000, tmp_path / "z.csv")
    want_aq, want_qn = crossing_times(t1, t2)
    assert abs(z["time_phaq_1_minus_1_over_e"] / want_aq - 1) < 0.1
    assert abs(z["time_phqn_half"] / want_qn - 1) < 0.1
    # The NSE temperature hardly moves while the zone relaxes (e - qbar is conserved but
    # for neutrinos and captures): the times are those of the final state.
    assert abs(z["tau_nse_end"] / t2 - 1) < 0.05
    rows = list(csv.DictReader(open(tmp_path / "z.csv")))
    for r in rows:
        fa, aq, qn = float(r["phfa"]), float(r["phaq"]), float(r["phqn"])
        assert 1 >= fa >= aq >= qn >= 0
    # Much later (1 ms): the zone's qbar is the table's qbar at the zone's final (Ye, rho,
    # e - qbar), its EOS temperature the table's to its interpolation error, Ye has fallen
    # by the table's capture rate.
    z = burn(rho, 1e-3, 20000)
    f, t = z["final"], z["table_final"]
    assert f["phqn"] > 0.9999
    assert abs(f["qbar"] / t["qbar"] - 1) < 1e-6
    assert abs(f["temp"] / t["temp"] - 1) < 2e-3
    assert abs(f["abar"] / t["abar"] - 1) < 1e-3
    assert f["ye"] < 0.5 and abs((f["ye"] - 0.5) / (1e-3 * t["ydot"]) - 1) < 0.05
    assert z["out_of_table"] == 0
    # Energy: what the relaxation released is the binding energy gained (plus the
    # captures' rest mass), all of it N_A MeV per nucleon per gram.
    gained = MEV * (f["qbar"] - z["ash_qbar"]) + (f["ye"] - 0.5) * (939.56542052 - 938.27208816 - 0.51099895) * MEV
    assert abs(z["released"] / gained - 1) < 1e-9
