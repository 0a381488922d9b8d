"""Secret redaction: every argument, result, text and URL is redacted here before it is stored."""
