"""Scenes: the recurring situations a kernel works in, so recall can prefer memory from the scene a turn is in.

Why a group: a scene is its own small model (docs/scenes.md) — the features of a turn and how alike two
feature sets are (``scene_features``), the store of scenes learned from turns or declared by plugins and of
which events happened in which scene (``store``), and the one thing recall needs to know of the active scene
(``scene_hint``), which keeps recall independent of how scenes are found.
"""
