#!/usr/bin/python3
"""Writes the bad-file corpus that BadFileCorpusTest feeds to Ember's readers.

Every file here must be rejected with a typed error (DataFormatException or NpyException) and
without allocating buffers sized by the file's claims. Run from this folder:
    /usr/bin/python3 make_bad_files.py
The files are small and committed; rerunning rewrites them identically (gzip mtime is fixed).
"""
import gzip
import io
import os
import struct


def write(name, data):
    with open(name, "wb") as f:
        f.write(data)


def idx(dims, data=b"", type_code=0x08):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def npy(dict_text, data=b"", magic=b"\x93NUMPY", version=(1, 0), pad=True):
    header = dict_text
    if pad:
        while (10 + len(header) + 1) % 64:
            header += " "
        header += "\n"
    return magic + bytes(version) + struct.pack("<H", len(header)) + header.encode("latin1") + data


# ---------------------------------------------------------------- IDX, raw
write("idx_empty.idx", b"")
write("idx_truncated_header.idx", b"\x00\x00\x08")
write("idx_wrong_magic.idx", b"GIF89a" + bytes(30))
write("idx_float_type.idx", idx([2, 2], bytes(16), type_code=0x0D))
write("idx_unknown_type.idx", idx([2], bytes(2), type_code=0x42))
write("idx_rank_zero.idx", idx([]))
write("idx_rank_past_end.idx", bytes([0, 0, 8, 200]) + bytes(12))
write("idx_dims_2e31_x_2e31.idx", idx([2**31, 2**31]))
write("idx_product_too_large.idx", idx([65536, 65536, 65536]))
write("idx_truncated_data.idx", idx([10, 28, 28], bytes(100)))
write("idx_trailing_data.idx", idx([2], bytes(5)))

# ---------------------------------------------------------------- IDX, gzip
write("idx_dims_2e31_x_2e31.idx.gz", gz(idx([2**31, 2**31])))
# declares 1e9 bytes from a few dozen: more than deflate can produce
write("idx_bomb_declared.idx.gz", gz(idx([1000, 1000, 1000], bytes(64))))
# 40 MB declared, within deflate's ratio (zeros plus 16 KB of fixed pseudo-random bytes compress
# about 700:1), but 1000 bytes short: allocating the declared size first would exhaust a 32 MB
# heap; the reader proves the length by inflating without keeping the data, and rejects it
noise = bytes((i * 2654435761 >> 13) & 0xFF for i in range(16384))
write("idx_zeros_short.idx.gz", gz(idx([40, 1000, 1000], noise + bytes(40_000_000 - 16384 - 1000))))
write("idx_gz_short.idx.gz", gz(idx([1000], bytes(10))))
write("idx_gz_long.idx.gz", gz(idx([10], bytes(20))))
good = gz(idx([100, 28, 28], bytes(range(256)) * 306 + bytes(64)))
write("idx_gz_truncated.idx.gz", good[: len(good) // 2])
corrupt = bytearray(good)
for i in range(12, 40):
    corrupt[i] ^= 0x5A
write("idx_gz_corrupt_deflate.idx.gz", bytes(corrupt))
bad_crc = bytearray(good)
bad_crc[-8] ^= 0xFF
write("idx_gz_bad_crc.idx.gz", bytes(bad_crc))
write("idx_gz_not_gzip.idx.gz", idx([2], bytes(2)))
write("idx_gz_wrong_magic_inside.idx.gz", gz(b"\x01\x02\x08\x01" + bytes(8)))

# ---------------------------------------------------------------- CSV
write("csv_ragged_rows.csv", b"a,b,label\n1,2,0\n3,4\n")
write("csv_missing_value.csv", b"a,b,label\n1,2,0\n3,,1\n")
write("csv_bad_number.csv", b"a,b,label\n1,2,0\n3,abc,1\n")
write("csv_float_suffix.csv", b"a,b,label\n1,2.5f,0\n")
write("csv_fractional_label.csv", b"a,b,label\n1,2,0.5\n")
write("csv_empty.csv", b"")
write("csv_header_only.csv", b"a,b,label\n")
write("csv_single_column.csv", b"label\n1\n")
write("csv_unterminated_quote.csv", b'a,b,label\n"1,2,0\n')
write("csv_binary_garbage.csv", bytes(range(256)))

# ---------------------------------------------------------------- NPY
write("npy_empty.npy", b"")
write("npy_wrong_magic.npy", b"\x93NUMPX\x01\x00" + bytes(120))
write("npy_bad_version.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", bytes(8), version=(9, 0)))
write("npy_header_past_end.npy", b"\x93NUMPY\x01\x00\xff\xff" + b"{")
write("npy_bad_header_dict.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", bytes(8)))
write("npy_header_not_a_dict.npy", npy("__import__('os').system('true')", bytes(8)))
write("npy_no_newline.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", bytes(8), pad=False))
write("npy_shape_2e31_x_2e31.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 2147483648), }"))
write("npy_negative_dim.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }"))
write("npy_short_data.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 4), }", bytes(100)))
write("npy_trailing_data.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", bytes(24)))
write("npy_unsupported_dtype.npy", npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", bytes(16)))
