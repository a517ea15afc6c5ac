"""The schema a saved analysis is checked against (the memory a file may take: :mod:`coverage_core.inputs.memory`).

A saved analysis (:mod:`coverage_core.saved.analysis`) or a vector
file (:mod:`coverage_core.inputs.vector_store`) may come from anyone, so
nothing in it is trusted: every JSON member is parsed with bounded size and
nesting, every field the analysis uses is checked for its type and range
before use, and the sizes a file declares are compared with
:func:`memory_budget` before anything of that size is allocated. Each
problem is one :class:`~coverage_core.errors.InputError` naming the file and
the field.

A saved analysis's layout is versioned (:data:`SAVED_SCHEMA_VERSION`, the manifest's ``schema_version``);
:func:`upgrade_manifest` is the upgrade path, so a folder or zip saved by an earlier version still opens:

* version 1: the first layout;
* version 2 adds ``decisions.json``, the user's decisions about the suggested questions (accepted, edited,
  rejected: :mod:`coverage_core.decisions`, checked by :func:`check_decisions`). A version-1 folder has none:
  it opens with no decisions (``SavedAnalysis.decisions`` None), as before.

A version newer than this program's is refused (it may hold what this version would drop).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

from coverage_core import bounded_json
from coverage_core.errors import InputError
from coverage_core.inputs.memory import READ_COPIES, check_fits, size_words

__all__ = [
    "MAX_JSON_BYTES", "MAX_JSON_DEPTH", "SAVED_SCHEMA_VERSION", "Fields", "check_decisions", "load_json",
    "upgrade_manifest",
]

SAVED_SCHEMA_VERSION = 2
"""Version of a saved analysis's layout this program writes; it reads every version from 1 up to it
(:func:`upgrade_manifest`)."""

MAX_JSON_BYTES = 256 * 1024**2
"""Largest JSON member of a saved analysis: a report of a million questions stays well under it."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of a JSON member: the report nests about 5 deep; Python's parser recurses per level."""


