"""Tessera's Python package: reader for its FLASH-format HDF5 outputs, exact solutions
(Sod/Riemann, Sedov–Taylor), ``verify`` (error norms) and ``plot``.

The package never runs the physics itself; it reads what the C++ executable wrote.
"""

from .reader import Dataset, find_outputs, last_output, read

__all__ = ["Dataset", "read", "find_outputs", "last_output"]
__version__ = "0.1.0"
