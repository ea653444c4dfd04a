"""The plugin is registered before any QuTiP test module is imported: their parametrisations
read QuTiP's registered types at import.

``KNOWN_DIFFERENCES`` marks the cases of QuTiP's data-layer tests where polymat differs from
QuTiP on purpose or lacks a kernel; each is explained in ``docs/python.md``. They run as
``xfail`` (not strict: the random cases that trigger them are not always drawn).
"""

import re

import pytest

import qutip_polymat  # noqa: F401

KNOWN_DIFFERENCES = [
    (
        r"TestSqrtm::test_mathematically_correct\[sqrtm_(csr|dia)_\w+:Polymat\w+\[100,sparse\]",
        "polymat's sqrtm (Denman–Beavers iteration) fails on a singular matrix, where scipy's "
        "Schur method returns a square root; QuTiP tests its sqrtm on dense random (regular) "
        "matrices only",
    ),
    (
        r"TestLogm::test_mathematically_correct\[logm_(csr|dia)_\w+:Polymat\w+\[(100|1),(sparse|zero)\]",
        "a singular matrix has no logarithm: polymat raises PolymatError where scipy returns "
        "-inf entries with a warning; QuTiP tests its logm on dense random matrices only",
    ),
]


def pytest_collection_modifyitems(config, items):
    for item in items:
        for pattern, reason in KNOWN_DIFFERENCES:
            if re.search(pattern, item.nodeid):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
