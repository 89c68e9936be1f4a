"""Analyses of finished runs and of strategies (behavioural feature vectors, PCA, diversity)."""
