"""The HTTP client wing: the one client every test sends through (client), the connection it
opens (TLS trust, client certificates, proxies), back-off and pacing per key, the recording of
every exchange and the redaction of every secret from what is recorded."""
