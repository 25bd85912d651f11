"""No silent wrong answer (issue 48): what a production code must refuse or catch rather
than run on with. Each test gives the command a new user tried and asserts the corrected
behaviour (a one-line refusal, a caught NaN, a finite answer):

- a restart that would drop a unit, a species, a group, particles or a particle species of
  its checkpoint is refused with one line naming what would be lost, unless
  driver.restart_drop names it (then the log says what was dropped);
- a nonphysical initial radiation state (E < 0) is refused before the first step;
- NaN and inf in per-species number lists are refused (file and command line alike, which
  also refuse quoted numbers), with "a list of numbers" in the message;
- a NaN put into any variable (driver.inject_nan_step) stops a flow-driven run at that
  step, on 1 and 2 ranks; `tessera check` fails on a file holding NaN or inf, and on a
  manifest whose algorithm or format tag it does not know;
- the diffusion pulse at amplitude 1e-170 and 1e160 (|b|^2 under- and overflows) gives the
  amplitude-1 pulse's integral times the amplitude, to 1e-12 (BiCGSTAB and CG);
- an error thrown on one rank alone ends the job within seconds, with its message and a
  non-zero exit (it hung in the other ranks' collectives), while an error thrown on every
  rank still prints one line;
- an integer parameter beyond 32 bits (pic.seed = 2^32 + 7) comes back from a checkpoint;
- messages that point the right way: an output directory that cannot hold a file (the
  kernel's /proc), --restart given a directory, an empty beam band, a level set that would
  refine nothing on an adaptive mesh, a failed HDF5 call with the system's reason;
- with asynchronous writes, the plotfile and checkpoint of one step hold the same rhoq
  (the checkpoint's refresh re-deposited it while the plotfile's copy could be running);
"""
import json
import zlib
import subprocess

import numpy as np
import pytest

from runner import EXE, MPIRUN, ROOT, run, summary, unit_suites_under_mpirun
from tessera import reader

NOPLOT = ["io.plotfile_interval_time=0", "io.plotfile_interval_steps=0"]


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


@pytest.mark.parametrize("change", [["ssw.amplitude=2"], ["ssw.mean=-1"]])
def test_a_nonphysical_initial_radiation_state_is_refused(tmp_path, change):
    p = run("streaming_sine_wave_1d.toml", tmp_path, *change, check=False)
    line = error_line(p)
    assert "initial state is not realizable (E < 0)" in line, line
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("problem,item", [
    ("diffusion_pulse_2d.toml", "diffusion.opacity=[inf, 1.0]"),
    ("diffusion_pulse_2d.toml", "diffusion.coefficient=[inf, 0.25]"),
    ("streaming_sine_wave_1d.toml", "m1.kappa_a=[inf]"),
    ("streaming_sine_wave_1d.toml", "m1.kappa_a=[nan]"),
])
def test_non_finite_numbers_in_lists_are_refused(tmp_path, problem, item):
    p = run(problem, tmp_path, item, check=False)
    assert "is not a finite number" in error_line(p)


def test_number_lists_read_alike_from_a_file_and_the_command_line(tmp_path):
    text = (ROOT / "problems" / "diffusion_pulse_2d.toml").read_text()
    for value, said in [("[inf, 0.25]", "inf is not a finite number"),
                        ('["1.0", "0.25"]', "expects a list of numbers")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text.replace("coefficient = [1.0, 0.25]", f"coefficient = {value}"))
        p = subprocess.run([EXE, "run", str(bad), "--dir", str(tmp_path / "x")],
                           capture_output=True, text=True)
        assert said in error_line(p) and "bad.toml:" in error_line(p)
        p = run("diffusion_pulse_2d.toml", tmp_path / "y", f"diffusion.coefficient={value}",
                check=False)
        assert said in error_line(p)


@pytest.mark.parametrize("problem,ranks", [
    ("diffusion_pulse_2d.toml", 1), ("single_vortex_2d.toml", 1),
    ("streaming_sine_wave_1d.toml", 1), ("m1_shadow_2d.toml", 2)])
def test_a_nan_in_a_flow_driven_run_stops_it_at_that_step(tmp_path, problem, ranks):
    p = run(problem, tmp_path, "driver.inject_nan_step=3", "driver.nend=6", ranks=ranks,
            check=False)
    line = error_line(p)
    assert "step 3: dens = nan" in line, line


