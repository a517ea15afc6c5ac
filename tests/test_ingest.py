"""Reading documents and question tables, including every kind of bad input."""

from __future__ import annotations

import codecs
import logging
import warnings
from pathlib import Path

import pypdf
import pytest
from pypdf.errors import DependencyError

from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_document_bytes, read_documents, read_uploaded_documents
from coverage_core.inputs.pdf import PAGE_SEPARATOR
from coverage_core.inputs.questions import QUESTION_COLUMN_NAMES, read_questions
from coverage_core.validation import find_column
from tests.helpers import FIXTURES, PDFS, WIKI

INGEST = FIXTURES / "ingest"
DOCS = INGEST / "docs"
ENCRYPTED = PDFS / "libreoffice-writer-password.pdf"
IMAGES_ONLY = PDFS / "imagemagick-images.pdf"
DAMAGED = PDFS / "unreadablemetadata-head.pdf"
FOUR_PAGES = PDFS / "pdflatex-4-pages.pdf"


def messages(document_set) -> dict[str, str]:
    return {warning.source: warning.message for warning in document_set.warnings}


# ---------------------------------------------------------------------------
# PDFs
# ---------------------------------------------------------------------------


def test_pdf_pages_are_joined_and_mapped_back():
    document = read_documents([FOUR_PAGES]).documents[0]
    assert document.name == "pdflatex-4-pages.pdf"
    assert [span.page for span in document.pages] == [1, 2, 3, 4]
    assert document.pages[0].start == 0
    assert document.pages[-1].end == len(document.text)
    for before, after in zip(document.pages, document.pages[1:]):
        assert document.text[before.end : after.start] == PAGE_SEPARATOR
    reader = pypdf.PdfReader(FOUR_PAGES)
    for span, page in zip(document.pages, reader.pages):
        assert document.text[span.start : span.end] == page.extract_text()
        assert document.page_at(span.start) == span.page
        assert document.page_at(span.end - 1) == span.page


def test_real_pdf_folder_reads_good_files_explains_bad_ones_and_stays_quiet(caplog, capsys):
    # The damaged file makes pypdf log rebuilt-xref warnings; none of it may
    # reach logging, warnings or stderr.
    caplog.set_level(logging.DEBUG)
    pypdf_logger = logging.getLogger("pypdf")
    level_before = pypdf_logger.level
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = read_documents([PDFS])
    assert [record for record in caplog.records if record.name.startswith("pypdf")] == []
    assert caught == []
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    assert pypdf_logger.level == level_before  # silenced only while reading

    names = [document.name for document in result.documents]
    assert names == [
        "google-doc-document.pdf",
        "habibi.pdf",
        "multicolumn.pdf",
        "pdflatex-4-pages.pdf",
    ]
    by_name = {document.name: document for document in result.documents}
    assert len(by_name["multicolumn.pdf"].pages) == 3
    assert "habibi" in by_name["habibi.pdf"].text  # Arabic file with a Latin word
    warned = messages(result)
    # LICENSE has no supported suffix: inside a folder it is ignored silently.
    assert set(warned) == {
        "imagemagick-images.pdf",
        "libreoffice-writer-password.pdf",
        "unreadablemetadata-head.pdf",
    }
    assert "OCR" in warned["imagemagick-images.pdf"]
    assert "give its PDF password" in warned["libreoffice-writer-password.pdf"]
    assert "--" not in warned["libreoffice-writer-password.pdf"]  # the dashboard shows it too
    assert "damaged" in warned["unreadablemetadata-head.pdf"]


def test_ligatures_of_a_real_pdf_are_read_as_letters_so_typed_words_match():
    # multicolumn.pdf draws "fi" and "ffi" as single glyphs; its text layer holds U+FB01 and U+FB03.
    raw = "".join(page.extract_text() for page in pypdf.PdfReader(PDFS / "multicolumn.pdf").pages)
    assert "\ufb01" in raw and "\ufb03" in raw
    document = read_documents([PDFS / "multicolumn.pdf"]).documents[0]
    assert "filled" in document.text and "Official" in document.text
    assert not any("\ufb00" <= c <= "\ufb06" for c in document.text)
    assert document.pages[-1].end == len(document.text)  # the page map follows the longer text


