"""Properties of the IR that passes establish and the verifier checks."""

from __future__ import annotations

import enum


class IRProperty(enum.Enum):
    TypesConsistent = "every value's type agrees with its definition and its operator"
    DefBeforeUse = "every name is bound before it is read"
    AtomicDtypesLegal = "atomic stores use a dtype the backend can accumulate"
    ScopesOutlined = "no pl.at block remains and orchestration runs no device operator"
    DirectionsResolved = "every written tensor parameter is Out or InOut"
    TileLevelKernels = "kernels compute on tiles only"
    CompositesLowered = "no composite operator (pl.sin, pl.cos) is left in a kernel"
    TilesFlat = "every tile is [rows, cols]: a [B, rows, cols] tile is B of them"
    CastsLegal = "every cast is one native instruction of the backend"
    MemorySpacesInferred = "every tile has a memory space"
    AddressesAllocated = "every tile has an address within capacity, disjoint from live tiles"
