"""What one engine holds (`EngineState`), which scopes are in RAM (`Residency`), and its probe setting."""
