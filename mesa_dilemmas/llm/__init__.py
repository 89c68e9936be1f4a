"""LLM backends and the machinery around calls (concurrency, caching, replay, accounting).

Its place in the design: an LLM policy is a ``mesa_dilemmas.agents.Policy`` with
``is_async = True`` whose ``adecide`` renders a prompt for the decision's kind,
calls a provider and parses the answer against the decision's spec.  The games
do not change when it arrives.
"""
