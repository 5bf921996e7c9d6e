"""Properties of the element types."""

from __future__ import annotations

import pytest
import torch

from pypto.ir.dtypes import DataType


@pytest.mark.parametrize("dtype", [d for d in DataType if d.is_int and not d.packed])
def test_int_range_is_the_integer_types_smallest_and_largest_value(dtype):
    info = torch.iinfo(dtype.to_torch())
    assert dtype.int_range == (info.min, info.max)


def test_the_4bit_types_pack_two_elements_a_byte():
    """Their torch tensors hold bytes (FP4's float4_e2m1fn_x2 too: two FP4 values each)."""
    assert DataType.INT4.int_range == (-8, 7) and DataType.UINT4.int_range == (0, 15)
    for dtype in (DataType.FP4, DataType.HF4, DataType.INT4, DataType.UINT4):
        assert dtype.packed and dtype.bits == 4 and dtype.to_torch().itemsize == 1
        assert dtype.nbytes(6) == 3 and dtype.nbytes(7) == 4
        assert dtype.torch_shape((3, 8)) == (3, 4) and dtype.logical_shape((3, 4)) == (3, 8)
        with pytest.raises(TypeError, match="two to a byte"):
            _ = dtype.itemsize
    assert DataType.FP4.to_torch() is torch.float4_e2m1fn_x2
    assert DataType.FP32.nbytes(3) == 12 and DataType.FP32.torch_shape((3, 8)) == (3, 8)


def test_int_range_of_bool_is_zero_and_one_and_floats_have_none():
    assert DataType.BOOL.int_range == (0, 1)
    with pytest.raises(TypeError, match="FP16 is not an integer type"):
        _ = DataType.FP16.int_range