def rewrite_manifest(path, edit):
    """Apply edit(manifest dict, h5 file) to a file's manifest and store it back."""
    import h5py
    with h5py.File(path, "r+") as f:
        text = bytes(f["tessera manifest"][()]).rstrip(b"\0").decode()
        man = json.loads(text)
        edit(man, f)
        new = json.dumps(man, separators=(",", ":"), sort_keys=True).encode()
        del f["tessera manifest"]
        f.create_dataset("tessera manifest", data=np.bytes_(new))


def test_tessera_check_fails_on_nan_and_on_an_unknown_manifest(tmp_path):
    import shutil
    run("sod.toml", tmp_path / "a", "driver.nend=2")
    chk = first_checkpoint(tmp_path / "a")
    assert subprocess.run([EXE, "check", chk], capture_output=True).returncode == 0

    def poke(man, f):  # a NaN in dens, with its checksum made to match
        d = f["dens"][()]
        d.flat[7] = np.nan
        f["dens"][...] = d
        for e in man["datasets"]:
            if e["name"] == "dens":
                e["crc32"] = zlib.crc32(d.tobytes())
    nan = str(tmp_path / "nan")
    shutil.copy(chk, nan)
    rewrite_manifest(nan, poke)
    p = subprocess.run([EXE, "check", nan], capture_output=True, text=True)
    assert p.returncode != 0 and "dataset 'dens' holds 1 NaN or inf value" in p.stdout + p.stderr
    for key, value in [("algorithm", "crc33"), ("format", "tessera-manifesu-1")]:
        other = str(tmp_path / key)
        shutil.copy(chk, other)
        rewrite_manifest(other, lambda man, f: man.__setitem__(key, value))
        p = subprocess.run([EXE, "check", other], capture_output=True, text=True)
        assert p.returncode != 0 and f'{key} "{value}"' in p.stdout + p.stderr, p.stdout


@pytest.mark.parametrize("method", ["bicgstab", "cg"])
def test_the_diffusion_pulse_keeps_its_integral_at_the_ends_of_the_double_range(tmp_path,
                                                                              method):
    common = ["solver.rtol=1e-13", "driver.nend=20", f"solver.method={method}", *NOPLOT]
    ends = {}
    for a in ("1", "1e-170", "1e160"):
        run("diffusion_pulse_2d.toml", tmp_path / a, f"pulse.amplitude={a}", *common)
        d = summary(tmp_path / a)["diffusion"]
        ends[a] = [x / float(a) for x in d["integral_end"]]
        assert d["solver"]["iterations_max"] > 0, d  # it solved (no "0 iterations to 0")
    for a in ("1e-170", "1e160"):
        for got, want in zip(ends[a], ends["1"]):
            assert abs(got / want - 1) < 1e-12, (a, ends)