def test_unfolding_ligatures_changes_nothing_else():
    from coverage_core.inputs.text import unfold_ligatures

    assert unfold_ligatures("Deﬁnition: oﬀen, Oﬃcial, baﬄe") == "Definition: offen, Official, baffle"
    kept = "x² ½ Ｆ ﬞ Crémone “quoted”"  # NFKC would change the first three: only ligatures change
    assert unfold_ligatures(kept) == kept
    text_document = read_document_bytes("notes.txt", "The ﬁrst eﬀect.\r\n".encode())
    assert text_document.text == "The first effect.\n"


def test_encrypted_pdf_opens_with_its_password():
    result = read_documents([ENCRYPTED], pdf_password="openpassword")
    assert result.warnings == []
    assert result.documents[0].text.startswith("Lorem ipsum")
    assert result.documents[0].pages[0].page == 1


def test_encrypted_pdf_without_password_is_skipped_with_a_hint():
    result = read_documents([ENCRYPTED, FOUR_PAGES])
    assert [document.name for document in result.documents] == ["pdflatex-4-pages.pdf"]
    message = messages(result)["libreoffice-writer-password.pdf"]
    assert "encrypted" in message and "PDF password" in message and "--" not in message


def test_encrypted_pdf_with_wrong_password_says_so():
    with pytest.raises(InputError, match="password does not open it"):
        read_documents([ENCRYPTED], pdf_password="not-the-password")


def test_password_is_ignored_for_unencrypted_pdfs():
    result = read_documents([FOUR_PAGES], pdf_password="openpassword")
    assert len(result.documents[0].pages) == 4


def test_aes_pdf_without_cryptography_says_what_to_install(monkeypatch):
    def needs_cryptography(self, password):
        raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    monkeypatch.setattr(pypdf.PdfReader, "decrypt", needs_cryptography)
    with pytest.raises(InputError, match="pip install cryptography"):
        read_documents([ENCRYPTED], pdf_password="openpassword")


def test_image_only_pdf_asks_for_ocr():
    with pytest.raises(InputError, match="scanned or image-only.*OCR"):
        read_documents([IMAGES_ONLY])


def test_unparseable_pdf_is_reported_as_damaged():
    with pytest.raises(InputError, match="damaged or truncated"):
        read_documents([DAMAGED])


def test_truncated_pdf_is_reported_as_damaged(tmp_path):
    data = FOUR_PAGES.read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(data[: len(data) // 2])
    result = read_documents([truncated, DOCS / "guide.md"])
    assert [document.name for document in result.documents] == ["guide.md"]
    assert "damaged or truncated" in messages(result)["truncated.pdf"]


def test_text_file_named_pdf_is_reported_as_damaged(tmp_path):
    fake = tmp_path / "notes.pdf"
    fake.write_text("This is plain text, not a PDF.")
    with pytest.raises(InputError, match="notes.pdf could not be read as a PDF"):
        read_documents([fake])


# ---------------------------------------------------------------------------
# Text files, folders and general rules
# ---------------------------------------------------------------------------


def test_folder_names_are_relative_sorted_and_skip_hidden_and_other_types():
    result = read_documents([DOCS])
    assert [document.name for document in result.documents] == [
        "NOTES.TXT",
        "guide.md",
        "sub/guide.md",
    ]
    assert result.warnings == []  # picture.png and hidden files are ignored silently


def test_text_line_endings_are_normalized():
    notes = read_documents([DOCS / "NOTES.TXT"]).documents[0]
    assert notes.text == "Upper-case suffixes are documents too.\nSecond line.\n"
    assert notes.pages == () and notes.page_at(5) is None


def test_same_file_named_twice_is_read_once():
    result = read_documents([DOCS, DOCS / "guide.md"])
    assert [document.name for document in result.documents].count("guide.md") == 1
    assert len(result.documents) == 3


def test_same_file_name_from_different_places_stays_unique(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "guide.md").write_text("Another guide.")
    result = read_documents([DOCS / "guide.md", tmp_path / "a" / "guide.md"])
    assert [document.name for document in result.documents] == ["guide.md", "guide (2).md"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"plain ascii", "plain ascii"),
        (codecs.BOM_UTF8 + "Zürich".encode(), "Zürich"),
        ("café – 5 €".encode("cp1252"), "café – 5 €"),
        # 0x81 is undefined in cp1252, so only latin-1 can decode this.
        (b"caf\xe9 \x81", "café \x81"),
        ("Unicode text from Windows".encode("utf-16"), "Unicode text from Windows"),
    ],
)
def test_text_encodings(tmp_path, data, expected):
    path = tmp_path / "doc.txt"
    path.write_bytes(data)
    assert read_documents([path]).documents[0].text == expected


