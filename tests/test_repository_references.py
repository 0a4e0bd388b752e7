"""The repository never cites a file it does not contain.

Docstrings, READMEs and comments once pointed readers at planning documents
that were never part of the repository. The rules now live in the
conformance package (``memory_core_conformance.rules`` and the table in
``conformance/README.md``); these tests scan every tracked text file so a
dangling reference cannot come back:

- every Markdown file name mentioned (``README.md``, ``conformance/README.md``,
  a relative one going up ...) exists, relative to the mentioning file's
  folder, one of its parent folders, or the repository root;
- every path spelled from a top-level folder (``memory_core/...``,
  ``adapters/...``, ``conformance/...``, ``tests/...``, ``benchmarks/...``)
  exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".lua", ".sh"}
TOP_LEVEL = ("memory_core", "adapters", "conformance", "tests", "benchmarks")

# A Markdown file name, optionally with a relative folder in front; not the
# tail of a longer word or path (the look-behind): a folder/name pair is one hit.
_MARKDOWN = re.compile(r"(?<![\w/.\-])((?:\.\.?/)*[\w][\w.\-/]*\.md)\b")
# A path from a top-level folder with at least one more component.
_ROOTED = re.compile(rf"(?<![\w/.\-])((?:{'|'.join(TOP_LEVEL)})/[\w.\-/]*\w)")


def _tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / name for name in listed.split("\0") if name and Path(name).suffix in TEXT_SUFFIXES]


def _exists_from(root: Path, source: Path, reference: str) -> bool:
    """Whether ``reference`` names a file or folder from ``source``'s folder,
    one of its parents (within ``root``) or ``root``."""
    folders = [source.parent, *(p for p in source.parent.parents if p.is_relative_to(root))]
    for folder in folders:
        target = (folder / reference).resolve()
        if target.is_relative_to(root) and target.exists():
            return True
    return False


def dangling_references(root: Path, files: list[Path]) -> list[str]:
    """``"<file>: <reference>"`` for every reference in ``files`` that names
    nothing under ``root``, sorted.

    A bare Markdown name (no folder) may also be any Markdown file of the
    repository: reports name their output files (``results.md``) that way.
    """
    markdown_names = {p.name for p in root.rglob("*.md") if ".venv" not in p.parts}
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        name = path.relative_to(root).as_posix()
        for ref in _MARKDOWN.findall(text):
            if not (_exists_from(root, path, ref) or ("/" not in ref and ref in markdown_names)):
                found.append(f"{name}: {ref}")
        found += [f"{name}: {ref}" for ref in _ROOTED.findall(text) if not _exists_from(root, path, ref)]
    return sorted(set(found))


def test_every_cited_markdown_file_and_rooted_path_exists() -> None:
    files = _tracked_text_files()
    assert len(files) > 50  # the scan really saw the repository
    assert dangling_references(ROOT, files) == []


def test_the_scan_catches_a_dangling_reference(tmp_path: Path) -> None:
    """The scan itself can fail: planted references to missing files show up,
    existing ones do not."""
    (tmp_path / "README.md").write_text("# top\n")
    (tmp_path / "memory_core").mkdir()
    source = tmp_path / "memory_core" / "thing.py"
    # Spelled apart, so this file cites none of them itself.
    missing, up, here, gone = (
        "PLAN" + ".md",
        "../" + "README.md",
        "memory_core/" + "thing.py",
        "memory_core/" + "gone.py",
    )
    source.write_text(f'"""See {missing}, {up}, README.md, {here} and {gone}."""\n')
    assert dangling_references(tmp_path, [source]) == [
        f"{here}: {missing}",
        f"{here}: {gone}",
    ]


# An inline Markdown link's target: ``[text](target)``, not an image or a URL.
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of ``markdown`` (lowercase,
    punctuation other than ``-`` and ``_`` dropped, spaces to ``-``), outside
    fenced code."""
    anchors, fenced = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-"))
    return anchors


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """``"<file>: <target>"`` for every relative link in the Markdown
    ``files`` whose file (from the linking file's own folder, as a renderer
    reads it) or heading anchor does not exist, sorted."""
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for target in _LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            name, _, anchor = target.partition("#")
            linked = (path.parent / name).resolve() if name else path
            ok = linked.is_relative_to(root) and linked.exists()
            if ok and anchor and linked.suffix == ".md":
                ok = anchor in _anchors(linked.read_text(encoding="utf-8"))
            if not ok:
                found.append(f"{path.relative_to(root).as_posix()}: {target}")
    return sorted(set(found))


def test_the_guides_links_resolve_from_where_they_are() -> None:
    """README.md and docs/ (the user guide, the operator guide, the design
    notes) link to each other and into the packages: every link names an
    existing file from the linking file's folder (a guide in docs/ says
    ``../adapters/...``) and an existing heading."""
    guides = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert {p.name for p in guides} >= {"README.md", "operators.md", "design.md"}
    assert broken_links(ROOT, guides) == []


def test_the_link_check_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Top\n\n## Agent frameworks\n")
    # Spelled apart, so this file's own text links nowhere and cites no file.
    name = "guide" + ".md"
    guide = tmp_path / "docs" / name
    good, unprefixed, bad_anchor = ("../README.md#agent-" + "frameworks", "README" + ".md", "../README.md#gone")
    guide.write_text(f"[a]({good}) [b]({unprefixed}) [c]({bad_anchor}) [d](https://example.com/x.md)\n")
    assert broken_links(tmp_path, [guide]) == [f"docs/{name}: {bad_anchor}", f"docs/{name}: {unprefixed}"]
