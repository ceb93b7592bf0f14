"""The user documentation the pages cite, served in the site's layout: docs/semantics.md at
/docs/semantics/ (each section an anchor, ``#section-9``). A small reader of the file's own
Markdown (headings, paragraphs, lists, code blocks, inline code and bold): every character is
escaped first, so the file's text never becomes markup."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe

from planner.web.access import reader_required

DOCS = Path(settings.BASE_DIR) / "docs"


def _inline(text: str) -> str:
    text = escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", text)


@lru_cache(maxsize=4)
def markdown_html(name: str) -> tuple[str, list[tuple[str, str]]]:
    """(HTML, [(anchor, heading)]) of docs/<name>.md."""
    lines = (DOCS / f"{name}.md").read_text(encoding="utf-8").splitlines()
    out: list[str] = []
    toc: list[tuple[str, str]] = []
    paragraph: list[str] = []
    items: list[str] = []
    code: list[str] | None = None

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
            paragraph.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in lines:
        if code is not None:
            if line.startswith("```"):
                out.append(f"<pre><code>{escape(chr(10).join(code))}</code></pre>")
                code = None
            else:
                code.append(line)
            continue
        if line.startswith("```"):
            flush()
            code = []
        elif line.startswith("#"):
            flush()
            level = min(len(line) - len(line.lstrip("#")), 4)
            title = line.lstrip("#").strip()
            number = re.match(r"(\d+)\.", title)
            slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            anchor = f"section-{number.group(1)}" if number else slug
            if level == 2:
                toc.append((anchor, title))
            out.append(f'<h{level} id="{anchor}">{_inline(title)}</h{level}>')
        elif re.match(r"\s*[-*] ", line):
            if paragraph:
                flush()
            items.append(re.sub(r"^\s*[-*] ", "", line))
        elif not line.strip():
            flush()
        elif items and line.startswith("  "):
            items[-1] += " " + line.strip()
        else:
            if items or re.match(r"\d+\. ", line):  # a numbered step begins a paragraph of its own
                flush()
            paragraph.append(line.strip())
    flush()
    return "\n".join(out), toc


@reader_required
def semantics(request):
    html, toc = markdown_html("semantics")
    return render(request, "web/doc.html", {"title": "Semantics", "html": mark_safe(html), "toc": toc})
