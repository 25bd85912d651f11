"""The example unit of docs/writing-a-unit.md (physics/scalar/, problems/scalar_diffusion_2d.toml):
a Gaussian diffusing explicitly, against its exact solution, with the unit's own Dirichlet
faces and its own refinement criterion; identical fields on 1 and 2 ranks and after a
restart. Each test asserts a bound that the physics sets:

- uniform meshes of 32^2, 64^2, 128^2 zones with the exact solution on the four faces:
  the L1 error falls at second order (rate >= 1.8; forward Euler with dt ~ dx^2 is second
  order in dx);
- the same 64^2 run with zero-gradient (outflow) faces instead: the Gaussian reaches the
  boundary, so the error is larger by a factor >= 4 (the Dirichlet faces are what keeps it);
- the AMR run: the unit's votes alone decide the mesh: every level-1 leaf of the final
  output has max scal <= refine_above, and level-2 leaves exist where it exceeded it."""
import math
import subprocess

import numpy as np
import pytest

from h5compare import differing_datasets
from runner import EXE, ROOT, run, shared_run, summary
from tessera import reader

PROBLEM = "scalar_diffusion_2d.toml"


def uniform(nxb):
    return ["mesh.lrefine_max=1", f"mesh.nxb={nxb}", "io.plotfile_interval_time=0"]


@pytest.fixture(scope="module")
def errors(tmp_path_factory):
    out = {}
    for nxb in (8, 16, 32):
        d = shared_run(tmp_path_factory, f"scalar{nxb}", PROBLEM, *uniform(nxb))
        out[nxb] = summary(d)["scalar"]
    return out


def test_scalar_converges_at_second_order_with_dirichlet_faces(errors):
    e = [errors[n]["l1_error"] for n in (8, 16, 32)]
    rates = [math.log2(e[0] / e[1]), math.log2(e[1] / e[2])]
    print(f"[ measured ] L1 errors {e}, rates {rates}")
    assert errors[16]["time"] == pytest.approx(0.005)
    assert min(rates) >= 1.8


def test_dirichlet_faces_hold_the_error_that_outflow_faces_do_not(errors, tmp_path):
    run(PROBLEM, tmp_path, *uniform(16), "scalar.boundary=[]")
    outflow = summary(tmp_path)["scalar"]["l1_error"]
    print(f"[ measured ] 64^2 L1 error: Dirichlet {errors[16]['l1_error']:.3e}, "
          f"outflow {outflow:.3e}")
    assert outflow >= 4 * errors[16]["l1_error"]


def test_own_refinement_criterion_alone_decides_the_mesh(tmp_path):
    run(PROBLEM, tmp_path)
    s = summary(tmp_path)
    ds = reader.read(str(reader.last_output(tmp_path)))
    scal = ds.field("scal")
    leaf = ds.node_type == 1
    levels = ds.refine_level[leaf]
    top = scal[leaf].reshape(leaf.sum(), -1).max(axis=1)
    assert (levels == 1).any(), "the unit asked for refinement where scal > 0.6"
    assert np.all(top[levels == 0] <= 0.6), "a coarse leaf holds scal above refine_above"
    assert s["regrid"]["changed"] > 0
    assert s["scalar"]["l1_error"] < 1e-3
    # The scratch variable (the step's Laplacian) is in no output.
    for f in reader.find_outputs(tmp_path).checkpoints + reader.find_outputs(tmp_path).plotfiles:
        names = reader.read(str(f)).var_names
        assert "slap" not in names and ("scal" in names), (f, names)


def test_example_unit_is_bitwise_identical_on_1_and_2_ranks_and_after_a_restart(tmp_path):
    one, two, rst = tmp_path / "one", tmp_path / "two", tmp_path / "rst"
    for d in (one, two, rst):
        d.mkdir()
    chk = "io.checkpoint_interval_time=0.0025"
    run(PROBLEM, one, chk)
    run(PROBLEM, two, chk, ranks=2)
    a = reader.find_outputs(one).checkpoints[-1]
    b = reader.find_outputs(two).checkpoints[-1]
    assert reader.read(a).time == pytest.approx(0.005)
    assert not differing_datasets(a, b, same_ranks=False)
    # Restart from the checkpoint at t = 0.0025: the unit's clock (and so its Dirichlet
    # faces) resumes there.
    mid = [c for c in reader.find_outputs(one).checkpoints
           if reader.read(c).time == pytest.approx(0.0025, rel=0.01)]
    assert len(mid) == 1
    p = subprocess.run([EXE, "run", str(ROOT / "problems" / PROBLEM), "--dir", str(rst),
                        "--restart", str(mid[0]), chk], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    c = reader.find_outputs(rst).checkpoints[-1]
    assert not differing_datasets(a, c)
    # What the unit keeps outside unk (Unit::checkpoint_scalars): the initial integral
    # comes back from the checkpoint, to the bit (recomputed after the restart it would be
    # the integral at t = 0.0025, not at 0).
    first, again = summary(one)["scalar"], summary(rst)["scalar"]
    assert again["integral_start"] == first["integral_start"]
    assert again["integral"] == first["integral"]
    assert again["integral_start"] != again["integral"]  # the Dirichlet faces let it change
