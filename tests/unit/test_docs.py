"""The manual stays readable: README.md is short, no paragraph of README.md or docs/ says the
same thing twice, every relative link lands on a file, every file of the project it names in
code type (`pms/...py`, `tests/...py::test_name`) exists, and no text refers to the issue
tracker by number (history lives in git and CHANGELOG.md)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250
# a paragraph shorter than this (after normalizing) is a phrase, not a statement worth a home
MIN_PARAGRAPH_CHARS = 80
ISSUE_REFERENCE = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
# a project file named in code type, with the test it names after `::`, if any
NAMED_FILE = re.compile(r"`((?:pms|tests|bench|workers|cli|docs|deploy|\.ci)/[\w/.\-]+?"
                        r"\.(?:py|sql|md|sh|json|toml|cfg))(?:::(\w+))?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def manual() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs of a Markdown text, whitespace normalized: code blocks, table rows,
    headings and short lines left out. A list item is a paragraph of its own."""
    found: list[str] = []
    current: list[str] = []
    fenced = False

    def close() -> None:
        if current:
            joined = " ".join(" ".join(current).split())
            if len(joined) >= MIN_PARAGRAPH_CHARS:
                found.append(joined)
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            close()
            fenced = not fenced
            continue
        if fenced:
            continue
        if not stripped or stripped.startswith(("#", "|")):
            close()
            continue
        item = re.match(r"^(?:[-*+]|\d+\.)\s+(.*)", stripped)
        if item:
            close()
            stripped = item.group(1)
        current.append(stripped)
    close()
    return found


def repeated_paragraphs(texts: dict[str, str]) -> dict[str, list[str]]:
    """Each paragraph that appears more than once, with where it appears."""
    seen: dict[str, list[str]] = defaultdict(list)
    for name, text in texts.items():
        for paragraph in paragraphs(text):
            seen[paragraph].append(name)
    return {p: where for p, where in seen.items() if len(where) > 1}


def broken_links(path: Path, text: str) -> list[str]:
    """Relative links of a page whose file does not exist (anchors and URLs not checked)."""
    out = []
    for target in LINK.findall(re.sub(r"```.*?```", "", text, flags=re.S)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file_part = target.split("#", 1)[0]
        if file_part and not (path.parent / file_part).exists():
            out.append(target)
    return out


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_no_paragraph_of_the_manual_appears_twice():
    texts = {str(p.relative_to(ROOT)): p.read_text() for p in manual()}
    repeats = repeated_paragraphs(texts)
    assert not repeats, "\n\n".join(f"{where}:\n{p[:200]}" for p, where in repeats.items())


def test_the_repeat_check_catches_a_repeat():
    """Control: a paragraph said twice (once reflowed, once in another file) is found; code,
    tables, headings and short lines are not paragraphs."""
    said = ("A key belongs to its caller: env, token sub and holder id. Another caller's same key "
            "is a different key and runs fresh.")
    reflowed = said.replace(" token ", "\n  token ")
    texts = {"a.md": f"# Keys\n\n{said}\n\n| a | b |\n|---|---|\n\nshort line\n",
             "b.md": f"- {reflowed}\n\n```\n{said}\n```\n\nshort line\n"}
    assert repeated_paragraphs(texts) == {said: ["a.md", "b.md"]}
    assert repeated_paragraphs({"a.md": f"```\n{said}\n```\n", "b.md": f"# {said}\n"}) == {}


def missing_files(text: str, root: Path = ROOT) -> list[str]:
    """The project files (and `file::test` names) `text` names in code type that do not exist."""
    out = []
    for match in NAMED_FILE.finditer(text):
        path = root / match.group(1)
        if not path.is_file():
            out.append(match.group(1))
        elif match.group(2) and not re.search(rf"^\s*def {match.group(2)}\(", path.read_text(),
                                              re.M):
            out.append(f"{match.group(1)}::{match.group(2)}")
    return out


def test_every_file_the_manual_names_exists():
    named = 0
    missing = {}
    for page in [*manual(), ROOT / "CHANGELOG.md"]:
        text = page.read_text()
        named += len(NAMED_FILE.findall(text))
        if gone := missing_files(text):
            missing[str(page.relative_to(ROOT))] = gone
    assert named > 100  # (the pages name the code they describe)
    assert not missing, missing


def test_the_file_check_sees_a_renamed_module_and_a_missing_test(tmp_path):
    (tmp_path / "pms").mkdir()
    (tmp_path / "pms" / "store.py").write_text("def test_here():\n    pass\n")
    text = ("`pms/store.py` `pms/store.py::test_here` `pms/gone.py` "
            "`pms/store.py::test_not_here` `profiles.py`")
    assert missing_files(text, tmp_path) == ["pms/gone.py", "pms/store.py::test_not_here"]


def test_every_relative_link_lands_on_a_file():
    missing = {str(p.relative_to(ROOT)): broken for p in manual()
               if (broken := broken_links(p, p.read_text()))}
    assert not missing, missing


def test_the_link_check_sees_a_missing_file(tmp_path):
    """Control: a link to a file that is not there is reported; one that is, and URLs, not."""
    (tmp_path / "here.md").write_text("x")
    page = tmp_path / "page.md"
    text = "[a](here.md#part) [b](gone.md) [c](https://example.com/x.md) [d](#top)"
    assert broken_links(page, text) == ["gone.md"]


def test_no_text_names_an_issue_by_number():
    this = Path(__file__).resolve()
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for top in ("pms", "workers", "cli", "tests", "bench", "docs"):
        files += [p for p in (ROOT / top).rglob("*") if p.is_file()
                  and p.suffix in (".py", ".md", ".sql", ".txt", ".cfg", ".toml", ".html", ".js")
                  and ".venv" not in p.parts]
    found = []
    for path in files:
        if path.resolve() == this or not path.exists():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if ISSUE_REFERENCE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_the_issue_pattern_sees_a_reference():
    """Control: the pattern matches the ways a number is written, and not ordinary prose."""
    for said in ("see issue 48", "Issue #12 fixed this", "issues 3 and 4"):
        assert ISSUE_REFERENCE.search(said), said
    for said in ("an issue with the lock", "the issuer 2", "issued 3 keys"):
        assert not ISSUE_REFERENCE.search(said), said
