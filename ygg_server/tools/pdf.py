"""A PDF of an artifact (seed 003 §52: "a few platform tools such as ... making a PDF"): a small, correct PDF 1.4
writer for text, with no library behind it. Pure: text in, bytes out.

The title in Helvetica-Bold, the body in Helvetica (a code artifact in Courier), on A4 pages with margins; lines
wrapped to the page's width by the fonts' real advance widths (the standard 14 fonts need no embedding), a new
page when one is full; a form feed in the body forces one. Text the standard fonts cannot show (outside
WinAnsiEncoding) is replaced by `?`. The cross-reference table gives each object's byte offset, as readers
check (`tests/tools/test_pdf.py` reads the result back with pypdf).
"""

from __future__ import annotations

import zlib

PAGE_W, PAGE_H = 595, 842  # A4, in points
MARGIN = 56
SIZE, TITLE_SIZE, LEADING = 11, 16, 14.5
MAX_PAGES = 500

# Helvetica's advance widths (per 1000 units of the font size) for ASCII 32..126, from its AFM
_HELV = [278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556,
         556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667,
         556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556,
         556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722,
         500, 500, 500, 334, 260, 334, 584]


def _width(text: str, size: float, mono: bool) -> float:
    if mono:
        return len(text) * 600 * size / 1000
    return sum(_HELV[ord(c) - 32] if 32 <= ord(c) < 127 else 556 for c in text) * size / 1000


def _encodable(text: str) -> str:
    return "".join(c if c in "\f\n" or (c.isprintable() and c.encode("cp1252", "replace") != b"?") or c == "?"
                   else ("    " if c == "\t" else "?") for c in text)


def _wrap(line: str, size: float, width: float, mono: bool) -> list[str]:
    """One line of the body as the lines it takes on the page (words kept whole unless one is wider alone)."""
    if _width(line, size, mono) <= width:
        return [line]
    out, cur = [], ""
    for word in line.split(" "):
        probe = f"{cur} {word}" if cur else word
        if _width(probe, size, mono) <= width:
            cur = probe
            continue
        if cur:
            out.append(cur)
        while _width(word, size, mono) > width:  # a word wider than the line: cut where it fills it
            n = max(1, int(len(word) * width / _width(word, size, mono)))
            while n > 1 and _width(word[:n], size, mono) > width:
                n -= 1
            out.append(word[:n])
            word = word[n:]
        cur = word
    out.append(cur)
    return out


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def layout(title: str, body: str, mono: bool = False) -> list[list[tuple[str, str]]]:
    """The pages, each a list of (font, line): "T" the title's lines, "B" the body's."""
    width = PAGE_W - 2 * MARGIN
    per_page = int((PAGE_H - 2 * MARGIN) // LEADING)
    lines: list[tuple[str, str]] = [("T", t) for t in _wrap(_encodable(title or "Untitled"), TITLE_SIZE, width, False)]
    lines.append(("B", ""))
    for raw in _encodable(body.replace("\r\n", "\n")).split("\n"):
        for part in raw.split("\f")[:-1]:  # a form feed: what came before it, then a new page
            lines += [("B", x) for x in _wrap(part, SIZE, width, mono)] + [("F", "")]
        lines += [("B", x) for x in _wrap(raw.split("\f")[-1], SIZE, width, mono)]
    pages: list[list[tuple[str, str]]] = [[]]
    for kind, text in lines:
        if kind == "F" or len(pages[-1]) >= per_page:
            if len(pages) >= MAX_PAGES:
                break
            pages.append([])
            if kind == "F":
                continue
        pages[-1].append((kind, text))
    return pages


def _content(page: list[tuple[str, str]], mono: bool) -> bytes:
    out = [b"BT"]
    y = PAGE_H - MARGIN
    for kind, text in page:
        y -= LEADING if kind == "B" else TITLE_SIZE + 4
        font, size = (b"/F2", TITLE_SIZE) if kind == "T" else (b"/F3" if mono else b"/F1", SIZE)
        out.append(font + b" %d Tf 1 0 0 1 %d %.1f Tm (" % (size, MARGIN, y) + _escape(text) + b") Tj")
    out.append(b"ET")
    return b"\n".join(out)


def render(title: str, body: str, mono: bool = False, author: str = "") -> bytes:
    """A PDF 1.4 document of `title` and `body` (its content streams Flate-compressed)."""
    pages = layout(title, body, mono)
    objs: list[bytes] = []  # object n is objs[n - 1]
    font = "<< /Type /Font /Subtype /Type1 /BaseFont /%s /Encoding /WinAnsiEncoding >>"
    objs += [b"<< /Type /Catalog /Pages 2 0 R >>", b"", (font % "Helvetica").encode(),
             (font % "Helvetica-Bold").encode(), (font % "Courier").encode()]
    info = b"<< /Title (" + _escape(title[:200]) + b") /Producer (Ygg)" + \
        (b" /Author (" + _escape(author[:200]) + b")" if author else b"") + b" >>"
    objs.append(info)
    kids = []
    for page in pages:
        stream = zlib.compress(_content(page, mono))
        objs.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R /Resources << /Font << "
                    b"/F1 3 0 R /F2 4 0 R /F3 5 0 R >> >> >>" % (PAGE_W, PAGE_H, len(objs)))
        kids.append(len(objs))
    objs[1] = b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % len(kids)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body_ in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body_ + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def filename(title: str) -> str:
    """A file name for an artifact's PDF: its title's letters and digits."""
    stem = "".join(c if c.isalnum() else "-" for c in (title or "")).split("-")
    return ("-".join(filter(None, stem))[:60].strip("-") or "artifact") + ".pdf"


def of_artifact(got: dict) -> bytes:
    """The PDF of a `get_artifact` answer: the registry's `artifact_pdf` and the TUI's artifact pane (`p`) alike."""
    return render(got["title"], got["body"], mono=got["artifact"]["kind"] == "code",
                  author=got["artifact"].get("author", ""))


def pages(data: bytes) -> int:
    return data.count(b"/Type /Page /Parent")
