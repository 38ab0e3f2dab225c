"""Rules every later layer applies: the trigger (when a response counts as exposed)."""
