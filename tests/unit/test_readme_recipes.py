"""The client recipes docs/clients.md gives are the ones the contract pages run: a code
block there that names a page's file must be that file's code, verbatim, so a recipe
cannot drift from what the browser suite tests."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: where the client recipes are
RECIPES = REPO / "docs" / "clients.md"
#: blocks introduced by "as the tested page uses it (`<file>`)" (and their test marker)
RECIPE = re.compile(
    r"as the tested page uses it \(`([^`]+)`\):\n\n<!-- test: excerpt -->\n```js\n(.*?)\n```",
    re.DOTALL,
)


def test_every_recipe_block_is_its_page_file_verbatim() -> None:
    recipes = RECIPE.findall(RECIPES.read_text(encoding="utf-8"))
    assert len(recipes) >= 2, "docs/clients.md gives the assistant-ui recipes"
    for name, block in recipes:
        source = (REPO / name).read_text(encoding="utf-8")
        assert block.strip() and block.strip() in source, (
            f"the recipe for {name} differs from the file: copy the file's code"
        )
        # the whole file from its first import, not a fragment of it
        assert source[source.index("import ") :].strip() == block.strip(), name
