"""What every stage uses: typed errors, the configuration, input checks, the lock, Chroma and Ollama connections."""
