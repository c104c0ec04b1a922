# adpo has no paper-specific rules: all preference data are generated from a seed inside the experiments.
