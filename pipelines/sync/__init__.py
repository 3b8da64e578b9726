"""What a later run needs to carry changes safely: the three-way rule (`three_way`: the base
haul wrote decides what is carried, kept or in conflict; `three_way_items` for lists of
items), text references rewritten for the target (`references`), `haul plan`'s preview of a
sync (`preview`), and how each loaded kind is taken back by `haul undo` (`removals`).
"""
