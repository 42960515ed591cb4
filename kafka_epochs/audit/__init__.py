"""The epoch audit's domain, engine-free: events from frames, clusters, the verdict rule, judging.

Nothing here imports pyspark (an import-linter contract). :mod:`~kafka_epochs.audit.events` reads
frames into events; :mod:`~kafka_epochs.audit.clusters` tells clusters apart;
:mod:`~kafka_epochs.audit.judging` judges events, all at once or batch after batch;
:mod:`~kafka_epochs.audit.local` is the in-process engine over capture files. The Spark engine
(:mod:`kafka_epochs.spark.epoch_audit`) runs the same extraction and verdict rule at scale.
"""
