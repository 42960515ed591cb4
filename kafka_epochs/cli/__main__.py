"""``python -m kafka_epochs.cli``: the command line, as the ``kafka-epochs`` script runs it."""

import sys

from kafka_epochs.cli import main

sys.exit(main())