@pytest.mark.parametrize("content", [b"", b"  \n\t\r\n  "])
def test_empty_or_whitespace_file_is_skipped(tmp_path, content):
    (tmp_path / "empty.md").write_bytes(content)
    result = read_documents([tmp_path / "empty.md", DOCS / "guide.md"])
    assert [document.name for document in result.documents] == ["guide.md"]
    assert "empty" in messages(result)["empty.md"]


def test_empty_pdf_is_skipped_as_empty(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(InputError, match="empty.pdf is empty"):
        read_documents([tmp_path / "empty.pdf"])


@pytest.mark.parametrize(
    "content",
    [
        b"PK\x03\x04\x14\x00\x06\x00binary zip\x00\x00data",
        bytes(range(1, 32)) * 20,  # control characters, no NUL
    ],
)
def test_binary_data_named_txt_is_skipped(tmp_path, content):
    (tmp_path / "report.txt").write_bytes(content)
    result = read_documents([tmp_path / "report.txt", DOCS / "guide.md"])
    assert "binary data" in messages(result)["report.txt"]


def test_oversized_file_is_skipped_without_reading_it(tmp_path, monkeypatch):
    big = tmp_path / "big.txt"
    big.write_text("x" * 2000)
    real_read_bytes = Path.read_bytes

    def read_bytes(path):
        assert path != big, "an oversized file must not be loaded into memory"
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = read_documents([big, DOCS / "guide.md"], max_bytes=1000)
    assert [document.name for document in result.documents] == ["guide.md"]
    assert messages(result)["big.txt"].startswith("It is 2.0 KB, more than the 1000 bytes limit")


def test_explicit_unsupported_file_gets_a_warning():
    result = read_documents([DOCS / "picture.png", DOCS / "guide.md"])
    assert "not PDF, TXT or Markdown" in messages(result)["picture.png"]


def test_missing_path_gets_a_warning_and_the_run_goes_on(tmp_path):
    missing = tmp_path / "nope.pdf"
    result = read_documents([missing, DOCS / "guide.md"])
    assert "does not exist" in messages(result)[str(missing)]
    assert len(result.documents) == 1


def test_folder_without_documents_gets_a_warning(tmp_path):
    (tmp_path / "empty-folder").mkdir()
    result = read_documents([tmp_path / "empty-folder", DOCS / "guide.md"])
    assert "contains no PDF, TXT or Markdown files" in messages(result)[
        str(tmp_path / "empty-folder")
    ]


def test_nothing_readable_raises_one_sentence_naming_each_reason(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(InputError) as error:
        read_documents([ENCRYPTED, IMAGES_ONLY, tmp_path / "empty.txt"])
    message = str(error.value)
    assert message.startswith("None of the 3 documents could be read:")
    assert "libreoffice-writer-password.pdf is encrypted" in message
    assert "imagemagick-images.pdf has no extractable text" in message
    assert "empty.txt is empty" in message
    assert message.endswith("add PDF, TXT or Markdown files with text.")
    assert "\n" not in message


def test_no_paths_at_all_raises():
    with pytest.raises(InputError, match="No document files were given"):
        read_documents([])


# ---------------------------------------------------------------------------
# Uploaded bytes
# ---------------------------------------------------------------------------


def test_read_document_bytes_reads_pdf_and_text():
    pdf = read_document_bytes("upload.pdf", FOUR_PAGES.read_bytes())
    assert len(pdf.pages) == 4 and pdf.name == "upload.pdf"
    text = read_document_bytes("notes.md", "Grüße".encode("cp1252"))
    assert text.text == "Grüße"
    unlocked = read_document_bytes("secret.pdf", ENCRYPTED.read_bytes(), pdf_password="openpassword")
    assert "Lorem ipsum" in unlocked.text


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("secret.pdf", ENCRYPTED.read_bytes(), "secret.pdf is encrypted; give its PDF password"),
        ("scan.pdf", IMAGES_ONLY.read_bytes(), "scan.pdf has no extractable text"),
        ("blank.txt", b"   ", "blank.txt is empty"),
        ("sheet.xlsx", b"PK\x03\x04", "sheet.xlsx is a .xlsx file"),
    ],
)
def test_read_document_bytes_raises_one_sentence(name, data, expected):
    with pytest.raises(InputError) as error:
        read_document_bytes(name, data)
    assert str(error.value).startswith(expected)
    assert str(error.value).endswith(".")


