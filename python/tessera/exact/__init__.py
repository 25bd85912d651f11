"""Exact solutions used by ``tessera.verify``: Sod/Riemann (Toro), Sedov (Kamm & Timmes) and
the potential of a homogeneous Maclaurin spheroid (gravity)."""

from .maclaurin import maclaurin_potential, uniform_sphere_potential
from .sedov import SedovSolution
from .sod import RiemannSolver, cell_average, sod_solution

__all__ = ["SedovSolution", "RiemannSolver", "sod_solution", "cell_average",
           "maclaurin_potential", "uniform_sphere_potential"]
