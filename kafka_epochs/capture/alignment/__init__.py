"""The Kafka layer of a capture: which connections are Kafka (:mod:`.flows`), and frame
boundaries kept through gaps and found again (:mod:`.aligner`, :mod:`.resync`)."""
