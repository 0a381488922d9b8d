"""What one tool call is: its canonical action, view, effects, facts and words."""
