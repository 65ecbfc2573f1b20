"""Parity of the emitted settings by running the engines: SmolLM2-135M's per-token
log-probabilities in transformers and in llama.cpp (llama-cpp-python) under the same strategy."""
