"""The repository's documentation holds together: no relative link of any Markdown file of the repository is dead
(the file, and the heading an anchor names), and no file speaks of the circumstances the project was built in
instead of the project (issue 49: a GPU is a machine the user has, not one its builders were loaned)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
# [text](target) and [text](target "title"), and reference definitions: [label]: target
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def repository_files(*patterns: str) -> list[Path]:
    """Tracked files and new ones not ignored (what the next commit can hold), matching ``patterns``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *patterns],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    return sorted({REPO / name for name in listed if name and (REPO / name).is_file()})


def prose(markdown: str) -> str:
    """The text of a Markdown file without its code blocks and code spans (a link inside code is no link)."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8")))}


def dead_links(path: Path) -> list[str]:
    text = prose(path.read_text(encoding="utf-8"))
    dead = []
    for target in INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):       # http:, https:, mailto:, ...
            continue
        file_part, _, anchor = unquote(target).partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            dead.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            dead.append(f"{target} (no heading #{anchor} in {linked.name})")
    return dead


def test_the_link_checker_sees_a_dead_file_a_dead_anchor_and_skips_code(tmp_path):
    (tmp_path / "page.md").write_text("# A page\n\n## Running on a cluster\n")
    doc = tmp_path / "doc.md"
    doc.write_text("[ok](page.md) [ok](page.md#running-on-a-cluster) [web](https://example.org/x) [self](#doc)\n"
                   "[gone](missing.md) [bad anchor](page.md#nowhere) `[code](nothing.md)`\n\n"
                   "```\n[fenced](nothing.md)\n```\n\n# Doc\n\n[ref]: missing/dir/\n")
    assert dead_links(doc) == ["missing.md (no such file)", "page.md#nowhere (no heading #nowhere in page.md)",
                               "missing/dir/ (no such file)"]


def test_no_relative_link_of_any_markdown_file_is_dead():
    pages = repository_files("*.md")
    assert REPO / "README.md" in pages and REPO / "docs" / "cluster.md" in pages
    dead = {str(page.relative_to(REPO)): links for page in pages if (links := dead_links(page))}
    assert not dead, dead


def test_the_readme_links_every_documentation_page():
    readme = prose((REPO / "README.md").read_text(encoding="utf-8"))
    linked = {(REPO / target.partition("#")[0]).resolve() for target in INLINE_LINK.findall(readme)}
    pages = repository_files("docs/*.md")
    assert pages and not set(pages) - linked, sorted(str(p.relative_to(REPO)) for p in set(pages) - linked)


# What the project's files must not say: how its builders reached a GPU (a machine loaned to them, the tool that
# loaned it, the time it was theirs), rather than what the project does on a GPU machine. Built from parts so that
# this file does not match itself.
BUILDERS_CIRCUMSTANCES = re.compile("|".join((r"\b" + "le" + r"nt\b", "device" + r"[ -]tool", "give" + "_back",
                                              r"\blea" + r"se\b", "KIN" + r"DS\.md")), re.IGNORECASE)


def test_no_file_speaks_of_how_its_builders_reached_a_gpu():
    found = []
    for path in repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):       # binary files: images, archives
            continue
        found += [f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}"
                  for number, line in enumerate(text.splitlines(), 1) if BUILDERS_CIRCUMSTANCES.search(line)]
    assert not found, "\n".join(found)
