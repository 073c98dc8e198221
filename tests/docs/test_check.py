"""tests/docs/check.py on a small made-up repository: it passes a clean one and names each
kind of problem in a broken one."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

USAGE = 'const USAGE: &str = "\\\nUsage: solowg [-f] <interface-name>\n       solowg show [all]\n       solowg help\n";\n'


def repo(readme, docs=None):
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d, "src/cli"))
    os.makedirs(os.path.join(d, "docs"))
    os.makedirs(os.path.join(d, "bench"))
    open(os.path.join(d, "src/cli/mod.rs"), "w").write(USAGE)
    open(os.path.join(d, "bench/run"), "w").write("")
    open(os.path.join(d, "README.md"), "w").write(readme)
    for name, text in (docs or {}).items():
        open(os.path.join(d, "docs", name), "w").write(text)
    return d


def run(d):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = check.main(d)
    return rc, out.getvalue()


class CheckTest(unittest.TestCase):
    def test_clean(self):
        d = repo("# x\n\n## Limits\n\nSee [a](docs/a.md#usage) and [l](#limits).\n\n```sh\nbench/run --short\nsolowg show all\nsolowg wg0\n```\n",
                 {"a.md": "# A\n\n## Usage\n"})
        rc, out = run(d)
        self.assertEqual(rc, 0, out)

    def test_each_problem_is_named(self):
        d = repo("# x\n" + "line\n" * 300 + "[gone](docs/gone.md) [h](docs/a.md#nope) ![i](docs/img/x.png)\n"
                 "`bench/nothere --x`\n\n```sh\nsolowg frobnicate\nubus call solowg status\n```\n",
                 {"a.md": "# A\n"})
        rc, out = run(d)
        self.assertEqual(rc, 1)
        for want in ("more than 250", "docs/gone.md: no such file", "docs/a.md#nope: no such heading",
                     "docs/img/x.png: no such file", "bench/nothere, which does not exist",
                     "`solowg frobnicate`"):
            self.assertIn(want, out)
        self.assertNotIn("solowg status", out)


if __name__ == "__main__":
    unittest.main()
