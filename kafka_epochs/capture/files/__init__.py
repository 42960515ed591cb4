"""Capture files: pcap and pcapng (read and written), their layouts, and the packets they hold."""
