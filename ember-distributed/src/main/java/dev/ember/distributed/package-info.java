/**
 * Data-parallel training across processes (issue #38): {@link dev.ember.distributed.ProcessGroup} (a torchrun-style
 * rendezvous and the collectives allreduce, broadcast, allgather and barrier over TCP, in a ring of non-blocking
 * sockets, with a fixed summation order and typed failures naming the rank) and
 * {@link dev.ember.distributed.DistributedSampler} (each rank's shard of an epoch, as PyTorch's
 * {@code DistributedSampler}).
 */
package dev.ember.distributed;
