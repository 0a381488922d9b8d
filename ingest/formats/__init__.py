"""The input formats: one table that recognises and decodes, and one module per format."""
