"""Real PDFs are read within pypdf's safety limits, and what is left out is said.

The PDFs are generated here: large but valid pages, decompression bombs, and
pages that hold only images.
"""

from __future__ import annotations

import io
import re
import zlib

import pypdf
import pytest
from pypdf import Configuration, PageObject, PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    EncodedStreamObject,
    NameObject,
    NumberObject,
    StreamObject,
)

from coverage_core.errors import InputError
from coverage_core.inputs import pdf
from coverage_core.inputs.ingest import read_documents, read_uploaded_documents
from tests.helpers import PDFS

TOO_LARGE_PAGE = (
    "are too large for the reader's safety limit, so their text was left out; "
    "split the PDF or print it to a new PDF to include them."
)


def _name(value: str) -> NameObject:
    return NameObject(value)


def _stream(data: bytes, **entries: str | int) -> DecodedStreamObject:
    stream = DecodedStreamObject()
    stream.set_data(data)
    for key, value in entries.items():
        stream[_name(f"/{key}")] = _name(value) if isinstance(value, str) else NumberObject(value)
    return stream


def _text(*lines: str) -> bytes:
    shown = b" ".join(f"({line}) Tj T*".encode() for line in lines)
    return b"BT /F1 11 Tf 14 TL 72 720 Td " + shown + b" ET\n"


def _pdf(*pages: bytes | StreamObject | PageObject, xobjects: dict | None = None) -> bytes:
    """A PDF with one page per content stream (or a page copied from another PDF)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {_name("/Type"): _name("/Font"), _name("/Subtype"): _name("/Type1"), _name("/BaseFont"): _name("/Helvetica")}
    )
    resources = DictionaryObject({_name("/Font"): DictionaryObject({_name("/F1"): font})})
    # Streams must be indirect objects; pypdf's writer has no public call for that.
    if xobjects:
        resources[_name("/XObject")] = DictionaryObject(
            {_name(key): writer._add_object(value) for key, value in xobjects.items()}
        )
    for content in pages:
        if isinstance(content, PageObject):
            writer.add_page(content)
            continue
        page = writer.add_blank_page(612, 792)
        page[_name("/Resources")] = resources
        stream = content if isinstance(content, StreamObject) else _stream(content)
        page[_name("/Contents")] = writer._add_object(stream)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def bomb() -> EncodedStreamObject:
    """A content stream of about 100 KB that expands to 100 MB, over pypdf's 75 MB cap."""
    compressor = zlib.compressobj(9)
    chunk = b" " * 1_000_000
    data = b"".join(compressor.compress(chunk) for _ in range(100)) + compressor.flush()
    stream = EncodedStreamObject()
    stream._data = data  # already compressed; set_data would compress it again
    stream[_name("/Filter")] = _name("/FlateDecode")
    return stream


def warned(document_set) -> dict[str, str]:
    return {warning.source: warning.message for warning in document_set.warnings}


def assert_pypdf_settings_unchanged() -> None:
    assert pypdf.get_configuration() == Configuration()


# ---------------------------------------------------------------------------
# Safety limits
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_large_valid_page_beyond_pypdf_default_limit_is_read_fully():
    # A filing page of text around a detailed chart: 2.1 million graphics
    # operators, more than pypdf's default budget of tokens per content stream
    # (pypdf alone raises LimitReachedError on it). They are the cheapest
    # operators to parse, and still this test takes seconds.
    chart = b"q Q\n" * 1_050_000
    assert len(chart.split()) > Configuration().stream_parsing_work_maximum_count
    big = _stream(_text("Chart of quarterly revenue") + chart + _text("Totals follow the chart")).flate_encode()
    data = _pdf(_text("Part I financial information"), big, _text("Item 2 management discussion"))

    result = read_uploaded_documents([("10-q.pdf", data)])

    assert result.warnings == []
    document = result.documents[0]
    assert [span.page for span in document.pages] == [1, 2, 3]
    second = document.text[document.pages[1].start : document.pages[1].end]
    assert "Chart of quarterly revenue" in second and "Totals follow the chart" in second
    assert "Item 2 management discussion" in document.text
    assert_pypdf_settings_unchanged()


def test_decompression_bomb_is_too_large_for_the_safety_limit_not_damaged(bomb):
    data = _pdf(bomb)
    assert len(data) < 200_000  # a tiny file that expands to 100 MB

    with pytest.raises(InputError) as raised:
        read_uploaded_documents([("bomb.pdf", data)])

    assert str(raised.value) == (
        "bomb.pdf is too large for the reader's safety limit; "
        "split it into smaller PDFs or print it to a new PDF."
    )
    assert "damaged" not in str(raised.value)
    assert_pypdf_settings_unchanged()


