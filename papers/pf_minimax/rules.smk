# pf_minimax needs no rules of its own: all problems are generated in the experiments (scikit-learn digits ships with the package).