def test_uploads_skip_bad_files_like_paths_do():
    uploads = [
        ("a.md", b"First upload."),
        ("secret.pdf", ENCRYPTED.read_bytes()),
        ("a.md", b"Same name, other content."),
        ("big.txt", b"y" * 20_000),
    ]
    result = read_uploaded_documents(uploads, max_bytes=15_000)
    assert [document.name for document in result.documents] == ["a.md", "a (2).md"]
    warned = messages(result)
    assert set(warned) == {"secret.pdf", "big.txt"}
    # The same file gives the same message whether uploaded or read from disk.
    assert warned["secret.pdf"] == messages(read_documents([ENCRYPTED, DOCS / "guide.md"]))[
        "libreoffice-writer-password.pdf"
    ]


def test_uploads_with_nothing_readable_raise():
    with pytest.raises(InputError, match="None of the 2 documents"):
        read_uploaded_documents([("a.txt", b""), ("b.pdf", b"%PDF-1.4 broken")])


# ---------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------


def test_wiki_qa_latin1_tsv_loads():
    questions = read_questions(WIKI / "question_answer_pairs.txt")
    assert len(questions.frame) == 1458
    assert questions.question_column == "Question"
    assert questions.delimiter == "\t"
    assert questions.encoding in ("cp1252", "latin-1")
    assert list(questions.frame.columns) == [
        "ArticleTitle",
        "Question",
        "Answer",
        "DifficultyFromQuestioner",
        "DifficultyFromAnswerer",
        "ArticleFile",
    ]
    assert questions.rows == list(range(1458))  # no blank questions in this file
    # Rows 0 and 1 ask the same question with different answers.
    assert questions.duplicates[1] == 0
    assert len(questions.duplicates) == len(questions.questions) - len(set(questions.texts))
    assert any("repeat an earlier one" in warning.message for warning in questions.warnings)
    # Quotes in a TSV that is not CSV-quoted stay exactly as written.
    assert questions.frame.loc[763, "Answer"] == (
        '"muddy confluence," "muddy estuary," and "muddy city"'
    )
    assert questions.frame.loc[88, "Answer"] == '"queens"'
    assert "NULL" in set(questions.frame["Answer"])  # not turned into a missing value
    assert any("é" in text for text in questions.frame["Answer"])


