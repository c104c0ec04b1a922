# clipped_sgd has no paper-specific rules: all data are synthetic and generated inside the experiments.
