"""Hosted sessions: people at the table beside LLM and rule seats, in the browser.

``mesa-dilemmas host SCENARIO`` (:mod:`.cli`) serves an experimenter console and one page per
person (:mod:`.app`); a session (:mod:`.session`) plays each group's model in its own thread
and writes its records as a run directory.  Imports nothing at package level.
"""
