"""What a model call costs: the cost it reported, else its tokens at a list price."""
