"""Named topics: c-TF-IDF labels without noise, bigrams, distinct labels, the bundled example."""

import numpy as np
import pytest

from coverage_core.errors import InputError
from coverage_core.stages.topics import cluster_name, cluster_terms, display_names, topic_labels
from tests.helpers import PROJECT

EXAMPLE = PROJECT / "examples" / "wiki-qa"
NOISE = {"alt", "href", "http", "www", "px", "page", "copyright", "the", "and", "of", "acme", "report"}


def _words(label):
    return set(label.replace(" · ", " ").split())


def test_labels_exclude_stop_words_markup_numbers_and_page_furniture():
    header = "ACME Annual Report 2023"
    koala = [
        f"{header}\nThe koala eats eucalyptus leaves. alt=Photo href=http://www.example.com/k.jpg width=200px "
        f"<b>koala</b> marsupial 1999 3rd 42.5 Page {i}\nCopyright 2023 ACME"
        for i in range(6)
    ]
    lobster = [
        f"{header}\nA lobster has claws and lives on the sea floor; lobster fishing x y z. Page {i + 6}\nCopyright 2023 ACME"
        for i in range(6)
    ]
    labels = topic_labels(koala + lobster, [0] * 6 + [1] * 6, 2)
    assert "koala" in labels[0] and "lobster" in labels[1]
    for label in labels:
        words = _words(label)
        assert len(label.split(" · ")) == 3
        assert not words & NOISE, label
        assert not any(ch.isdigit() for ch in label)
        assert all(len(w) > 1 for w in words)


def test_distinctive_bigram_beats_its_parts():
    steam = [f"The steam engine changed industry. A steam engine needs coal {w}." for w in ("water", "fire", "iron")]
    sail = [f"The sailing ship crossed oceans. A sailing ship needs wind {w}." for w in ("canvas", "rope", "mast")]
    terms = cluster_terms(steam + sail, [0, 0, 0, 1, 1, 1], 2, n_terms=3)
    assert terms[0][0] == "steam engine" and "steam" not in terms[0] and "engine" not in terms[0]
    assert terms[1][0] == "sailing ship"


def test_labels_are_distinct_across_clusters():
    # Two clusters about the same three words; the fourth term tells them apart.
    a = ["violin bow strings violin bow strings cremona"] * 2
    b = ["violin bow strings violin bow strings orchestra"] * 2
    c = ["bread dough yeast oven"] * 2
    labels = topic_labels(a + b + c, [0, 0, 1, 1, 2, 2], 3)
    assert len(set(labels)) == 3
    assert "cremona" in labels[0] and "orchestra" in labels[1]


def test_empty_clusters_and_validation():
    assert topic_labels(["the of and 42"], [0], 2) == ["", ""]
    with pytest.raises(InputError):
        topic_labels(["a"], [3], 2)
    assert cluster_name(6, "koala · marsupial · eucalyptus") == "cluster 6: koala · marsupial · eucalyptus"
    assert cluster_name(6, "") == "cluster 6" and cluster_name(6, float("nan")) == "cluster 6"
    assert display_names([0, 1, 2], ["a · b", "a · b", ""]) == ["C0 a · b", "C1 a · b", "C2"]


def test_bundled_example_labels_name_the_animals():
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig, chunk_documents

    documents = read_documents(sorted((EXAMPLE / "docs").glob("*.txt"))).documents
    chunks = chunk_documents(documents, ChunkingConfig())
    names = sorted({c.document for c in chunks})
    labels = np.array([names.index(c.document) for c in chunks])  # one cluster per article
    result = dict(zip(names, topic_labels([c.text for c in chunks], labels, len(names))))
    assert "koala" in result["Koala.txt"] and "lobster" in result["Lobster.txt"]
    assert len(set(result.values())) == len(names)
