"""Bitwise comparison of two Tessera/FLASH files, shared by the system tests.

Compared "bitwise" is every dataset of the file except:
- `sim info`: it holds the file creation time;
- `tessera manifest`: checksums of the above;
- `processor number`, the `nprocs` integer scalar and the `proc` column of `tracer
  particles` when the rank counts differ;
- in the runtime-parameter lists, only the parameters the two runs were given differently
  (asserted to be exactly those).
"""
import h5py


def params_of(f):
    out = {}
    for name in ("integer runtime parameters", "real runtime parameters",
                 "string runtime parameters", "logical runtime parameters"):
        if name in f:
            for rec in f[name][()]:
                out[rec["name"].decode().strip()] = rec["value"]
    return out


def differing_datasets(a, b, allowed_params=(), same_ranks=True):
    """Names of datasets that differ (see the module doc for what is excluded)."""
    skip = {"sim info", "tessera manifest"}
    if not same_ranks:
        skip.add("processor number")
    bad = []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if set(fa) != set(fb):
            return ["dataset sets differ: %s" % (set(fa) ^ set(fb))]
        for k in fa:
            if k in skip or "runtime parameters" in k:
                continue
            x, y = fa[k][()], fb[k][()]
            if k == "tracer particles" and not same_ranks:
                names = [n[0].decode().strip() if hasattr(n[0], "decode") else str(n[0]).strip()
                         for n in fa["particle names"][()]]
                keep = [i for i, n in enumerate(names) if n != "proc"]
                x, y = x[:, keep], y[:, keep]
            if k == "integer scalars" and not same_ranks:
                x = x[[r["name"].strip() != b"nprocs" for r in x]]
                y = y[[r["name"].strip() != b"nprocs" for r in y]]
            if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                bad.append(k)
        pa, pb = params_of(fa), params_of(fb)
        diff = {k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k)}
        if not diff <= set(allowed_params):
            bad.append("runtime parameters: %s" % sorted(diff - set(allowed_params)))
    return bad
