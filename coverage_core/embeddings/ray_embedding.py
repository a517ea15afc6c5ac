"""Embedding on Ray Data, for corpora too big for one machine to embed.

:func:`embed_on_ray` keeps the contract of
:func:`~coverage_core.embeddings.cache.embed_texts`: the same vectors, the
same counts, the same content-keyed cache. Only the work in between moves:
the distinct texts the cache lacks become a Ray dataset, and a pool of
actors (each holding its own copy of the embedder) embeds them batch by
batch. The driver writes every finished batch to the cache as it arrives,
so an interrupted job keeps what finished, and a re-run, here or on another
machine that shares the cache folder, embeds only the rest. The analysis
after embedding stays one process on one machine.

Each actor builds its embedder from an :class:`EmbedderRecipe` (the
embedder's class and settings) and inside runs ``embed_texts`` without a
cache, so batching, truncation and normalisation are exactly the
single-process ones.

API keys never travel through Ray: Ray keeps actor arguments and runtime
environments in its control store and may show them in its dashboard, so
the recipe leaves the key out and each actor reads it from the environment
of the machine it runs on (``OPENAI_API_KEY``, ``VOYAGE_API_KEY`` or
``EMBEDDING_API_KEY``, see :func:`~coverage_core.embeddings.registry.key_variable`).
A key that exists only in memory (typed into the dashboard) is refused with
a sentence saying so. A local Ray started here inherits this process's
environment; on a cluster, set the variable on every node.

Ray is optional (``requirements-ray.txt``); it is imported only when
:func:`embed_on_ray` runs.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from coverage_core.embeddings.base import Embedder, redact
from coverage_core.embeddings.cache import (
    CacheKey,
    EmbeddingCache,
    EmbeddingRun,
    assemble_run,
    embed_texts,
    keep_batch,
    text_hash,
)
from coverage_core.embeddings.registry import environment_key, key_variable, sends_requests
from coverage_core.errors import CoverageError, InputError, ProviderError
from coverage_core.validation import check_scalar

LOCAL_ADDRESS = "local"
"""The ``address`` that starts a Ray on this machine for one call (None means the same)."""

LOCAL_WORKER_CPUS = 1.0
"""CPUs each actor running the local model reserves.

