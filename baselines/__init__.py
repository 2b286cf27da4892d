"""Comparison systems behind the harness's adapter protocol: exact, flat RAG, k-means, FAISS IVF."""