def test_limit_reached_while_opening_is_too_large_not_damaged(tmp_path):
    # The cross-reference table declares far more entries than the file holds;
    # pypdf refuses it with LimitReachedError before any page is read.
    data = _pdf(_text("A short page"))
    declared = re.search(rb"xref\s+0 (\d+)", data)
    forged = data[: declared.start(1)] + b"999999999" + data[declared.end(1) :]
    (tmp_path / "forged.pdf").write_bytes(forged)
    (tmp_path / "notes.txt").write_text("Some notes that read fine.")

    result = read_documents([tmp_path])

    assert [document.name for document in result.documents] == ["notes.txt"]
    assert warned(result)["forged.pdf"] == (
        "It is too large for the reader's safety limit, so it was skipped; "
        "split it into smaller PDFs or print it to a new PDF."
    )


def test_oversized_page_among_good_ones_is_left_out_with_a_page_warning(bomb):
    # The good pages hold little text, so the check for a scanned PDF looks
    # at every page, the oversized ones too; that must not lose the file.
    data = _pdf(_text("Balance sheet"), bomb, _text("Cash flow statement"), bomb)

    result = read_uploaded_documents([("filing.pdf", data)])

    assert warned(result) == {"filing.pdf": f"Pages 2, 4 {TOO_LARGE_PAGE}"}
    document = result.documents[0]
    assert [span.page for span in document.pages] == [1, 2, 3, 4]
    assert "Balance sheet" in document.text and "Cash flow statement" in document.text
    assert_pypdf_settings_unchanged()


def test_page_over_the_readers_own_budget_is_left_out(monkeypatch):
    # The raised budget still bounds each page: lowered here to keep it small.
    monkeypatch.setitem(pdf._PDF_LIMITS, "stream_parsing_work_maximum_count", 10_000)
    dense = _text("Dense table") + b"0 0 m 1 1 l S\n" * 2_000
    data = _pdf(_text("Summary of results"), dense, _text("Notes to the statements"))

    result = read_uploaded_documents([("dense.pdf", data)])

    assert warned(result) == {"dense.pdf": "Page 2 is too large for the reader's safety limit, so its text was left out; "
                                            "split the PDF or print it to a new PDF to include it."}
    assert "Summary of results" in result.documents[0].text
    assert "Notes to the statements" in result.documents[0].text


def test_page_that_trips_an_assert_in_pypdf_is_left_out_not_a_crash():
    # A malformed inline image ("BI" not followed by "ID") makes pypdf fail an assert.
    data = _pdf(_text("Opening remarks on the quarter"), _text("A chart") + b"BI IX EI\n")

    result = read_uploaded_documents([("remarks.pdf", data)])

    assert warned(result) == {
        "remarks.pdf": "Page 2 could not be read and was left out; the rest of the PDF was used."
    }
    assert "Opening remarks on the quarter" in result.documents[0].text


# ---------------------------------------------------------------------------
# Pages with only images
# ---------------------------------------------------------------------------


def test_pages_with_only_images_are_named_in_one_warning(monkeypatch):
    def decodes_images(self):
        raise AssertionError("page.images decodes every image; the check must not use it")

    monkeypatch.setattr(PageObject, "images", property(decodes_images))
    latex = PdfReader(PDFS / "pdflatex-4-pages.pdf").pages
    scanned_table = PdfReader(PDFS / "imagemagick-images.pdf").pages[3]  # an image XObject, no text
    pixel = _stream(b"\x80", Type="/XObject", Subtype="/Image", Width=1, Height=1,
                    ColorSpace="/DeviceGray", BitsPerComponent=8)
    # A form without resources of its own draws with those of the page.
    form = _stream(b"q /Im0 Do Q", Type="/XObject", Subtype="/Form")
    form[_name("/BBox")] = ArrayObject([NumberObject(0), NumberObject(0), NumberObject(1), NumberObject(1)])
    inline_image = b"q 100 0 0 100 72 600 cm BI /W 2 /H 2 /CS /G /BPC 8 ID \x00\xff\xff\x00 EI Q\n"
    data = _pdf(
        latex[0],
        scanned_table,
        latex[1],
        b"",  # a blank page, which lists the image among its resources but draws nothing
        inline_image,
        b"q 100 0 0 100 72 600 cm /Fm0 Do Q\n",  # an image inside a form
        xobjects={"/Fm0": form, "/Im0": pixel},
    )

    result = read_uploaded_documents([("report.pdf", data)])

    assert warned(result) == {
        "report.pdf": "Pages 2, 5, 6 have only images and no text, so their content was left out; "
        "run OCR on the PDF (for example with ocrmypdf) to include them."
    }
    document = result.documents[0]
    assert len(document.pages) == 6
    assert latex[0].extract_text() in document.text and latex[1].extract_text() in document.text


def test_a_pdf_of_images_only_is_still_skipped_as_scanned_without_page_warnings():
    result = read_uploaded_documents(
        [("scan.pdf", (PDFS / "imagemagick-images.pdf").read_bytes()), ("notes.txt", b"Some notes.")]
    )
    assert [document.name for document in result.documents] == ["notes.txt"]
    assert [str(warning) for warning in result.warnings] == [
        "scan.pdf: It has no extractable text (it looks scanned or image-only), so it was skipped; "
        "run OCR on it first (for example with ocrmypdf) and add the result."
    ]
