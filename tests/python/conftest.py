"""pytest set-up shared by the system tests: Python's cyclic garbage collector tuned for
short test processes (see pytest_configure). TESSERA_TEST_GC=default leaves it as Python
sets it, for comparisons (ctest passes the variable through)."""
import gc
import os


def pytest_configure(config):
    # The modules these tests import (numpy, h5py, matplotlib, yt, pynucastro) leave
    # hundreds of thousands of long-lived objects, which every full collection walks again.
    if os.environ.get("TESSERA_TEST_GC", "tuned") == "tuned":
        gc.set_threshold(100000, 50, 1000)


def pytest_collection_finish(session):
    # Everything imported for collection lives to the end: out of the collector's sight.
    if os.environ.get("TESSERA_TEST_GC", "tuned") == "tuned":
        gc.freeze()
