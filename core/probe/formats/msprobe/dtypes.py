"""dtype spellings of msProbe's PyTorch (``torch.float32``) and MindSpore (``Float32``) dumpers."""

from __future__ import annotations

TORCH_PREFIX = "torch."
TORCH_SIZE = "torch.Size"
"""Type name msProbe writes for a ``torch.Size`` argument."""
PROCESS_GROUP = "torch.ProcessGroup"
"""Type name msProbe writes for a process-group argument of a collective."""

FLOAT_DTYPES = (
    frozenset({"torch.float16", "torch.float32", "torch.float64", "torch.bfloat16"}),
    frozenset({"Float16", "Float32", "Float64", "BFloat16"}),
)
"""Float dtypes of each dumper; two floats of one framework pass the dtype gate."""

_MS_DTYPES = {
    "Float16": "float16", "Float32": "float32", "Float64": "float64", "BFloat16": "bfloat16",
    "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
    "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
    "Bool": "bool", "Complex64": "complex64", "Complex128": "complex128",
}

_DTYPE_CATEGORIES = {
    **dict.fromkeys(("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"), "int"),
    **dict.fromkeys(("float16", "float32", "float64", "bfloat16"), "float"),
    "bool": "bool",
    "complex64": "complex",
    "complex128": "complex",
}


def canonical_dtype(dtype: str) -> str:
    """``torch.float32``, ``Float32`` and ``float32`` all become ``float32``."""
    if dtype.startswith(TORCH_PREFIX):
        return dtype[6:]
    return _MS_DTYPES.get(dtype, dtype)


def dtypes_compatible(target: str, golden: str) -> bool:
    """msProbe's dtype gate: equal, or both float types of the same framework.

    Across frameworks (one dtype spelled ``torch.*``, the other not) the two only need to
    be of the same kind (int / float / bool / complex), as msProbe does.
    """
    if target == golden:
        return True
    if any(target in family and golden in family for family in FLOAT_DTYPES):
        return True
    if target.startswith(TORCH_PREFIX) != golden.startswith(TORCH_PREFIX):
        t, g = canonical_dtype(target), canonical_dtype(golden)
        return _DTYPE_CATEGORIES.get(t, t) == _DTYPE_CATEGORIES.get(g, g)
    return False
