"""The leader-epoch check a partition leader applies to client requests (KIP-320, KIP-359).

Fetch (v9+), ListOffsets (v4+), OffsetForLeaderEpoch (v2+) and, in this project's bundled
protocol, Produce (v12, KIP-359) carry the leader epoch the client believes is current. The
broker compares it with its own before doing anything else.
"""

from __future__ import annotations

from kafka_epochs.epochs.errors import Errors

#: "No epoch": the field is absent from the request version, or the client does not know one.
#: Apache names it ``RecordBatch.NO_PARTITION_LEADER_EPOCH`` / ``LeaderAndIsr.NoEpoch``.
NO_EPOCH = -1

#: The controller's StopReplica sentinel for "this topic is being deleted" (KIP-570). Topic
#: deletion does not bump the leader epoch, so the controller sends this instead and it wins
#: over any epoch. Apache names it ``LeaderAndIsr.EpochDuringDelete``.
EPOCH_DURING_DELETE = -2


def check_leader_epoch(request_epoch: int, current_epoch: int) -> Errors:
    """The error for a client request that names ``request_epoch`` against the leader's epoch.

    - ``NO_EPOCH`` (-1, also what every older request version means): no check, ``NONE``.
    - older than the broker's: ``FENCED_LEADER_EPOCH``; the client's metadata is stale.
    - newer than the broker's: ``UNKNOWN_LEADER_EPOCH``; the broker has not yet heard of the
      election the client already knows about.
    - equal: ``NONE``.

    This is the comparison Apache makes in ``Partition.checkCurrentLeaderEpoch``, after
    ``RequestUtils.getLeaderEpoch`` has turned -1 into "absent". Only -1 skips the check: any
    other value, even a nonsensical negative one, is compared like a real epoch.
    """
    if request_epoch == NO_EPOCH:
        return Errors.NONE
    if request_epoch < current_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if request_epoch > current_epoch:
        return Errors.UNKNOWN_LEADER_EPOCH
    return Errors.NONE
