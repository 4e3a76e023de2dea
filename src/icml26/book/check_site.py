"""Open every page of the built book in headless Chromium and report what a reader would see broken.

``python -m icml26 check-site`` (``make check-site`` builds first) fails on:

- a JavaScript error on a page (console error or uncaught exception), except the known
  duplicate ``THEBE_JS_URL`` declaration that sphinx-thebe emits on every page;
- a math element that MathJax left unrendered, or rendered as an error;
- an image that does not load, or a link to a file or an anchor that does not exist;
- any request that is not for a local file: the book is read offline;
- a code block whose lines run past its box (it would scroll sideways), counted with
  every folded cell opened, and a table wider than the text column that does not
  scroll inside a box of its own.

It also measures each page as a reader sees it at 1280 px wide (:class:`PageLayout`):
its height, the share of that height taken by visible code input (folded cells do not
count), and the number of overflowing code blocks. ``python -m icml26 check-site``
prints the measurements as a table (``--layout-json`` writes them as data).

The browser is the system's ``chromium`` (Debian: ``apt-get install chromium``), driven by
playwright; playwright's own browser download is never used. :func:`external_assets` is
the same offline rule checked statically on the HTML, without a browser.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ALLOWED_JS_ERRORS = ("Identifier 'THEBE_JS_URL' has already been declared",)
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
_ASSET_ATTRS = {
    "script": "src",
    "link": "href",
    "img": "src",
    "iframe": "src",
    "source": "src",
    "video": "src",
    "audio": "src",
    "embed": "src",
}


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.assets: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        attr = _ASSET_ATTRS.get(tag)
        if attr and a.get(attr):
            self.assets.append((tag, a[attr]))


def _pages(html_dir: Path) -> list[Path]:
    skip = {"_static", "_sources", "_images", "_sphinx_design_static", "_panels_static"}
    return sorted(p for p in html_dir.rglob("*.html") if not skip & set(p.relative_to(html_dir).parts))


def external_assets(html_dir: str | Path) -> list[str]:
    """Scripts, stylesheets, images and frames the pages would load from the network.

    Returns ``"<page>: <tag> <url>"`` for every ``src``/``href`` of such an element that
    starts with ``http:``, ``https:`` or ``//``; empty when the book is self-contained.
    """
    html_dir = Path(html_dir)
    out = []
    for page in _pages(html_dir):
        scan = _Scan()
        scan.feed(page.read_text(encoding="utf-8", errors="replace"))
        for tag, url in scan.assets:
            if url.strip().lower().startswith(("http:", "https:", "//")):
                out.append(f"{page.relative_to(html_dir)}: {tag} {url}")
    return out


@dataclass
class PageLayout:
    """One page as a reader sees it at 1280 px wide.

    ``height`` is the page's height in CSS pixels, ``code_share`` the share of it taken by
    code input a reader sees without opening a fold, ``code_blocks`` the number of code
    input blocks (folded ones included) and ``overflowing`` the number of code blocks whose
    lines run past their box, counted with every fold open.
    """

    page: str
    height: int
    code_share: float
    code_blocks: int
    folded: int
    overflowing: int
    wide_tables: int = 0

    def row(self) -> str:
        return (
            f"{self.page:<52} {self.height:>7} {100 * self.code_share:>6.1f}% {self.code_blocks:>6} {self.folded:>6} "
            f"{self.overflowing:>6} {self.wide_tables:>6}"
        )


LAYOUT_HEADER = f"{'page':<52} {'height':>7} {'code':>7} {'blocks':>6} {'folded':>6} {'overfl':>6} {'tables':>6}"


@dataclass
class SiteReport:
    """What the browser saw: counts, per-page layout, and one line per problem."""

    pages: int = 0
    math: int = 0
    links: int = 0
    images: int = 0
    external_links: int = 0
    problems: list[str] = field(default_factory=list)
    layout: list[PageLayout] = field(default_factory=list)

    def layout_table(self) -> str:
        """The per-page measurements, one line each (height in px, visible code share, code blocks, folded, overflowing, wide tables)."""
        return "\n".join([LAYOUT_HEADER] + [p.row() for p in self.layout])

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        head = (
            f"check-site: {self.pages} page(s), {self.math} math element(s), {self.images} image(s), "
            f"{self.links} local link(s) checked ({self.external_links} links to the web not followed)"
        )
        if self.ok:
            return head + ": no problem found"
        return head + f": {len(self.problems)} problem(s)\n  " + "\n  ".join(self.problems)


_REFRESH = re.compile(r"<meta[^>]+http-equiv=[\"']refresh[\"'][^>]+content=[\"'][^\"']*url=([^\"'>]+)", re.I)
_IDS_CACHE: dict[Path, set[str]] = {}


def _ids(page: Path) -> set[str]:
    if page not in _IDS_CACHE:
        scan = _Scan()
        scan.feed(page.read_text(encoding="utf-8", errors="replace"))
        _IDS_CACHE[page] = scan.ids
    return _IDS_CACHE[page]


_PAGE_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const math = [...document.querySelectorAll('.math')];
  const raw = math.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.trim().slice(0, 60));
  const merror = [...document.querySelectorAll('mjx-merror')].map(e => e.textContent.trim().slice(0, 60));
  const broken = [];
  for (const img of document.images) {
    img.loading = 'eager';
    try { await img.decode(); } catch (e) { broken.push(img.getAttribute('src')); }
  }
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  return {math: math.length, raw, merror, images: document.images.length, broken, links};
}"""

