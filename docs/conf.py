# Sphinx configuration of Tessera's documentation site (`make docs` -> build/docs/html).
# Sphinx with MyST Markdown, as the codes this field's users know document themselves
# (Parthenon, AMReX, Castro, WarpX on Sphinx): the pages stay Markdown, readable in the
# repository too. tools/gen_docs.py copies this folder to build/docs/src, adds the pages it
# generates from the code's own declarations (parameters, units, problems) and runs
# sphinx-build with warnings as errors.
project = "Tessera"
author = "the Tessera developers"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_theme_options = {"description": "block-structured AMR multiphysics for astrophysics",
                      "fixed_sidebar": True}
exclude_patterns = ["_build"]
master_doc = "index"
