"""The request-wide checks of controller requests: broker epoch (KIP-380), controller epoch.

LeaderAndIsr and StopReplica both pass these two gates before any partition is looked at,
in this order (Apache checks the broker epoch in ``KafkaApis`` before handing the request to
``ReplicaManager``, which checks the controller epoch):

1. A broker epoch that is set (not -1) and older than the broker's own means the request was
   meant for an earlier incarnation of this broker (it restarted and registered again):
   ``STALE_BROKER_EPOCH``.
2. A controller epoch older than the newest one the broker has seen means the sender is a
   deposed controller: ``STALE_CONTROLLER_EPOCH``.

Either error fails the whole request.
"""

from __future__ import annotations

from kafka_epochs.epochs.errors import Errors

#: A request that carries no broker epoch (versions before KIP-380, or a controller that does
#: not know it). Apache: ``AbstractControlRequest.UNKNOWN_BROKER_EPOCH``.
UNKNOWN_BROKER_EPOCH = -1


def broker_epoch_error(request_broker_epoch: int, broker_epoch: int, *, accept_newer: bool = False) -> Errors:
    """``STALE_BROKER_EPOCH`` when the request's broker epoch is set and is not the broker's.

    That is this project's rule (the issue's decision). With ``accept_newer`` a request epoch
    *newer* than the broker's passes, as Apache does (``ZkBrokerEpochManager.isBrokerEpochStale``,
    formerly ``KafkaApis.isBrokerEpochStale``): the controller can learn of a broker's new
    registration before the broker does. Nothing is checked while either epoch is unknown (-1).
    """
    if UNKNOWN_BROKER_EPOCH in (request_broker_epoch, broker_epoch):
        return Errors.NONE
    if request_broker_epoch < broker_epoch or (request_broker_epoch > broker_epoch and not accept_newer):
        return Errors.STALE_BROKER_EPOCH
    return Errors.NONE


def controller_epoch_error(request_controller_epoch: int, known_controller_epoch: int) -> Errors:
    """``STALE_CONTROLLER_EPOCH`` when the sender's controller epoch is older than the newest seen.

    An equal epoch is the current controller; a newer one is a new controller, whose epoch
    the broker then adopts (Apache ``ReplicaManager.becomeLeaderOrFollower`` and
    ``ReplicaManager.stopReplicas``).
    """
    if request_controller_epoch < known_controller_epoch:
        return Errors.STALE_CONTROLLER_EPOCH
    return Errors.NONE
