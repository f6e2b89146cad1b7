"""ColBench as a Gymnasium suite."""
