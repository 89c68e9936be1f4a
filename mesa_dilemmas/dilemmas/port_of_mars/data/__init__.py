"""Port of Mars game data (roles, costs, event deck, accomplishment cards) as shipped package data.

``rules.json`` is a transcription of the public Port of Mars implementation's card
and rule data (numbers and names; effect texts paraphrased); see its ``source``
entry.  This file only makes the directory a package so the JSON is installed.
"""
