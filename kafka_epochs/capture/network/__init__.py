"""Inside a captured packet: the link layer, IP (v4 and v6) and TCP, chained by :mod:`.dissect`."""
