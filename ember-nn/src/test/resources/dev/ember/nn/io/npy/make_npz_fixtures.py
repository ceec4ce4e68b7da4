#!/usr/bin/python3
"""Archives written by NumPy and Python's zipfile for the npz reader's edge cases, for NpyTest:
run with Debian's python3-numpy, /usr/bin/python3 make_npz_fixtures.py (writes beside this script).

Each file is checked to load with numpy.load before it is kept, since Ember must read what NumPy reads.
Values follow formulas NpyTest recomputes.
"""
import io
import os
import struct
import zipfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(here, name)


def savez(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return bytearray(buf.getvalue())


def eocd(data):
    return data.rindex(b"PK\x05\x06")


def keep(name, data, check):
    with open(path(name), "wb") as f:
        f.write(data)
    with np.load(path(name)) as z:  # numpy reads it, or this script fails
        check(z)


w = np.arange(6, dtype="<f4").reshape(2, 3) / 4


def has_w(z):
    assert list(z.keys()) == ["w"] and np.array_equal(z["w"], w)


# an archive comment of the largest length, 65535 bytes
buf = io.BytesIO(bytes(savez(w=w)))
with zipfile.ZipFile(buf, "a") as z:
    z.comment = b"c" * 65535
keep("comment_65535.npz", buf.getvalue(), has_w)

# a comment length of 65535 with no comment after it: zipfile reads the comment as far as it goes
data = savez(w=w)
e = eocd(data)
struct.pack_into("<H", data, e + 20, 65535)
keep("comment_length_past_end.npz", bytes(data), has_w)

# ZIP64 throughout (central directory extra fields, ZIP64 end record and locator), as zipfile writes past 4 GiB
# or 65535 members: lower its limits so that a small archive gets them
limit, count = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
try:
    data = savez(w=w, labels=np.arange(5, dtype="<i8") - 2)
finally:
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = limit, count
assert b"PK\x06\x06" in data and b"PK\x06\x07" in data


def has_w_labels(z):
    assert list(z.keys()) == ["w", "labels"] and np.array_equal(z["labels"], np.arange(5) - 2)


keep("zip64.npz", bytes(data), has_w_labels)

# a deflated member far larger than the 64 KiB chunks it is read in: 100000 float32 zeros but every 1000th is i
big = np.zeros(100000, dtype="<f4")
big[::1000] = np.arange(100)
buf = io.BytesIO()
np.savez_compressed(buf, big=big)
keep("savez_compressed_100k.npz", buf.getvalue(), lambda z: np.array_equal(z["big"], big))
