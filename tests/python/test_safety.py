"""No silent wrong answer (issue 48): what a production code must refuse or catch rather
than run on with. Each test gives the command a new user tried and asserts the corrected
behaviour (a one-line refusal, a caught NaN, a finite answer):

- a restart that would drop a unit, a species, a group, particles or a particle species of
  its checkpoint is refused with one line naming what would be lost, unless
  driver.restart_drop names it (then the log says what was dropped);
"""
import json
import math
from pathlib import Path
import subprocess

import numpy as np
import pytest

from runner import EXE, MPIRUN, ROOT, run, summary
from tessera import reader

NOPLOT = ["io.plotfile_interval_time=0", "io.plotfile_interval_step=0"]


def first_checkpoint(out):
    return str(reader.find_outputs(out).checkpoints[0])


def error_line(p):
    lines = [l for l in p.stderr.splitlines() if "error" in l]
    assert p.returncode != 0 and lines, p.stderr[-2000:]
    return lines[-1]


@pytest.mark.parametrize("problem,change,drop,lost", [
    ("single_vortex_2d.toml", ["driver.operators=[\"flow\"]", "io.plot_vars=[\"dens\"]"],
     "levelset", "unit levelset (variable 'phi')"),
    ("diffusion_pulse_2d.toml", ["diffusion.species=[\"rad1\"]", "diffusion.coefficient=[1.0]",
                                 "io.plot_vars=[\"rad1\"]"],
     "rad2", "variable 'rad2' of unit diffusion"),
    ("snia_2d.toml", ["composition.species=[\"c12\", \"o16\"]", "composition.initial=[0.5, 0.5]",
                      "io.plot_vars=[\"dens\"]"],
     "ne22", "variable 'ne22' of unit composition"),
    ("sod_3d_tracers.toml", ["particles.tracers=false"], "particles",
     "the particles of unit particles"),
    ("pic_langmuir_1d.toml", ["pic.species=[\"electron\"]"], "positron",
     "particles of species positron"),
], ids=["levelset", "diffusion_species", "composition_species", "tracers", "pic_species"])
def test_a_restart_that_would_drop_data_is_refused_unless_named(tmp_path, problem, change,
                                                                drop, lost):
    base = ["driver.nend=2"]
    if problem.startswith("pic"):
        base.append("pic.species=[\"electron\", \"positron\"]")
    run(problem, tmp_path / "a", *base)
    chk = first_checkpoint(tmp_path / "a")
    more = ["driver.nend=3"]
    p = run(problem, tmp_path / "b", "--restart", chk, *more, *change, check=False)
    line = error_line(p)
    assert lost in line and "driver.restart_drop" in line, line
    p = run(problem, tmp_path / "c", "--restart", chk, *more, *change,
            f"driver.restart_drop=[\"{drop}\"]")
    dropped = [l for l in p.stdout.splitlines() if l.startswith("restart: dropped")]
    assert dropped and drop in dropped[0], p.stdout[-3000:]
    # A restart that keeps everything says nothing of drops.
    p = run(problem, tmp_path / "d", "--restart", chk, *more, *base[1:])
    assert "restart: dropped" not in p.stdout


def test_a_restart_cannot_reorder_or_add_particle_species(tmp_path):
    run("pic_langmuir_1d.toml", tmp_path / "a", "driver.nend=2", "pic.species=[\"electron\"]")
    chk = first_checkpoint(tmp_path / "a")
    p = run("pic_langmuir_1d.toml", tmp_path / "b", "--restart", chk,
            "pic.species=[\"electron\", \"positron\"]", check=False)
    assert "no particles of species 'positron'" in error_line(p)
