"""The demo's training: scikit-learn's digits data set, numpy models and a data-parallel SGD loop."""
