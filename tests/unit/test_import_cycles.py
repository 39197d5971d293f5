"""No import circles in gw: a module never imports (directly or not) one that imports it.

A circle makes the order modules load in matter, and a module half-built when another
reads it fails at import with a confusing error. The graph is grimp's (what import-linter
checks the layers with), imports inside functions and under TYPE_CHECKING included.
"""

from __future__ import annotations

import grimp


def test_no_module_is_part_of_an_import_circle() -> None:
    graph = grimp.build_graph("gw")
    circles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                chain = graph.find_shortest_chain(importer=imported, imported=module) or ()
                circles.append(" -> ".join((module, *chain)))
    assert circles == []