# The page's layout: height and visible code input with folds as they are, then every fold
# opened to find the code blocks (cell inputs and literal blocks; not printed output) whose lines run past their box.
_LAYOUT_JS = """() => {
  const root = document.querySelector('main') || document.body;
  const height = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
  const inputs = [...root.querySelectorAll('.cell_input')];
  const shown = inputs.filter(e => e.getClientRects().length > 0 && !e.closest('details:not([open])'));
  const code = shown.reduce((s, e) => s + e.getBoundingClientRect().height, 0);
  const folded = inputs.length - shown.length;
  for (const d of root.querySelectorAll('details')) { d.open = true; }
  const over = [];
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.getClientRects().length === 0 || pre.closest('.cell_output')) continue;  // code, not what it printed
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const lines = pre.textContent.split('\\n');
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
      over.push(longest.trim().slice(0, 80));
    }
  }
  const article = root.querySelector('article') || root;
  const width = article.clientWidth;
  const wide = [];
  for (const t of article.querySelectorAll('table')) {
    if (t.getClientRects().length === 0 || t.scrollWidth <= width + 1) continue;
    let e = t, boxed = false;
    while (e && e !== article) {
      const ox = getComputedStyle(e).overflowX;
      if ((ox === 'auto' || ox === 'scroll') && e.clientWidth <= width + 1) { boxed = true; break; }
      e = e.parentElement;
    }
    if (!boxed) wide.push((t.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60));
  }
  return {height, code, inputs: inputs.length, folded, over, wide};
}"""


def check_site(html_dir: str | Path, *, timeout_s: float = 30.0, screenshots: str | Path | None = None) -> SiteReport:
    """Open every page under ``html_dir`` in headless Chromium; see the module's docstring.

    With ``screenshots``, save what the reader sees at the top of each page (1280x900)
    as ``<screenshots>/<page path with / as __>.png``.
    """
    html_dir = Path(html_dir).resolve()
    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser_path is None:
        raise RuntimeError("no chromium on the PATH; install the system browser (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    report = SiteReport(problems=[f"loads from the network: {a}" for a in external_assets(html_dir)])
    _IDS_CACHE.clear()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=browser_path, args=["--disable-gpu", "--no-first-run", "--disable-background-networking"]
        )
        try:
            for page_path in _pages(html_dir):
                rel = page_path.relative_to(html_dir)
                report.pages += 1
                redirect = _REFRESH.search(page_path.read_text(encoding="utf-8", errors="replace"))
                if redirect:  # a redirect page (the book's index.html): its target must exist
                    target = (page_path.parent / redirect.group(1)).resolve().as_uri()
                    problem = _check_link(target, page_path)
                    report.links += 1
                    if problem:
                        report.problems.append(f"{rel}: redirects to {redirect.group(1)}: {problem}")
                    continue
                errors: list[str] = []
                remote: list[str] = []
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.on("request", lambda r, remote=remote: None if r.url.startswith(LOCAL_SCHEMES) else remote.append(r.url))
                try:
                    page.goto(page_path.as_uri(), wait_until="load", timeout=timeout_s * 1000)
                    seen = page.evaluate(_PAGE_JS)
                    if screenshots is not None:
                        Path(screenshots).mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(Path(screenshots) / (str(rel.with_suffix("")).replace("/", "__") + ".png")))
                    shape = page.evaluate(_LAYOUT_JS)
                except Exception as exc:  # a page that does not load or hangs
                    report.problems.append(f"{rel}: did not load: {str(exc).splitlines()[0]}")
                    page.close()
                    continue
                page.close()
                for e in errors:
                    if not any(a in e for a in ALLOWED_JS_ERRORS):
                        report.problems.append(f"{rel}: JavaScript error: {e.splitlines()[0][:200]}")
                for url in dict.fromkeys(remote):
                    report.problems.append(f"{rel}: requested from the network: {url}")
                report.math += seen["math"]
                for t in seen["raw"]:
                    report.problems.append(f"{rel}: math left unrendered: {t!r}")
                for t in seen["merror"]:
                    report.problems.append(f"{rel}: math rendered as an error: {t!r}")
                report.images += seen["images"]
                for src in seen["broken"]:
                    report.problems.append(f"{rel}: broken image: {src}")
                height = max(int(shape["height"]), 1)
                report.layout.append(
                    PageLayout(
                        page=str(rel),
                        height=height,
                        code_share=float(shape["code"]) / height,
                        code_blocks=int(shape["inputs"]),
                        folded=int(shape["folded"]),
                        overflowing=len(shape["over"]),
                        wide_tables=len(shape["wide"]),
                    )
                )
                for line in shape["over"]:
                    report.problems.append(f"{rel}: a code line runs past its box: {line!r}")
                for t in shape["wide"]:
                    report.problems.append(f"{rel}: a table runs past the text column (it does not scroll in its own box): {t!r}")
                for href in dict.fromkeys(seen["links"]):
                    problem = _check_link(href, page_path)
                    if problem == "external":
                        report.external_links += 1
                    elif problem is not None:
                        report.links += 1
                        if problem:
                            report.problems.append(f"{rel}: broken link {href}: {problem}")
        finally:
            browser.close()
    return report


def _check_link(href: str, page: Path) -> str | None:
    """``None`` for a link not checked, ``""`` for a good local link, ``"external"``, or what is wrong."""
    parts = urlsplit(href)
    if parts.scheme in ("http", "https"):
        return "external"
    if parts.scheme != "file":
        return None  # mailto:, javascript:, ...
    target = Path(unquote(parts.path))
    if target.is_dir():
        target = target / "index.html"
    if not target.exists():
        return "no such file"
    if parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
        return f"no anchor #{parts.fragment} in {target.name}"
    return ""
