"""Descriptions of paper_public_goods.py (the published layout: one variable per class)."""

description_COLLECTIVE_1 = """
Cooperate first; then cooperate while at least half of the others cooperated last round.
"""

description_COLLECTIVE_2 = """Cooperate while my own cooperation keeps pace with the rounds."""

description_COLLECTIVE_3 = """Defect, except that round three goes wrong."""

description_EXPLOITATIVE_1 = """Ride on full cooperation; defect at the end."""

description_EXPLOITATIVE_2 = """Defect when behind the best opponent."""
