"""Exact solutions used by ``tessera.verify``: Sod/Riemann (Toro) and Sedov (Kamm & Timmes)."""

from .sedov import SedovSolution
from .sod import RiemannSolver, cell_average, sod_solution

__all__ = ["SedovSolution", "RiemannSolver", "sod_solution", "cell_average"]