def test_comma_csv_with_quoted_commas():
    questions = read_questions(INGEST / "questions_comma.csv")
    assert questions.delimiter == ","
    assert questions.encoding == "utf-8"
    assert questions.texts == ["What is RAG, in short?", "How are chunks embedded?"]
    assert list(questions.frame.columns) == ["id", "question", "expected_answer"]


def test_semicolon_cp1252_csv_with_explicit_column():
    # "Frage" is found by name (German); naming it gives the same column.
    assert read_questions(INGEST / "questions_semicolon_cp1252.csv").question_column == "Frage"
    questions = read_questions(INGEST / "questions_semicolon_cp1252.csv", question_column="Frage")
    assert questions.delimiter == ";"
    assert questions.encoding == "cp1252"
    assert questions.texts == ["Wie groß ist der Bodensee, ungefähr?", 'Was heißt "RAG", genau?']
    assert questions.frame["Antwort"].tolist()[0] == "536 km²"


def test_tab_separated_file_with_query_column():
    questions = read_questions(INGEST / "questions_tab.tsv")
    assert questions.delimiter == "\t"
    assert questions.question_column == "query"
    assert questions.frame["source"].tolist() == ["guide.md", "guide.md"]


def test_one_column_file_keeps_commas_inside_questions():
    questions = read_questions(INGEST / "questions_one_column.csv")
    assert list(questions.frame.columns) == ["question"]
    assert questions.texts == [
        "What is RAG, and why use it?",
        "Who wrote it, when, and where?",
        "A quoted question, with a comma?",
    ]
    assert questions.delimiter == ","


def test_utf8_bom_is_not_part_of_the_header():
    questions = read_questions(INGEST / "questions_bom.csv")
    assert questions.encoding == "utf-8-sig"
    assert list(questions.frame.columns) == ["question", "notes"]
    assert questions.texts == ["What does café mean?"]


def test_utf16_question_file_from_excel():
    data = "question\tanswer\nWie heißt das?\tso\n".encode("utf-16")
    questions = read_questions(data, name="unicode.txt")
    assert questions.encoding == "utf-16"
    assert questions.delimiter == "\t"
    assert questions.texts == ["Wie heißt das?"]


def test_semicolon_file_whose_questions_contain_quoted_commas():
    data = 'Frage;Quelle\n"A, B, C, D?";x\n"E, F, G?";y\n"H, I?";z\n'.encode()
    questions = read_questions(data, question_column="Frage")
    assert questions.delimiter == ";"
    assert questions.texts == ["A, B, C, D?", "E, F, G?", "H, I?"]


def test_sniffer_guess_is_checked_against_the_header():
    # csv.Sniffer picks the comma here (it sees `","` between quotes), but the
    # header has no comma, so the semicolon is right.
    data = 'question;source\n"Chunk","Embedding": which comes first?;guide.md\n'.encode()
    questions = read_questions(data)
    assert questions.delimiter == ";"
    assert questions.frame["source"].tolist() == ["guide.md"]
    assert questions.texts == ['"Chunk","Embedding": which comes first?']


def test_delimiter_falls_back_to_header_count_when_sniffer_gives_up():
    questions = read_questions(b"question;source\nWhat is RAG, LLM, NLP?\n")
    assert questions.delimiter == ";"
    assert questions.texts == ["What is RAG, LLM, NLP?"]


def test_blank_and_duplicate_rows_and_untouched_extra_columns():
    questions = read_questions(INGEST / "questions_messy.csv")
    assert questions.question_column == "Prompt"
    frame = questions.frame
    assert list(frame.columns) == ["Prompt", "answerable", "score", "comment"]
    assert len(frame) == 6
    # Everything stays text exactly as written: no NaN, no numbers, no trimming.
    assert frame["score"].tolist() == ["007", "", "1.50", "", "", "2"]
    assert frame["comment"].tolist() == ["NA", "null", "", "N/A", "", "none"]
    assert frame.loc[3, "Prompt"] == "  What is X?  "
    assert questions.n_blank == 2
    assert questions.rows == [0, 2, 3, 5]
    assert questions.texts == ["What is X?", "What is Y?", "What is X?", "What is Y?"]
    assert questions.duplicates == {3: 0, 5: 2}
    warned = [warning.message for warning in questions.warnings]
    assert any(message.startswith("2 rows with an empty 'Prompt' cell were skipped") for message in warned)
    assert any(message.startswith("2 questions repeat an earlier one") for message in warned)


