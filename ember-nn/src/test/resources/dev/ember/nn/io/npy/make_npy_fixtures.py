#!/usr/bin/python3
"""Files written by NumPy itself, for NpyTest: run with Debian's python3-numpy,
/usr/bin/python3 make_npy_fixtures.py (writes the .npy/.npz files beside this script).

Every array's values follow a formula NpyTest recomputes: arange-based, so no values file is needed.
"""
import os
import numpy as np
from numpy.lib import format as fmt

here = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(here, name)


np.save(path("f32_2x3.npy"), np.arange(6, dtype="<f4").reshape(2, 3) / 4)
np.save(path("f64_fortran_3x4.npy"), np.asfortranarray(np.arange(12, dtype="<f8").reshape(3, 4) - 5.5))
np.save(path("f32_fortran_2x3x4.npy"), np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)))
np.save(path("i64_big_endian.npy"), np.arange(5, dtype=">i8") - 2)
np.save(path("f64_big_endian.npy"), (np.arange(4, dtype=">f8") - 1.5) * 1e300)
np.save(path("i32_2x2.npy"), np.array([[1, -2], [3, 2147483647]], dtype="<i4"))
np.save(path("bool_3.npy"), np.array([True, False, True]))
np.save(path("scalar_f32.npy"), np.array(3.5, dtype="<f4"))
np.save(path("empty_0x3.npy"), np.zeros((0, 3), dtype="<f4"))
np.save(path("f16_ones.npy"), np.ones(2, dtype="<f2"))
with open(path("v2_f32_4.npy"), "wb") as f:
    fmt.write_array(f, np.arange(4, dtype="<f4"), version=(2, 0))
with open(path("v3_f32_4.npy"), "wb") as f:
    fmt.write_array(f, np.arange(4, dtype="<f4"), version=(3, 0))
np.savez(path("savez.npz"), weight=np.arange(6, dtype="<f4").reshape(2, 3) / 4, labels=np.arange(5, dtype="<i8") - 2)
np.savez_compressed(path("savez_compressed.npz"), weight=np.arange(6, dtype="<f4").reshape(2, 3) / 4,
                    mask=np.array([True, False, True]))
