"""Indices of torch 1.13's DistributedSampler, for DistributedSamplerTest.

Run from this directory: /usr/bin/python3 make_sampler_fixture.py
Each line of sampler_fixture.txt: n world rank shuffle seed drop_last epoch : the rank's indices.
"""
import torch
from torch.utils.data import DistributedSampler

CASES = [  # (dataset size, world size, shuffle, seed, drop_last)
    (10, 3, True, 0, False),
    (10, 3, True, 0, True),
    (10, 3, False, 0, False),
    (10, 3, False, 0, True),
    (7, 4, True, 42, False),
    (7, 4, True, 42, True),
    (2, 5, True, 3, False),   # padding longer than the data: the list repeats
    (1, 3, False, 0, False),
    (100, 2, True, 123456789, False),
    (1000, 4, True, 7, True),
    (37, 1, True, 5, False),
]


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


with open("sampler_fixture.txt", "w") as f:
    f.write("# made by make_sampler_fixture.py with torch %s\n" % torch.__version__)
    for n, world, shuffle, seed, drop_last in CASES:
        for rank in range(world):
            s = DistributedSampler(Sized(n), num_replicas=world, rank=rank, shuffle=shuffle, seed=seed,
                                   drop_last=drop_last)
            for epoch in (0, 1, 5):
                s.set_epoch(epoch)
                idx = list(s)
                assert len(idx) == len(s)
                f.write("%d %d %d %d %d %d %d : %s\n" % (n, world, rank, int(shuffle), seed, int(drop_last), epoch,
                                                          " ".join(map(str, idx))))
