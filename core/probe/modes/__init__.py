"""Built-in metric modes: statistics, tensor (real data) and md5."""
