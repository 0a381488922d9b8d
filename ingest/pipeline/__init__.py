"""The one pipeline every record goes through: order, sequence, detect, store."""
