"""The Python snippet of the README's "Clients" section, run verbatim against a real toold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

from harness import REPO, Toold


def readme_snippet(lang: str) -> str:
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    section = text.split("\n## Clients\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```" + lang + r"\n(.*?)```", section, re.S)
    if not m:
        raise AssertionError(f"no {lang} snippet in the README's Clients section")
    return m.group(1)


class ReadmeTest(unittest.TestCase):
    def test_python_snippet(self):
        code = readme_snippet("python")
        self.assertLessEqual(len(code.strip().splitlines()), 15)
        d = Toold(mode="auto")
        self.addCleanup(d.stop)
        with open(os.path.join(d.workspace, "README.md"), "w") as f:
            f.write("".join(f"readme line {i}\n" for i in range(1, 11)))
        script = os.path.join(d.dir, "snippet.py")
        with open(script, "w") as f:
            f.write(code)
        env = dict(os.environ, TOOLD_SOCKET=d.socket, PYTHONPATH=os.path.join(REPO, "clients", "python"))
        env.pop("TOOLD_TOKEN", None)
        out = subprocess.run(
            [sys.executable, script], cwd=d.dir, env=env, input="y\n", capture_output=True, text=True, timeout=120
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"\d+ tools;")
        self.assertIn("readme line 5", out.stdout)
        self.assertNotIn("readme line 6", out.stdout)  # limit "5" was coerced and applied
        self.assertIn("? [y/n]", out.stdout)  # the approval callback asked
        self.assertIn("exit 0", out.stdout)
        self.assertIn("README.md", out.stdout.split("exit 0", 1)[1])  # ls ran in the workspace


if __name__ == "__main__":
    unittest.main()
