"""Descriptions of current_public_goods.py."""

description_COLLECTIVE_1 = """Cooperate while at least half the others did."""
description_PROSOCIAL_2 = """Cooperate unless cooperation fell."""
description_SELFISH_1 = """Defect unless I earned little."""
description_OPPORTUNISTIC_2 = """Cooperate on even rounds while behind on cooperation."""
