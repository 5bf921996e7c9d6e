"""Properties of the element types."""

from __future__ import annotations

import pytest
import torch

from pypto.ir.dtypes import DataType


@pytest.mark.parametrize("dtype", [d for d in DataType if d.is_int])
def test_int_range_is_the_integer_types_smallest_and_largest_value(dtype):
    info = torch.iinfo(dtype.to_torch())
    assert dtype.int_range == (info.min, info.max)


def test_int_range_of_bool_is_zero_and_one_and_floats_have_none():
    assert DataType.BOOL.int_range == (0, 1)
    with pytest.raises(TypeError, match="FP16 is not an integer type"):
        _ = DataType.FP16.int_range
