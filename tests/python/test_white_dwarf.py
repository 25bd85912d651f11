"""System test of the hydrostatic white dwarf without a flame (verification.md §J, the
issue's contract): problems/wd_hse_2d.toml (Helmholtz EOS, multipole self-gravity l_max 2,
r-z) on a uniform mesh of 32 km zones. After 0.2 s, in zones with rho > 1e7 g/cm^3 the
largest |v| / c_s is at most 0.02 and the central density has moved by at most 1 %, with
hydro.gravity_coupling = "balanced" (the default: gravity in the Hancock predictor and the
pressure reconstructed about the local hydrostatic profile); the operator-split scheme
("split") does not reach it at this resolution. Measured (2026-11): balanced 0.0138 and
-0.62 %, split 0.033 and -2.8 %; with the flux energy source (2026-11, the default
now) balanced 0.0136 and -0.60 %. At the problem file's own 64 km (lrefine_max 2) balanced
gives 0.044 and -2.5 %: the bound needs the 32 km core. Needs the EOS table (make
helm-table)."""
import glob
import os
from pathlib import Path

import numpy as np
import pytest

from runner import EXE, ROOT, run, summary
from tessera import reader

TABLE = ROOT / "build" / "helm_table.dat"
pytestmark = [
    pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built"),
    pytest.mark.skipif(not TABLE.exists() and os.environ.get("TESSERA_ALLOW_NO_HELM_TABLE"),
                       reason="no Helmholtz table (make helm-table)"),
]
MESH = ["mesh.lrefine_min=3", "mesh.lrefine_max=3", f"eos.table={TABLE}"]


def equilibrium(out):
    """(largest |v|/c_s where rho > 1e7 in the final checkpoint, relative change of the
    largest density from the first plotfile, f32: ample for a 1 % bound)."""
    first = reader.read(str(Path(out) / "wd_hse_2d_hdf5_plt_cnt_0000"))
    last = reader.read(sorted(glob.glob(str(Path(out) / "wd_hse_2d_hdf5_chk_*")))[-1])
    assert first.time == 0.0
    assert last.time == pytest.approx(0.2)
    lv = last.leaves()
    rho = last.field("dens")[lv]
    cs = np.sqrt(last.field("gamc")[lv] * last.field("pres")[lv] / rho)
    v = np.sqrt((last.field("momx")[lv] / rho) ** 2 + (last.field("momy")[lv] / rho) ** 2)
    rho_c0 = first.field("dens")[first.leaves()].max()
    return (v / cs)[rho > 1e7].max(), rho.max() / rho_c0 - 1.0


def test_white_dwarf_stays_in_equilibrium_to_the_issue_bound(tmp_path):
    run("wd_hse_2d.toml", tmp_path, *MESH)
    mach, drho = equilibrium(tmp_path)
    assert mach <= 0.02, mach
    assert abs(drho) <= 0.01, drho
    # Mass leaves only through the outflow walls, with the fluff: none to speak of.
    c = summary(tmp_path)["conservation"]
    assert abs(c["mass_rel_change"]) < 1e-9
    # etot + egrav: the flux energy source keeps it to 1.9e-7 of |egrav| (5.7e44 erg over
    # 0.2 s); the momentum source (gravity.energy_source = "momentum") drifts 1.5e-6.
    d_total = (c["energy_final"] + c["egrav_final"]) - (c["energy_initial"] + c["egrav_initial"])
    assert abs(d_total) <= 5e-7 * abs(c["egrav_initial"]), d_total


def test_operator_split_gravity_does_not_reach_it(tmp_path):
    run("wd_hse_2d.toml", tmp_path, *MESH, "hydro.gravity_coupling=split")
    mach, drho = equilibrium(tmp_path)
    assert mach > 0.02 and abs(drho) > 0.01, (mach, drho)
