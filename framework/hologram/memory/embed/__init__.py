"""Embed: dense vectors of text — the models, how they run, and the vectors they make.

Why a group: a sentence embedder is the one heavy dependency of memory (a model's weights, onnxruntime or
the numpy network that replaces it, a tokenizer of its own) and it sits behind one seam, the ``Embedder``
protocol of ``embedder``: the factory and the default int8 USE build, ``use_int8`` (the network in numpy)
with ``ort_math`` (onnxruntime's arithmetic, bit for bit), ``onnx_weights`` and ``use_tokenizer`` (the
model's rewrite and its tokenizer), ``e5_embed`` (multilingual-e5-small, opt-in), ``vectors`` (vectors tagged
with the model that made them) and ``vector_cache`` (passage vectors on disk, so nothing is embedded twice).
Nothing outside the group knows which model runs.
"""
