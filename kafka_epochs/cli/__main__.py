"""``python -m kafka_epochs.cli``: the command line, as the ``kafka-epochs`` script runs it."""

from kafka_epochs.cli import run

run()