def test_an_error_on_one_rank_alone_ends_the_job_with_its_message(tmp_path):
    import time
    cmd = MPIRUN + ["-n", "2", EXE, "run", str(ROOT / "problems" / "sod.toml"), "--dir",
                    str(tmp_path / "a"), "driver.inject_error_step=3"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert p.returncode != 0, p.stderr
    assert "tessera: error (rank 1): driver.inject_error_step" in p.stderr, p.stderr
    assert took < 20, took
    # An error every rank throws (a parameter out of range): one line, from rank 0.
    p = run("sod.toml", tmp_path / "b", "hydro.cfl=7", ranks=2, check=False)
    lines = [l for l in p.stderr.splitlines() if l.startswith("tessera: error")]
    assert len(lines) == 1 and "out of range" in lines[0], p.stderr


def test_a_64_bit_integer_parameter_survives_a_checkpoint(tmp_path):
    seed = 2 ** 32 + 7  # stored as 32 bits it came back as 7
    run("pic_langmuir_1d.toml", tmp_path / "a", "driver.nend=2", f"pic.seed={seed}")
    chk = first_checkpoint(tmp_path / "a")
    run("pic_langmuir_1d.toml", tmp_path / "b", "--restart", chk, "driver.nend=3")
    log = (tmp_path / "b" / "parameters.log").read_text()
    line = [l for l in log.splitlines() if l.startswith("pic.seed ")][0]
    assert str(seed) in line and "(checkpoint)" in line, line


def test_async_plotfile_and_checkpoint_of_one_step_hold_the_same_rhoq(tmp_path):
    run("pic_langmuir_1d.toml", tmp_path, "driver.nend=40", "io.async=true",
        "pic.particles_per_cell=64", "io.plotfile_interval_steps=20",
        "io.checkpoint_interval_steps=20")
    out = reader.find_outputs(tmp_path)
    plt = reader.read(str(out.plotfiles[-1]))
    chk = reader.read(str(out.checkpoints[-1]))
    assert plt.time == chk.time
    assert np.array_equal(plt.field("rhoq"), chk.field("rhoq").astype(np.float32))


@pytest.mark.parametrize("ranks", [2, 4])
def test_message_pieces_hold_on_several_ranks(ranks):
    """tests/unit Comm* (messages in pieces of ints, issue 48 item 15) under mpirun."""
    unit_suites_under_mpirun("Comm*", ranks)


def test_an_nse_table_with_fewer_than_4_points_on_an_axis_is_refused(tmp_path):
    """The cubic lookup reads 4 points per axis; a table of 3 read outside its rows."""
    table = ROOT / "build" / "nse_table.dat"
    if not table.exists():
        pytest.skip("the NSE table is not built (make nse-table)")
    lines = table.read_text().splitlines()
    grid = [i for i, l in enumerate(lines) if l.startswith("# grid logT")][0]
    name, lo, hi, n = lines[grid].split()[2:6]
    lines[grid] = f"# grid {name} {lo} {hi} 3"
    bad = tmp_path / "nse3.dat"
    bad.write_text("\n".join(lines) + "\n")
    p = subprocess.run([EXE, "nse", "--table", str(bad), "--dens", "1e9", "--ye", "0.5",
                        "--emq", "1e18"], capture_output=True, text=True)
    assert p.returncode != 0 and "at least 4 points per axis" in p.stderr, p.stderr


def test_a_pic_run_that_cannot_fit_is_refused_before_it_allocates(tmp_path):
    """tessera plan counts the particles (arena, sort buffers, output copies) and a run
    whose plan exceeds the memory available stops at once with the plan's numbers (one
    million particles per cell was killed by the kernel at 24 GB, with nothing saved)."""
    import time
    p = subprocess.run([EXE, "plan", str(ROOT / "problems" / "pic_langmuir_1d.toml"),
                        "pic.particles_per_cell=1000000", "mesh.nblockx=64"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "particles arena" in p.stdout and "DOES NOT FIT" in p.stdout
    t0 = time.monotonic()
    p = run("pic_langmuir_1d.toml", tmp_path / "a", "pic.particles_per_cell=1000000",
            "mesh.nblockx=64", check=False)
    line = error_line(p)
    assert "the memory plan does not fit" in line and "particles" in line, line
    assert time.monotonic() - t0 < 30
    # A run that fits reports its particles beside the plan's (within 10 %).
    run("pic_langmuir_1d.toml", tmp_path / "b", "pic.particles_per_cell=2000",
        "driver.nend=2")
    mem = summary(tmp_path / "b")["memory"]
    part = mem["particles"]
    assert part["arena_bytes"] > 0 and part["predicted_steady_bytes"] >= part["arena_bytes"]
    assert abs(mem["prediction_error"]) < 0.1, mem["prediction_error"]


def test_messages_point_the_right_way(tmp_path):
    p = run("sod.toml", "/proc/self", "driver.nend=2", check=False)
    assert "cannot write in the output directory '/proc/self'" in error_line(p)
    run("sod.toml", tmp_path / "a", "driver.nend=2")
    p = run("sod.toml", tmp_path / "b", "--restart", str(tmp_path / "a"), check=False)
    line = error_line(p)
    assert "is a directory: name a checkpoint file" in line and "_hdf5_chk_" in line, line
    p = run("m1_shadow_2d.toml", tmp_path / "c", "m1.beam_lo=0.9", "m1.beam_hi=0.1",
            check=False)
    assert "m1.beam_lo = 0.9 is not below m1.beam_hi = 0.1" in error_line(p)
    p = run("deforming_bubble_2d.toml", tmp_path / "d", "levelset.band=0", check=False)
    assert "nothing would refine this adaptive mesh" in error_line(p)
    # On a uniform mesh band 0 runs, and the band's gradient error is null, not 0.
    run("single_vortex_2d.toml", tmp_path / "e", "levelset.band=0", "driver.nend=2")
    ls = summary(tmp_path / "e")["levelset"]
    assert ls["band_zones"] == 0 and ls["gradient_error_mean"] is None, ls
