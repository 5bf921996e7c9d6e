"""ops.inference.alike: the one check that two operands of an operator share a fact (kind,
shape, dtype), each mismatch worded with its hint, checked in the order asked."""

import pytest

from pypto.ir.dtypes import DataType
from pypto.ir.errors import TypeCheckError
from pypto.ir.ops.inference import alike
from pypto.ir.types import TensorType, TileType

TILE = TileType((16, 128), DataType.FP32)


@pytest.mark.parametrize(("other", "fact", "message", "hint"), [
    (TensorType((16, 128), DataType.FP32), "kind", "pl.add mixes a tensor and a tile",
     "pl.load"),
    (TileType((32, 128), DataType.FP32), "shape", "shape mismatch in pl.add: [16, 128] vs "
     "[32, 128]", "same shape"),
    (TileType((16, 128), DataType.FP16), "dtype", "dtype mismatch in pl.add: FP32 vs FP16",
     "pl.cast"),
])
def test_each_fact_names_both_operands_and_what_to_do(other, fact, message, hint):
    with pytest.raises(TypeCheckError) as info:
        alike("add", TILE, other, None, fact)
    assert message in str(info.value) and hint in info.value.hint


def test_facts_are_checked_in_the_order_asked():
    other = TensorType((32, 128), DataType.FP16)
    for facts, first in ((("kind", "shape", "dtype"), "mixes"),
                         (("dtype", "shape"), "dtype mismatch"),
                         (("shape",), "shape mismatch")):
        with pytest.raises(TypeCheckError, match=first):
            alike("add", TILE, other, None, *facts)


def test_operands_that_share_every_fact_pass():
    alike("add", TILE, TileType((16, 128), DataType.FP32), None, "kind", "shape", "dtype")
