# robust_sim: synthetic data only, generated inside each experiment from the seed; no paper-specific rules.
