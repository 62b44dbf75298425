"""Report writers: the JSON conformance statement and the HTML report's own sections."""
