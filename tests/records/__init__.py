"""Tests of kafka_epochs.records: record batches, legacy message sets, and their codecs."""