One CPU per actor, and with it one torch thread (Ray sets
``OMP_NUM_THREADS`` to the actor's CPUs): independent batches on separate
cores scale better than one model splitting every product across threads
(see ``coverage_core/embeddings/local.py``).
"""

API_WORKER_CPUS = 0.25
"""CPUs each actor calling a paid API reserves: it mostly waits for the network."""

DEFAULT_API_CONCURRENCY = 4
"""Actors (so requests in flight at once) for a paid provider when ``num_workers`` is None
and the embedder names no ``max_concurrency`` of its own."""

DEFAULT_BATCH_SIZE = 64
"""Texts per batch (one cache write each) for an embedder without ``batch_size``, as in ``embed_texts``."""

RAY_MISSING = "Ray is not installed; install it with pip install -r requirements-ray.txt."

# The settings an actor rebuilds its embedder from never include the key.
_SECRET_SETTINGS = frozenset({"api_key"})
# Each actor sends one request at a time, so the pool size alone bounds the
# requests in flight (an API embedder would otherwise run several per actor).
_ACTOR_OVERRIDES = {"max_concurrency": 1}
# Ray's own INFO and WARNING lines (token authentication, progress bars,
# "execution finished") would interleave with our progress output.
_RAY_LOGGERS = ("ray", "ray.data")


def import_ray() -> Any:
    """The ``ray`` module with ``ray.data`` loaded; InputError with the install command when missing."""
    try:
        import ray
        import ray.data  # noqa: F401 - ray[data] extra: pyarrow and friends
    except ImportError as exc:
        raise InputError(RAY_MISSING) from exc
    return ray


@dataclass(frozen=True)
class EmbedderRecipe:
    """What an actor needs to build its own copy of an embedder: its class and settings, never its key.

    Attributes:
        embedder_class: The embedder's class (a dataclass, importable on the workers).
        settings: Its constructor arguments as ``(name, value)`` pairs,
            without ``api_key`` (an actor reads the key from its own
            environment) and with ``max_concurrency`` 1 (one request at a
            time per actor: the pool size is the concurrency).
    """

    embedder_class: type
    settings: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, embedder: Embedder) -> "EmbedderRecipe":
        """The recipe of ``embedder``.

        Raises:
            InputError: ``embedder`` has an API key that is not the
                environment's key for its endpoint: a key kept only in
                memory cannot reach the workers without passing through Ray.
            TypeError: ``embedder`` is not a dataclass (its settings are unknown).
        """
        if not dataclasses.is_dataclass(embedder) or isinstance(embedder, type):
            raise TypeError(f"embed_on_ray needs a dataclass embedder, not {type(embedder).__name__}")
        key = getattr(embedder, "api_key", None)
        base_url = getattr(embedder, "base_url", None)
        if key and key != environment_key(embedder.provider, base_url):
            variable = key_variable(embedder.provider, base_url)
            raise InputError(
                f"Ray workers read the API key from their own environment and a key entered by hand is never "
                f"sent through Ray; set {variable} where Ray runs, or embed without Ray."
            )
        settings = tuple(
            (field.name, _actor_setting(embedder, field.name))
            for field in dataclasses.fields(embedder)
            if field.init and field.name not in _SECRET_SETTINGS
        )
        return cls(type(embedder), settings)

    def build(self) -> Embedder:
        """A fresh embedder with these settings (an API embedder resolves its key here)."""
        return self.embedder_class(**dict(self.settings))


def _actor_setting(embedder: Embedder, name: str) -> Any:
    """The value of setting ``name`` on an actor's copy of ``embedder``.

    A worker on another machine may choose another precision than the driver
    ("auto" picks bf16 on AMX CPUs), and its vectors would be cached under the
    driver's precision; so an actor runs the precision the driver runs.
    """
    if name == "precision" and getattr(embedder, "precision_used", None):
        return embedder.precision_used
    return _ACTOR_OVERRIDES.get(name, getattr(embedder, name))


@dataclass(frozen=True)
class _Failure:
    """Why an actor could not embed a batch, in a form that crosses processes."""

    kind: str  # "input", a ProviderError kind, or "crash" for anything else
    message: str

    @classmethod
    def of(cls, exc: Exception, secret: str | None = None, where: str = "") -> "_Failure":
        """The failure for ``exc``, its message without ``secret`` or URL credentials, after ``where``."""
        if isinstance(exc, InputError):
            kind, message = "input", str(exc)
        elif isinstance(exc, ProviderError):
            kind, message = exc.kind, str(exc)
        else:  # an exception the provider code does not know may quote a request
            kind, message = "crash", f"{type(exc).__name__}: {exc}"
        return cls(kind, where + redact(message, secret))

    def error(self, detail: str) -> Exception:
        """The exception the driver raises: the actor's own kind of error, with ``detail`` in brackets after it."""
        if self.kind == "crash":
            return RuntimeError(f"An embedding worker failed: {self.message} ({detail})")
        message = f"{self.message.rstrip()} ({detail})"
        return InputError(message) if self.kind == "input" else ProviderError(message, self.kind)


class EmbeddingActor:
    """Ray Data callable class: embeds batches of ``{"position", "text"}`` rows.

    Subclassed per job with a ``recipe`` class attribute (see
    :func:`_actor_class`), so the actor takes no constructor arguments.
    An actor that failed once (a wrong key, retries used up) refuses its
    remaining batches without calling the provider: a pool of ``c`` actors
    sends at most ``c`` failing requests, never one per batch. A failure is
    returned as rows, not raised, because Ray Data aborts the whole job on a
    raised error and drops batches that had finished but not yet reached
    the driver.
    """

    recipe: EmbedderRecipe

    def __init__(self) -> None:
        self.failure: _Failure | None = None
        self.embedder: Embedder | None = None
        try:
            self.embedder = self.recipe.build()
        except CoverageError as exc:  # e.g. no key in this worker's environment
            self.failure = _Failure.of(exc, where="On a Ray worker: ")

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        positions = np.asarray(batch["position"], dtype=np.int64)
        if self.failure is None:
            try:
                run = embed_texts([str(text) for text in batch["text"]], self.embedder, None)
            except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
                self.failure = _Failure.of(exc, secret=getattr(self.embedder, "api_key", None))
            else:
                return {
                    "position": positions,
                    "vector": _as_bytes([row.astype("<f4").tobytes() for row in run.vectors]),
                    "tokens": np.asarray(run.token_counts, dtype=np.int64),
                    "failure_kind": np.full(len(positions), ""),
                    "failure": np.full(len(positions), ""),
                }
        return {
            "position": positions,
            "vector": _as_bytes([b""] * len(positions)),
            "tokens": np.zeros(len(positions), dtype=np.int64),
            "failure_kind": np.full(len(positions), self.failure.kind),
            "failure": np.full(len(positions), self.failure.message),
        }


def _as_bytes(values: list[bytes]) -> np.ndarray:
    """An object array of bytes: Ray stores it as one binary column, whatever the vector size."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _actor_class(recipe: EmbedderRecipe) -> type:
    """An :class:`EmbeddingActor` subclass carrying ``recipe`` (pickled with the class, by value)."""
    return type("EmbeddingActorWithRecipe", (EmbeddingActor,), {"recipe": recipe})


def _is_local(address: str | None) -> bool:
    return address is None or address.strip().lower() == LOCAL_ADDRESS


@contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's loggers at ERROR while we run (restored after): our progress is the one to read."""
    loggers = [logging.getLogger(name) for name in _RAY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _connect(ray: Any, address: str | None, local_cpus: int) -> bool:
    """Join the Ray session to use; True when this call started it (and so must end it).

    An existing session in this process is used as it is. ``address`` None or
    ``"local"`` starts a Ray on this machine with ``local_cpus`` CPUs;
    anything else (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``) connects to a cluster.
    """
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if _is_local(address):
        # "local" rather than None: None would join a cluster named by $RAY_ADDRESS.
        ray.init(address="local", num_cpus=local_cpus, include_dashboard=False, **options)
        return True
    try:
        ray.init(address=address.strip(), **options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(
            f"Could not connect to the Ray cluster at {address!r} ({reason}); start it with "
            "ray start --head, or check the address (auto, ray://host:10001 or host:6379)."
        ) from None
    return True



def _pool_size(ray: Any, embedder: Embedder, num_workers: int | None, cpus_per_worker: float) -> int:
    """How many actors to run; InputError when the cluster cannot hold that many."""
    available = float(ray.cluster_resources().get("CPU", 0))
    if num_workers is None:
        if sends_requests(embedder.provider):
            return int(getattr(embedder, "max_concurrency", None) or DEFAULT_API_CONCURRENCY)
        return max(1, int(available // cpus_per_worker))
    if num_workers * cpus_per_worker > available:
        raise InputError(
            f"The Ray cluster has {available:g} CPUs, too few for {num_workers} embedding workers of "
            f"{cpus_per_worker:g} CPU each; ask for fewer workers or add nodes."
        )
    return num_workers


@contextmanager
def _quiet_data_context(ray: Any) -> Iterator[None]:
    """Ray Data without progress bars or statistics on the terminal (the settings are restored after)."""
    context = ray.data.DataContext.get_current()
    quiet = {"enable_progress_bars": False, "enable_auto_log_stats": False, "print_on_execution_start": False}
    saved = {name: getattr(context, name) for name in quiet if hasattr(context, name)}
    for name in saved:
        setattr(context, name, quiet[name])
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(context, name, value)


def _run_job(
    ray: Any,
    recipe: EmbedderRecipe,
    texts: list[str],
    store: Callable[[list[int], list[np.ndarray], list[int]], None],
    *,
    batch_size: int,
    pool_size: int,
    cpus_per_worker: float,
) -> tuple[_Failure | None, int]:
    """Embed ``texts`` on the actor pool, calling ``store(positions, vectors, tokens)`` per finished batch.

    Returns the first failure an actor reported (None if none) and how many texts failed.
    """
    import pandas as pd

    # One block per batch (from_items would split unevenly), so every batch
    # reaches this process as soon as its actor is done with it.
    blocks = [
        pd.DataFrame({"position": np.arange(start, min(start + batch_size, len(texts))),
                      "text": texts[start : start + batch_size]})
        for start in range(0, len(texts), batch_size)
    ]
    dataset = ray.data.from_pandas(blocks).map_batches(
        _actor_class(recipe),
        batch_size=batch_size,
        batch_format="numpy",
        # More actors than batches would only load the model for nothing.
        compute=ray.data.ActorPoolStrategy(size=min(pool_size, len(blocks))),
        num_cpus=cpus_per_worker,
    )
    first_failure: _Failure | None = None
    n_failed = 0
    with _quiet_data_context(ray):
        for block in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            finished = block["failure_kind"] == ""
            if not finished.all():
                n_failed += int((~finished).sum())
                if first_failure is None:
                    index = int(np.flatnonzero(~finished)[0])
                    first_failure = _Failure(str(block["failure_kind"][index]), str(block["failure"][index]))
            if finished.any():
                store(
                    [int(position) for position in block["position"][finished]],
                    [np.frombuffer(vector, dtype="<f4") for vector in block["vector"][finished]],
                    [int(tokens) for tokens in block["tokens"][finished]],
                )
    return first_failure, n_failed


def embed_on_ray(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    address: str | None = None,
    num_workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbeddingRun:
    """Vectors for ``texts``, the missing ones embedded by a pool of Ray actors.

    Same contract as :func:`~coverage_core.embeddings.cache.embed_texts`: the cache is read first and each
    distinct missing text is embedded once; with everything cached Ray is not even started. Missing texts go
    to the actors in batches of ``embedder.batch_size``, each finished batch cached as soon as it reaches this
    process. When batches fail, the others still finish and are cached, then the first failure is raised as
    the actor met it. Why: a re-run embeds only what is left (docs/deployment.md, *Running on a Ray cluster*).

    Args:
        texts: The texts, in the order the vectors are wanted.
        embedder: A dataclass embedder (``make_embedder(...)``); each actor
            builds its own from the same settings, without the API key.
        cache: Where vectors are looked up and stored; None keeps nothing.
        address: None or ``"local"``: a Ray on this machine for this call only; ``"auto"``: the cluster this
            machine belongs to; ``"ray://host:10001"``: a remote one. A Ray session open in this process
            is used as it is.
        num_workers: Actors in the pool. Local model: one CPU each (default: all the cluster's CPUs). A provider
            that sends requests: the requests in flight, one per actor (default: the embedder's
            ``max_concurrency``, else :data:`DEFAULT_API_CONCURRENCY`).
        progress: ``progress(done, total)`` after the cache lookup and after every batch, counting input texts.

    Raises:
        InputError: Ray is missing; the cluster cannot be reached or is too
            small for ``num_workers``; the API key exists only in memory or
            is missing on the workers.
        ProviderError: a paid provider failed a batch (after its retries).
    """
    check_num_workers(num_workers)
    texts = list(texts)
    key = CacheKey.of(embedder)
    digests = [text_hash(text) for text in texts]
    first_position, repeats = _distinct(digests)
    known = cache.get_many(key, list(first_position)) if cache is not None else {}
    n_cached = sum(repeats[digest] for digest in known)
    tally = _Tally(len(texts), n_cached, progress)
    missing = [digest for digest in first_position if digest not in known]
    if missing:
        def store(positions: list[int], vectors: list[np.ndarray], tokens: list[int]) -> None:
            items = [(missing[position], vector, count) for position, vector, count in zip(positions, vectors, tokens)]
            tally.add(*keep_batch(cache, key, items, known, repeats))

        missing_texts = [texts[first_position[digest]] for digest in missing]
        failure, n_failed = _embed_on_actors(missing_texts, embedder, store, address, num_workers)
        if failure is not None:
            raise failure.error(_unfinished(n_failed, len(missing), cached=cache is not None))
    return assemble_run(digests, known, embedder, key, n_cached, tally.new_tokens)


def _unfinished(n_failed: int, n_missing: int, *, cached: bool) -> str:
    """What a failed job leaves behind, for the end of its error message."""
    kept = (
        "the finished ones are in the cache, so running again embeds only the missing ones"
        if cached else "without a cache nothing was kept"
    )
    return f"{n_failed} of {n_missing} texts were not embedded; {kept}."


def check_num_workers(num_workers: int | None, name: str = "num_workers") -> None:
    """InputError unless ``num_workers`` is None or at least 1; ``name`` is what the message calls it."""
    if num_workers is not None:
        check_scalar(num_workers, name, int, min_val=1)


def _distinct(digests: Sequence[bytes]) -> tuple[dict[bytes, int], Counter]:
    """Each distinct digest's first position, in order of first appearance, and how often each occurs."""
    first_position: dict[bytes, int] = {}
    for position, digest in enumerate(digests):
        first_position.setdefault(digest, position)
    return first_position, Counter(digests)


@dataclass
class _Tally:
    """Texts done and tokens paid so far, reported through ``progress(done, total)`` at every change."""

    total: int
    done: int
    progress: Callable[[int, int], None] | None
    new_tokens: int = 0

    def __post_init__(self) -> None:
        self._report()

    def add(self, texts_done: int, tokens_paid: int) -> None:
        self.done += texts_done
        self.new_tokens += tokens_paid
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)


def _embed_on_actors(
    texts: list[str],
    embedder: Embedder,
    store: Callable[[list[int], list[np.ndarray], list[int]], None],
    address: str | None,
    num_workers: int | None,
) -> tuple[_Failure | None, int]:
    """:func:`_run_job` for ``texts`` on the Ray at ``address``, started here (and stopped after) when needed."""
    recipe = EmbedderRecipe.of(embedder)  # refuses a key kept in memory before Ray starts
    ray = import_ray()
    cpus_per_worker = API_WORKER_CPUS if sends_requests(embedder.provider) else LOCAL_WORKER_CPUS
    with _quiet_ray():
        # A local Ray gets every CPU here, or as many as the workers asked for need.
        local_cpus = max(os.cpu_count() or 1, math.ceil((num_workers or 0) * cpus_per_worker))
        started_here = _connect(ray, address, local_cpus)
        try:
            return _run_job(
                ray, recipe, texts, store,
                batch_size=int(getattr(embedder, "batch_size", None) or DEFAULT_BATCH_SIZE),
                pool_size=_pool_size(ray, embedder, num_workers, cpus_per_worker),
                cpus_per_worker=cpus_per_worker,
            )
        finally:
            if started_here:
                ray.shutdown()
