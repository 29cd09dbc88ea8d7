"""GE ``OutputFormat`` enum and conversion of device layouts back to the framework shape.

GE stores some tensors in padded device layouts (NC1HWC0, FRACTAL_NZ, FRACTAL_Z, ...).
:func:`to_original` turns the flat payload into an array of ``original_shape`` so that it
can be compared element by element with the FX (PyTorch) tensor. Block sizes (C0, M0,
N0) are read from the stored ``shape``, so every dtype works.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

FORMAT_NAMES: dict[int, str] = {
    0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 5: "NC1C0HWPAD", 6: "NHWC1C0",
    7: "FSR_NCHW", 8: "FRACTAL_DECONV", 9: "C1HWNC0", 10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS", 12: "NC1HWC0_C04", 13: "FRACTAL_Z_C04", 14: "CHWN",
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS", 16: "HWCN", 17: "NC1KHKWHWC0", 18: "BN_WEIGHT",
    19: "FILTER_HWCK", 20: "HASHTABLE_LOOKUP_LOOKUPS", 21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE", 23: "HASHTABLE_LOOKUP_OUTPUT", 24: "HASHTABLE_LOOKUP_HITS",
    25: "C1HWNCoC0", 26: "MD", 27: "NDHWC", 28: "FRACTAL_ZZ", 29: "FRACTAL_NZ", 30: "NCDHW",
    31: "DHWCN", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D", 34: "CN", 35: "NC", 36: "DHWNC",
    37: "FRACTAL_Z_3D_TRANSPOSE", 38: "FRACTAL_ZN_LSTM", 39: "FRACTAL_Z_G", 40: "RESERVED",
    41: "ALL", 42: "NULL", 43: "ND_RNN_BIAS", 44: "FRACTAL_ZN_RNN", 45: "YUV", 46: "YUV_A",
    47: "NCL", 48: "FRACTAL_Z_WINO", 49: "C1HWC0", 255: "MAX",
}

NCHW, NHWC, ND, NC1HWC0, FRACTAL_Z, HWCN, FRACTAL_NZ, NCDHW, NDC1HWC0, FRACTAL_Z_3D = (
    0, 1, 2, 3, 4, 16, 29, 30, 32, 33,
)
NC1HWC0_C04 = 12


def format_name(code: int) -> str:
    """The enum name of a GE format, or ``"<code>"`` when unknown."""
    return FORMAT_NAMES.get(code, str(code))


def _crop(array: np.ndarray, target: Sequence[int]) -> np.ndarray:
    return array[tuple(slice(0, d) for d in target)]


def _from_nc1hwc0(data: np.ndarray, original: Sequence[int]) -> np.ndarray:
    n, c1, h, w, c0 = data.shape
    full = data.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
    return _crop(full, original)


def _from_ndc1hwc0(data: np.ndarray, original: Sequence[int]) -> np.ndarray:
    n, d, c1, h, w, c0 = data.shape
    full = data.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)
    return _crop(full, original)


def _from_fractal_nz(data: np.ndarray, original: Sequence[int]) -> np.ndarray:
    # [..., N1, M1, M0, N0] holds element (m, n) at [n // N0, m // M0, m % M0, n % N0].
    *batch, n1, m1, m0, n0 = data.shape
    nb = len(batch)
    axes = list(range(nb)) + [nb + 1, nb + 2, nb, nb + 3]
    full = data.transpose(axes).reshape(*batch, m1 * m0, n1 * n0)
    if len(original) == 1:  # a vector is stored as a 1 x N matrix
        return full[..., 0, : original[0]].reshape(original)
    rows, cols = original[-2], original[-1]
    return full[..., :rows, :cols].reshape(original)


def _from_fractal_z(data: np.ndarray, original: Sequence[int]) -> np.ndarray:
    # [C1*H*W, N1, N0, C0] holds (n, c, h, w) of an NCHW weight.
    n, c, h, w = original
    _, n1, n0, c0 = data.shape
    c1 = data.shape[0] // (h * w)
    full = data.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2)
    return _crop(full.reshape(n1 * n0, c1 * c0, h, w), original)


def _from_fractal_z_3d(data: np.ndarray, original: Sequence[int]) -> np.ndarray:
    # [D*C1*H*W, N1, N0, C0] holds (n, c, d, h, w) of an NCDHW weight.
    n, c, d, h, w = original
    _, n1, n0, c0 = data.shape
    c1 = data.shape[0] // (d * h * w)
    full = data.reshape(d, c1, h, w, n1, n0, c0).transpose(4, 5, 1, 6, 0, 2, 3)
    return _crop(full.reshape(n1 * n0, c1 * c0, d, h, w), original)


_CONVERTERS = {
    NC1HWC0: (5, 4, _from_nc1hwc0),
    NC1HWC0_C04: (5, 4, _from_nc1hwc0),
    NDC1HWC0: (6, 5, _from_ndc1hwc0),
    FRACTAL_Z: (4, 4, _from_fractal_z),
    FRACTAL_Z_3D: (4, 5, _from_fractal_z_3d),
}

# Plain 4-D layouts that become NCHW when the original shape says so.
_TO_NCHW = {NHWC: (0, 3, 1, 2), HWCN: (3, 2, 0, 1)}


def to_original(
    flat: np.ndarray, fmt: int, shape: Sequence[int], original_shape: Sequence[int]
) -> np.ndarray:
    """Reshape a flat payload stored as ``shape`` in format ``fmt`` to the framework shape.

    Raises ``ValueError`` when the stored shape does not fit the format or the original
    shape; the caller reports it against the dump file.
    """
    data = flat.reshape(tuple(shape))
    original = tuple(original_shape)
    if not original or tuple(shape) == original:
        return data
    if fmt == FRACTAL_NZ:
        if data.ndim < 4:
            raise ValueError(f"FRACTAL_NZ tensor of shape {list(shape)} is not at least 4-D")
        return _from_fractal_nz(data, original)
    if fmt in _CONVERTERS:
        stored_dims, original_dims, convert = _CONVERTERS[fmt]
        if data.ndim != stored_dims or len(original) != original_dims:
            raise ValueError(
                f"{format_name(fmt)} tensor of shape {list(shape)} cannot become {list(original)}"
            )
        return convert(data, original)
    if fmt in _TO_NCHW and data.ndim == 4 and len(original) == 4:
        permuted = data.transpose(_TO_NCHW[fmt])
        if permuted.shape == original:
            return permuted
    if math.prod(original) == data.size:
        return data.reshape(original)
    raise ValueError(
        f"cannot convert {format_name(fmt)} shape {list(shape)} to original shape {list(original)}"
    )
