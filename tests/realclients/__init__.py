"""Real client libraries from PyPI against a loopback broker built from this codec.

- ``broker.py``: :class:`LoopbackBroker`, a single-node broker on 127.0.0.1 that records every
  connection's bytes (:class:`ConnectionRecording`) and every request and response.
- ``drivers.py``: kafka-python, aiokafka and confluent-kafka producing and consuming the same
  records; :func:`record_session` runs one small session and returns its recordings.
- ``wire.py``: the recordings read back with this project's decoders.
"""
