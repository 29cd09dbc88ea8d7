"""Hierarchical graphs of a dump (msProbe ``graph_visualize``): build, match, judge, export.

Framework-agnostic: everything here reads msProbe's ``construct.json`` / ``dump.json`` /
``stack.json`` and never imports torch or mindspore.
"""