def load_json(data: bytes, file: str, label: str, max_bytes: int | None = None) -> Any:
    """The JSON value of ``data`` (the member ``file`` of ``label``), its strings free of lone surrogates
    (:func:`~coverage_core.bounded_json.loads`); InputError when it is too large, not UTF-8 JSON, or
    nested deeper than :data:`MAX_JSON_DEPTH`."""
    limit = MAX_JSON_BYTES if max_bytes is None else max_bytes
    if len(data) > limit:
        raise InputError(f"The {file} of {label} is {size_words(len(data))}, over the {size_words(limit)} a saved "
                         "analysis's JSON file may be; save the analysis again.")
    try:
        return bounded_json.loads(data, what=f"The {file} of {label}", max_depth=MAX_JSON_DEPTH)
    except bounded_json.JSONError as error:
        if error.kind == "depth":
            raise InputError(f"The {file} of {label} is nested more than {MAX_JSON_DEPTH} levels deep, so it was "
                             "not written by this program; save the analysis again.") from None
        raise InputError(f"The {file} of {label} is not valid JSON; save the analysis again.") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Fields:
    """Checks of the fields of one JSON member (``file`` of ``label``); each failure names the field.

    Every method returns the value when it is valid, so a record is read and
    checked in one line: ``fields.integer(record, "n_blank", minimum=0)``.
    """

    def __init__(self, file: str, label: str):
        self.file, self.label = file, label

    def fail(self, name: str, value: Any, need: str) -> InputError:
        return InputError(f"The {self.file} of {self.label} has an invalid {name} ({_shown(value)}), which must be "
                          f"{need}; save the analysis again.")

    def missing(self, name: str) -> InputError:
        return InputError(f"The {self.file} of {self.label} lacks the field {name}; save the analysis again.")

    def get(self, record: Mapping, key: str, name: str, default: Any = ...) -> Any:
        if key in record:
            return record[key]
        if default is ...:
            raise self.missing(name)
        return default

    def mapping(self, value: Any, name: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(name, value, "an object")
        return value

    def integer(self, value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None,
                optional: bool = False) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise self.fail(name, value, "a whole number")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            low = "" if minimum is None else f"at least {minimum}"
            high = "" if maximum is None else f"at most {maximum}"
            raise self.fail(name, value, " and ".join(part for part in (low, high) if part))
        return int(value)

    def number(self, value: Any, name: str, *, optional: bool = False) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise self.fail(name, value, "a finite number")
        return float(value)

    def text(self, value: Any, name: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(name, value, "text")
        return value

    def boolean(self, value: Any, name: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(name, value, "true or false")
        return value

    def items(self, value: Any, name: str) -> list:
        if not isinstance(value, list):
            raise self.fail(name, value, "a list")
        return value

    def texts(self, value: Any, name: str) -> list[str]:
        return [self.text(item, f"{name}[{i}]") for i, item in enumerate(self.items(value, name))]

    def pair(self, value: Any, name: str) -> list:
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(name, value, "a pair")
        return value


# --------------------------------------------------------------------------
# the members of a saved analysis
# --------------------------------------------------------------------------


COUNTS = ("documents", "chunks", "questions", "question_file_rows", "clusters")
"""The row counts a manifest records, one per Parquet member."""
EMBEDDED_COUNTS = ("n_cached", "n_embedded", "n_over_limit", "new_tokens")


def _typed(fields: Fields, value: Any, annotation: str, name: str) -> Any:
    """``value`` checked against a dataclass field's annotation (``"int"``, ``"float | None"``, ...); other
    annotations are left to the dataclass."""
    optional = "None" in annotation
    base = annotation.replace("| None", "").replace("None |", "").strip()
    if value is None:
        if optional or base not in ("int", "float", "str", "bool"):
            return None
        raise fields.fail(name, value, f"{'a whole number' if base == 'int' else base}, not null")
    check = {"int": fields.integer, "float": fields.number, "str": fields.text, "bool": fields.boolean}.get(base)
    return value if check is None else check(value, name)


def _dataclass_from(fields: Fields, kind, record: Any, name: str, *, known_only: bool = False):
    """``kind(**record)``, each field type-checked first; an unknown field is refused (left out when
    ``known_only``: a field a later version added), and a value ``kind`` refuses is named."""
    import dataclasses

    record = fields.mapping(record, name)
    annotations = {f.name: f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
                   for f in dataclasses.fields(kind)}
    values = {}
    for key, value in record.items():
        if key not in annotations:
            if known_only:
                continue
            raise InputError(f"The {fields.file} of {fields.label} has an unknown field {name}.{key}; save the "
                             "analysis again.")
        values[key] = _typed(fields, value, annotations[key], f"{name}.{key}")
    try:
        return kind(**values)
    except TypeError:  # a field without a default is missing
        absent = [f.name for f in dataclasses.fields(kind) if f.name not in values
                  and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        raise fields.missing(f"{name}.{absent[0]}" if absent else name) from None
    except ValueError:  # InputError too: a value out of range, or two that disagree
        for key, value in values.items():
            try:
                kind(**{**_defaults_of(kind), key: value})
            except (TypeError, ValueError):
                raise fields.fail(f"{name}.{key}", value, f"a valid {key.replace('_', ' ')}") from None
        raise fields.fail(name, record, "settings that agree with each other") from None


def _defaults_of(kind) -> dict:
    """The required fields of ``kind`` with a harmless value, so one field can be tried alone."""
    import dataclasses

    return {f.name: 0 for f in dataclasses.fields(kind)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


def _provider(fields: Fields, value: Any, name: str) -> str:
    from coverage_core.embeddings.registry import PROVIDERS

    if not isinstance(value, str) or value.strip().lower() not in PROVIDERS:
        raise fields.fail(name, value, f"one of the providers {', '.join(PROVIDERS)}")
    return value


def _analysis_config(fields: Fields, settings: Any):
    from coverage_core.config import AnalysisConfig, EmbeddingConfig
    from coverage_core.stages.chunking import ChunkingConfig
    from coverage_core.suggest.gaps import GapConfig

    settings = dict(fields.mapping(settings, "config"))
    parts = {"embedding": EmbeddingConfig, "chunking": ChunkingConfig, "gaps": GapConfig}
    built = {key: _dataclass_from(fields, kind, fields.get(settings, key, f"config.{key}"), f"config.{key}")
             for key, kind in parts.items()}
    _provider(fields, built["embedding"].provider, "config.embedding.provider")
    _url(fields, built["embedding"].base_url, "config.embedding.base_url")
    rest = {key: value for key, value in settings.items() if key not in parts}
    top = _dataclass_from(fields, AnalysisConfig, rest, "config")
    import dataclasses

    return dataclasses.replace(top, **built)


def _url(fields: Fields, value: Any, name: str) -> str | None:
    value = fields.text(value, name, optional=True)
    if value is not None and not value.lower().startswith(("http://", "https://")):
        raise fields.fail(name, value, "an http or https address")
    return value


def check_manifest(manifest: dict, label: str, file: str) -> dict:
    """The fields of a manifest the analysis uses, checked: ``counts``, ``dimensions``, ``config``
    (an ``AnalysisConfig``), ``question_file``, ``embedded`` (``chunks`` and ``questions``, with every count),
    ``cluster_warnings``. The vectors the counts announce must fit :func:`memory_budget`."""
    fields = Fields(file, label)
    _provider(fields, fields.get(manifest, "provider", "provider"), "provider")
    fields.text(manifest.get("model"), "model", optional=True)
    fields.text(manifest.get("created"), "created", optional=True)
    _url(fields, manifest.get("base_url"), "base_url")
    passages = manifest.get("passages", "documents")
    if passages not in ("documents", "vectors"):
        raise fields.fail("passages", passages, '"documents" or "vectors"')
    chunking = manifest.get("chunking")
    if chunking is not None:
        from coverage_core.stages.chunking import ChunkingConfig

        _dataclass_from(fields, ChunkingConfig, chunking, "chunking")
    counts_record = fields.mapping(fields.get(manifest, "counts", "counts"), "counts")
    counts = {key: fields.integer(fields.get(counts_record, key, f"counts.{key}"), f"counts.{key}", minimum=0)
              for key in COUNTS}
    if counts["clusters"] > max(counts["chunks"], 1):
        raise fields.fail("counts.clusters", counts["clusters"], f"at most the {counts['chunks']} passages")
    if counts["questions"] > counts["question_file_rows"]:
        raise fields.fail("counts.questions", counts["questions"],
                          f"at most the {counts['question_file_rows']} rows of the question file")
    dimensions = fields.integer(fields.get(manifest, "dimensions", "dimensions"), "dimensions", minimum=1)
    vectors = counts["chunks"] + counts["questions"] + counts["clusters"]
    check_fits(READ_COPIES * 4 * vectors * dimensions,
               f"The {vectors} vectors of {dimensions} dimensions that the {file} of {label} announces")
    config = _analysis_config(fields, fields.get(manifest, "config", "config"))
    return {
        "counts": counts, "dimensions": dimensions, "config": config,
        "question_file": _question_file(fields, fields.get(manifest, "question_file", "question_file"),
                                        counts["question_file_rows"]),
        "embedded": _embedded(fields, fields.get(manifest, "embedded", "embedded")),
        "cluster_warnings": fields.texts(manifest.get("cluster_warnings", []), "cluster_warnings"),
    }


def _question_file(fields: Fields, record: Any, n_rows: int) -> dict:
    record = fields.mapping(record, "question_file")
    name = "question_file"
    duplicates = {}
    for i, item in enumerate(fields.items(record.get("duplicates", []), f"{name}.duplicates")):
        row, of = fields.pair(item, f"{name}.duplicates[{i}]")
        where = f"{name}.duplicates[{i}]"
        duplicates[fields.integer(row, where, minimum=0, maximum=n_rows - 1)] = fields.integer(
            of, where, minimum=0, maximum=n_rows - 1)
    warnings = [tuple(fields.text(part, f"{name}.warnings[{i}]")
                      for part in fields.pair(item, f"{name}.warnings[{i}]"))
                for i, item in enumerate(fields.items(record.get("warnings", []), f"{name}.warnings"))]
    delimiter = fields.text(record.get("delimiter", ","), f"{name}.delimiter")
    if len(delimiter) != 1:
        raise fields.fail(f"{name}.delimiter", delimiter, "one character")
    encoding = fields.text(record.get("encoding", "utf-8"), f"{name}.encoding")
    try:
        "".encode(encoding)
    except LookupError:
        raise fields.fail(f"{name}.encoding", encoding, "a known text encoding") from None
    return {
        "name": fields.text(record.get("name"), f"{name}.name", optional=True),
        "question_column": fields.text(fields.get(record, "question_column", f"{name}.question_column"),
                                       f"{name}.question_column"),
        "n_blank": fields.integer(record.get("n_blank", 0), f"{name}.n_blank", minimum=0),
        "duplicates": duplicates, "encoding": encoding, "delimiter": delimiter, "warnings": warnings,
    }


def _embedded(fields: Fields, record: Any) -> dict:
    record = fields.mapping(record, "embedded")
    checked = {}
    for part in ("chunks", "questions"):
        name = f"embedded.{part}"
        counts = fields.mapping(fields.get(record, part, name), name)
        checked[part] = {key: fields.integer(counts.get(key, 0), f"{name}.{key}", minimum=0)
                         for key in EMBEDDED_COUNTS}
        checked[part]["token_limit"] = fields.integer(counts.get("token_limit"), f"{name}.token_limit", minimum=1,
                                                      optional=True)
    return checked


def check_calibration(data: Any, label: str, file: str):
    """The ``stages.calibration.Calibration`` of a calibration.json, every field checked."""
    from coverage_core.stages.calibration import Calibration

    fields = Fields(file, label)
    data = dict(fields.mapping(data, "top level"))
    if "topic_threshold" in data:  # its name before report schema 3
        data.setdefault("question_support_threshold", data.pop("topic_threshold"))
    calibration = _dataclass_from(fields, Calibration, data, "calibration")
    for name in ("n_probes", "n_near_duplicates"):
        fields.integer(getattr(calibration, name), f"calibration.{name}", minimum=0)
    return calibration


def check_report(data: Any, label: str, file: str) -> tuple[dict, Any]:
    """The report (upgraded to the current schema) and its chunks' ``results.TokenFit`` (or None), with the
    fields a saved analysis reads from it checked."""
    from coverage_core.outputs.report_upgrade import upgrade_report
    from coverage_core.results import TokenFit

    fields = Fields(file, label)
    report = upgrade_report(fields.mapping(data, "top level"))
    config = report.get("config")
    if config is not None:
        chosen = fields.mapping(config, "config").get("model_choice")
        if chosen:
            chosen = fields.mapping(chosen, "config.model_choice")
            fields.texts(chosen.get("languages", []), "config.model_choice.languages")
            fields.text(chosen.get("reason", ""), "config.model_choice.reason")
    chunking = report.get("chunking")
    fit = fields.mapping(chunking, "chunking").get("token_fit") if chunking is not None else None
    if not fit:
        return report, None
    token_fit = _dataclass_from(fields, TokenFit, fit, "chunking.token_fit", known_only=True)
    for key in ("max_tokens", "n_chunks", "n_resplit", "n_truncated"):
        fields.integer(getattr(token_fit, key), f"chunking.token_fit.{key}", minimum=0)
    by_language = fields.mapping(token_fit.by_language, "chunking.token_fit.by_language")
    for key, value in by_language.items():
        fields.integer(value, f"chunking.token_fit.by_language.{key}", minimum=0)
    return report, token_fit


class _DamagedFields(Fields):
    """Fields whose every failure is the one sentence "the file is damaged" (gaps.json has always said so)."""

    def fail(self, name: str, value: Any, need: str) -> InputError:
        return InputError(f"The {self.file} of {self.label} is damaged; save the analysis again.")

    def missing(self, name: str) -> InputError:
        return self.fail(name, None, "")


def check_gaps(data: Any, label: str, file: str, n_chunks: int, n_clusters: int) -> list:
    """The ``suggest.gaps.Gap`` objects of a gaps.json, every field checked; a field a later version added is
    left out, one added since the folder was saved takes its default."""
    from coverage_core.suggest.gaps import Gap
    from coverage_core.suggest.questions import Suggestion

    fields = _DamagedFields(file, label)
    gaps = []
    for i, record in enumerate(fields.items(data, "gaps")):
        values = dict(fields.mapping(record, f"gaps[{i}]"))
        for name in ("suggestions", "dropped"):
            values[name] = tuple(_dataclass_from(fields, Suggestion, item, f"gaps[{i}].{name}", known_only=True)
                                 for item in fields.items(values.get(name, []), f"gaps[{i}].{name}"))
        values["themes"] = tuple(fields.texts(values.get("themes", []), f"gaps[{i}].themes"))
        values["untested"] = tuple(fields.texts(values.get("untested", []), f"gaps[{i}].untested"))
        values["passages"] = tuple(fields.integer(index, f"gaps[{i}].passages")
                                   for index in fields.items(values.get("passages", []), f"gaps[{i}].passages"))
        gap = _dataclass_from(fields, Gap, values, f"gaps[{i}]", known_only=True)
        gaps.append(gap)
    def inside(gap) -> bool:
        chunks = [*gap.passages, *(s.chunk for s in (*gap.suggestions, *gap.dropped) if s.chunk is not None)]
        return 0 <= gap.cluster < n_clusters and all(0 <= index < n_chunks for index in chunks)

    if not all(inside(gap) for gap in gaps):
        raise InputError(f"The gaps in {file} of {label} do not match its clusters and passages; save the analysis "
                         "again.")
    return gaps


# --------------------------------------------------------------------------
# versions, and the decisions about the suggestions (version 2)
# --------------------------------------------------------------------------


def upgrade_manifest(manifest: dict, label: str) -> dict:
    """``manifest`` (its ``format`` checked already) upgraded to :data:`SAVED_SCHEMA_VERSION`: a copy whose
    ``schema_version`` is the current one and whose ``saved_version`` is the one it was written in.

    Version 1 → 2 changes no field: the folder merely has no ``decisions.json``. InputError for a version that
    is not a whole number from 1, or newer than this program's.
    """
    version = manifest.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= SAVED_SCHEMA_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > SAVED_SCHEMA_VERSION
        advice = ("upgrade coverage_core to open it, or save the analysis again with this version" if newer
                  else "save the analysis again with this version")
        raise InputError(
            f"{label} was saved in format version {str(version)[:20]}, but this version reads versions 1 to "
            f"{SAVED_SCHEMA_VERSION}; {advice}."
        )
    return {**manifest, "schema_version": SAVED_SCHEMA_VERSION, "saved_version": version}


def check_decisions(data: Any, label: str, file: str) -> list:
    """The :class:`~coverage_core.decisions.SuggestionDecision` objects of a decisions.json, every field checked:
    a list of objects with text ``question``, ``original``, ``origin``, ``document``, ``passage``, a
    ``decision`` of :data:`~coverage_core.decisions.DECISIONS` and a ``cluster`` that is a whole number from 0
    or null. A field a later version added is left out; a missing text is ``""``."""
    from coverage_core.decisions import DECISIONS, decision_from

    fields = Fields(file, label)
    decisions = []
    for i, record in enumerate(fields.items(data, "decisions")):
        name = f"decisions[{i}]"
        record = fields.mapping(record, name)
        checked = {key: fields.text(record.get(key, ""), f"{name}.{key}")
                   for key in ("question", "original", "origin", "document", "passage")}
        decision = record.get("decision")
        if decision not in DECISIONS:
            raise fields.fail(f"{name}.decision", decision, f"one of {', '.join(DECISIONS)}")
        checked["decision"] = decision
        checked["cluster"] = fields.integer(record.get("cluster"), f"{name}.cluster", minimum=0, optional=True)
        decisions.append(decision_from(checked))
    return decisions