def test_missing_question_column_lists_columns():
    with pytest.raises(InputError) as error:
        read_questions(INGEST / "questions_no_question_column.csv")
    message = str(error.value)
    assert "'title', 'answer'" in message and "choose the question column" in message
    assert "--" not in message


def test_explicit_question_column():
    questions = read_questions(INGEST / "questions_no_question_column.csv", question_column="title")
    assert questions.question_column == "title" and questions.texts == ["Volta"]
    # Case, spaces and underscores do not matter for an explicit name either.
    questions = read_questions(INGEST / "questions_tab.tsv", question_column=" QUERY ")
    assert questions.question_column == "query"


def test_explicit_question_column_that_does_not_exist():
    with pytest.raises(
        InputError,
        match="^The question column 'frage' is not in the question file questions_no_question_column.csv; "
        "name one of its columns: 'title', 'answer'.$",
    ):
        read_questions(INGEST / "questions_no_question_column.csv", question_column="frage")


def test_blank_question_column_name_means_detect():
    for blank in ("", "   "):
        assert read_questions(INGEST / "questions_tab.tsv", question_column=blank).question_column == "query"


@pytest.mark.parametrize(
    "header",
    [
        "Frage", "Fragen", "FRAGE", "pregunta", "Preguntas", "domanda", "Domande", "Questão", "questões",
        "Questao", "pergunta", "Perguntas", "consulta", "Requête", "requete", "Requêtes", "vraag", "Vragen",
        "Query", "queries", "Prompt", "Question", "QUESTIONS",
    ],
)
def test_question_column_found_in_other_languages(header):
    data = f"id;{header};Antwort\n1;Wie groß ist der Bodensee?;536 km²\n".encode()
    questions = read_questions(data, name="fragen.csv")
    assert questions.question_column == header
    assert questions.texts == ["Wie groß ist der Bodensee?"]


def test_question_column_in_another_language_beats_generic_text():
    data = "text,pregunta\nnota,¿Qué es RAG?\n".encode("cp1252")
    questions = read_questions(data, name="preguntas.csv")
    assert questions.question_column == "pregunta" and questions.texts == ["¿Qué es RAG?"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "is empty"),
        (b" \n\n ", "is empty"),
        (b"question,answer\n", "header but no question rows"),
        (b"question,answer\n ,a\n,b\n", "is empty in all 2 rows"),
        (b"PK\x03\x04\x00\x00binary", "binary data"),
        (b"question,answer\nq1,a1\nq2,a2,extra\n", "line 3 has 3 cells but the header has 2"),
        (b"question,answer\nq1,a1,extra\n", "more cells than the header"),
    ],
)
def test_unusable_question_files(data, expected):
    with pytest.raises(InputError, match=expected) as error:
        read_questions(data, name="upload.csv")
    assert "upload.csv" in str(error.value)


def test_missing_question_file():
    with pytest.raises(InputError, match="does not exist"):
        read_questions(INGEST / "nope.csv")


def test_find_column_normalizes_and_prefers_earlier_candidates():
    columns = ["ID", "User Input", "Question_Text", "Source-Document"]
    assert find_column(columns, QUESTION_COLUMN_NAMES) == "Question_Text"
    assert find_column(["user-input", "Text"], QUESTION_COLUMN_NAMES) == "user-input"
    assert find_column(columns, ["source_document", "source"]) == "Source-Document"
    assert find_column(columns, ["answerable"]) is None
    assert QUESTION_COLUMN_NAMES[0] == "question"
